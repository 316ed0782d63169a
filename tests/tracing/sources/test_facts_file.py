"""The embedded store keeps each trace's agent-map facts on disk: a new process computes none again."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from janux.tracing.analysis.agentmap.build import map_facts
from janux.tracing.analysis.agentmap.from_spans import links_of_spans
from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import facts_file, open_store
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import all_spans, cases


def _spans() -> list[SpanRecord]:
    return list(demo_traces().spans) + all_spans()


def _by_trace(spans: list[SpanRecord]) -> dict[str, list[SpanRecord]]:
    traces: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        traces[span.trace_id].append(span)
    return traces


def _first_map_of_a_new_process(data_dir: Path) -> tuple[object, int]:
    with open_store(data_dir) as store:
        agent_map = store.agent_map(TraceFilter())
        return agent_map, store._map_cache.computed


def test_a_new_process_reads_the_kept_facts_instead_of_every_trace(tmp_path: Path) -> None:
    spans = _spans()
    with open_store(tmp_path) as store:
        store.write(spans)
    first, computed = _first_map_of_a_new_process(tmp_path)
    assert computed == len(_by_trace(spans)) - sum(1 for case in cases() if not case.truth["agents"])
    assert (tmp_path / facts_file.FILE_NAME).exists()
    again, computed_again = _first_map_of_a_new_process(tmp_path)
    assert computed_again == 0, "every trace's facts came from the file"
    assert again == first


def test_a_trace_that_grew_is_computed_again(tmp_path: Path) -> None:
    spans = list(demo_traces().spans)
    traces = _by_trace(spans)
    grown = next(iter(traces))
    held_back = traces[grown][-1]
    with open_store(tmp_path) as store:
        store.write([s for s in spans if s is not held_back])
    _first_map_of_a_new_process(tmp_path)
    with open_store(tmp_path) as store:
        store.write([held_back])
    with open_store(tmp_path) as store:
        grown_map = store.agent_map(TraceFilter())
        assert store._map_cache.computed == 1
    with open_store(tmp_path / "fresh") as fresh:
        fresh.write(spans)
        assert fresh.agent_map(TraceFilter()) == grown_map


def test_facts_of_other_rules_are_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spans = list(demo_traces().spans)
    with open_store(tmp_path) as store:
        store.write(spans)
    _first_map_of_a_new_process(tmp_path)
    monkeypatch.setattr(facts_file, "rules_fingerprint", lambda: "other-rules")
    _, computed = _first_map_of_a_new_process(tmp_path)
    assert computed == len(_by_trace(spans))


def test_a_damaged_facts_file_costs_only_a_recompute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spans = list(demo_traces().spans)
    with open_store(tmp_path) as store:
        store.write(spans)
    expected, _ = _first_map_of_a_new_process(tmp_path)
    for name in (facts_file.FILE_NAME, facts_file.FILE_NAME + "-wal", facts_file.FILE_NAME + "-shm"):
        path = tmp_path / name
        if path.exists():
            path.write_bytes(b"not a database at all" * 100)
    agent_map, computed = _first_map_of_a_new_process(tmp_path)
    assert agent_map == expected
    assert computed == len(_by_trace(spans))
    assert "facts file" in caplog.text


def test_encoded_facts_decode_to_the_same_facts() -> None:
    for trace_id, spans in _by_trace(_spans()).items():
        facts = map_facts(links_of_spans(trace_id, spans))
        assert facts_file.decode(facts_file.encode(facts)) == facts, trace_id


def test_a_new_process_asked_the_same_map_reads_it_whole(tmp_path: Path) -> None:
    spans = _spans()
    with open_store(tmp_path) as store:
        store.write(spans)
    first, _ = _first_map_of_a_new_process(tmp_path)
    with open_store(tmp_path) as store:
        again = store.agent_map(TraceFilter())
        assert store._map_cache.computed == 0
        assert again == first
        # A map rebuilt from the file is made of the map's own classes, not plain tuples.
        assert type(again.edges[0].cost).__name__ == "Usage" and type(again.nodes[0]).__name__ == "AgentStats"
        # an inspected edge's newest traces come from the facts the other process kept
        edge = max(again.edges, key=lambda e: e.failed)
        refs = store.map_refs(TraceFilter(), edge.key)
        assert refs == MemoryTraceSource(spans).map_refs(TraceFilter(), edge.key) and refs.failures
        assert store._map_cache.computed == 0
    with open_store(tmp_path) as store:  # another range: not kept yet, built from the kept facts
        bucketed = store.agent_map(TraceFilter(), 60 * 10**9)
        assert store._map_cache.computed == 0 and bucketed.timeline


def test_a_kept_map_is_not_read_once_a_trace_grew(tmp_path: Path) -> None:
    spans = list(demo_traces().spans)
    traces = _by_trace(spans)
    grown = next(iter(traces))
    held_back = traces[grown][-1]
    with open_store(tmp_path) as store:
        store.write([s for s in spans if s is not held_back])
    before, _ = _first_map_of_a_new_process(tmp_path)
    with open_store(tmp_path) as store:
        store.write([held_back])
    after, computed = _first_map_of_a_new_process(tmp_path)
    assert computed == 1 and after != before
    with open_store(tmp_path / "fresh") as fresh:
        fresh.write(spans)
        assert fresh.agent_map(TraceFilter()) == after


def test_only_the_newest_maps_are_kept(tmp_path: Path) -> None:
    import sqlite3

    with open_store(tmp_path) as store:
        store.write(list(demo_traces().spans))
        for minutes in range(1, facts_file.MAPS_KEPT + 4):
            store.agent_map(TraceFilter(), minutes * 60 * 10**9)
    with sqlite3.connect(tmp_path / facts_file.FILE_NAME) as conn:
        assert conn.execute("SELECT count(*) FROM map_results").fetchone()[0] == facts_file.MAPS_KEPT
