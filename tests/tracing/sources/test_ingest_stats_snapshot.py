"""`ingest_stats` reads every counter from one snapshot, even when a batch commits in between."""

from __future__ import annotations

from pathlib import Path

from janux.tracing.sources.store import open_store, queries
from janux.tracing.sources.store.schema import connect, database_path
from tests.support.otlp_build import record


def test_a_commit_between_the_counters_and_the_trace_count_is_not_seen_half(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        store.write([record("1" * 16, trace_id="1" * 32)])
        reader = connect(database_path(tmp_path), writer=False)
        committed = []

        def commit_in_between(statement: str) -> None:
            # The moment the reader moves on to count traces, another batch (a new trace) commits.
            if "trace_summary" in statement and not committed:
                committed.append(store.write([record("2" * 16, trace_id="2" * 32)]))

        reader.set_trace_callback(commit_in_between)
        stats = queries.ingest_stats(reader)
        reader.set_trace_callback(None)
        assert committed, "the write did not happen between the two statements"
        assert (stats.spans, stats.traces) == (1, 1)  # one snapshot: before the second batch
        assert (queries.ingest_stats(reader).spans, queries.ingest_stats(reader).traces) == (2, 2)
        reader.close()
