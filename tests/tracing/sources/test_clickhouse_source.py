"""The ClickHouse source on the real ClickHouse engine (chdb), with the exporter's DDL and rows.

The same spans go into the embedded store and into `otel_traces`; both sources must answer every
query the same way (attribute values are strings on the ClickHouse side, as the exporter writes).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.tracing.otlp.files import TraceFile
from janux.tracing.records import EventRecord, LinkRecord, SpanRecord
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import TraceStore, open_store
from tests.support.clickhouse_rows import EXPORTER_DDL, as_string, insert_statement
from tests.support.otlp_build import record
from tests.support.paths import FIXTURES
from tests.tracing.sources.test_store import janux_turn, other_runtime_turn


def _fixture_spans() -> list[SpanRecord]:
    spans: list[SpanRecord] = []
    for name in ("collector_file_exporter.jsonl", "tempo_v1_batches.json", "single_document.json"):
        with TraceFile(FIXTURES / name) as trace_file:
            for item in trace_file.records():
                assert item.result is not None
                spans.extend(item.result.spans)
    return spans


def _all_spans() -> list[SpanRecord]:
    linked = record("f" * 16, "", "linked", {"arr": ["a", 1], "flag": True}, trace_id="e" * 32, start=9_000,
                    events=[EventRecord(9_001, "ev", {"k": 2})])  # fmt: skip
    linked.links = [LinkRecord("d" * 32, "1" * 16, "s=1", {"why": "retry"})]
    spans = janux_turn() + other_runtime_turn() + _fixture_spans() + [linked]
    for i in range(3):
        spans += janux_turn(f"{i + 0xA0:032x}", start=20_000 + i * 1_000)
    return spans


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ClickHouseSource, TraceStore]]:
    spans = _all_spans()
    client = ChdbClient(str(tmp_path_factory.mktemp("chdb")))
    client.command(EXPORTER_DDL)
    client.command(insert_statement(spans))
    client.command(insert_statement(spans[:3]))  # an exporter retry: rows written twice
    store = open_store(tmp_path_factory.mktemp("store"))
    store.write(spans)
    yield ClickHouseSource(client), store
    store.close()
    client.close()


FILTERS = [
    TraceFilter(),
    TraceFilter(start_ns=2_000, end_ns=21_500),
    TraceFilter(service="other"),
    TraceFilter(service="checkout"),
    TraceFilter(root_agent="planner"),
    TraceFilter(conversation_id="conv-1"),
    TraceFilter(status="error"),
    TraceFilter(status="ok"),
    TraceFilter(has_failed_handoffs=True),
    TraceFilter(min_cost=0.2),
    TraceFilter(min_cost=0.001),
    TraceFilter(trace_id="0AF7"),
    TraceFilter(root_agent="planner", has_failed_handoffs=True, start_ns=1, min_cost=0.1),
]


@pytest.mark.parametrize("flt", FILTERS, ids=[str(i) for i in range(len(FILTERS))])
def test_list_and_count_match_the_embedded_store(
    sources: tuple[ClickHouseSource, TraceStore], flt: TraceFilter
) -> None:
    clickhouse, store = sources
    assert clickhouse.list_traces(flt, limit=100) == store.list_traces(flt, limit=100)
    assert clickhouse.count_traces(flt) == store.count_traces(flt)


def test_paging(sources: tuple[ClickHouseSource, TraceStore]) -> None:
    clickhouse, store = sources
    pages = [clickhouse.list_traces(TraceFilter(), limit=3, offset=o) for o in (0, 3, 6)]
    assert pages == [store.list_traces(TraceFilter(), limit=3, offset=o) for o in (0, 3, 6)]
    assert len({s.trace_id for page in pages for s in page}) == store.count_traces(TraceFilter()) == 7


def test_summary_semantics_on_exporter_rows(sources: tuple[ClickHouseSource, TraceStore]) -> None:
    clickhouse, _ = sources
    (janux,) = clickhouse.list_traces(TraceFilter(trace_id="5b8efff798038103d269b633813fc60c"))
    # janux_turn() and the Collector fixture share a trace id: 6 + 4 spans, two delegations.
    assert (janux.span_count, janux.attempts, janux.delegations, janux.failed_handoffs) == (10, 4, 2, 2)
    assert janux.bill_cost == 0.25 and janux.root_agent == "planner" and janux.error_spans == 6
    (other,) = clickhouse.list_traces(TraceFilter(service="other"))
    # It shares its id with single_document.json: chat usage 7 + 11, and the 1,000 the agent `sub`
    # reports on its own span: nothing below it carries usage, so that is its own (issue 29: usage
    # at the finest level that carries it, never two levels). Read whole (no Janux accounting): the
    # agent below the tool and the one nested in the root are the two delegations, as in every source.
    summary = (other.attempts, other.delegations, other.failed_handoffs, other.bill_input_tokens)
    assert summary == (2, 2, 1, 1018) and other.bill_cost is None


def test_get_trace_normalizes_both_spellings_and_keeps_string_values(
    sources: tuple[ClickHouseSource, TraceStore],
) -> None:
    clickhouse, store = sources
    for trace_id in ("5b8efff798038103d269b633813fc60c", "0af7651916cd43dd8448eb211c80319c", "e" * 32):
        from_ch = clickhouse.get_trace(trace_id.upper())
        from_store = store.get_trace(trace_id)
        assert [(s.span_id, s.kind, s.status_code, s.duration_ns) for s in from_ch] == [
            (s.span_id, s.kind, s.status_code, s.duration_ns) for s in from_store
        ]
        for a, b in zip(from_ch, from_store, strict=True):
            assert a.attributes == {k: as_string(v) for k, v in b.attributes.items()}
            assert [(e.timestamp_ns, e.name) for e in a.events] == [
                (e.timestamp_ns, e.name) for e in b.events
            ]
    (linked,) = clickhouse.get_trace("e" * 32)
    assert linked.links[0].span_id == "1" * 16 and linked.links[0].attributes == {"why": "retry"}
    assert linked.events[0].attributes == {"k": "2"} and linked.attributes["arr"] == '["a",1]'


def test_get_traces_counts_retried_rows_once(sources: tuple[ClickHouseSource, TraceStore]) -> None:
    clickhouse, store = sources
    ids = ["5b8efff798038103d269b633813fc60c", "f" * 32]
    got = clickhouse.get_traces(ids)
    assert len(got[ids[0]]) == len(store.get_trace(ids[0])) and got["f" * 32] == []


def test_failed_handoffs_match(sources: tuple[ClickHouseSource, TraceStore]) -> None:
    clickhouse, store = sources
    for flt in (TraceFilter(), TraceFilter(service="svc"), TraceFilter(service="other-runtime")):
        assert [(s.trace_id, s.span_id) for s in clickhouse.failed_handoff_spans(flt)] == [
            (s.trace_id, s.span_id) for s in store.failed_handoff_spans(flt)
        ]


def test_distinct_values_and_stats(sources: tuple[ClickHouseSource, TraceStore]) -> None:
    clickhouse, store = sources
    # ClickHouse offers the values of every root span (cheap); the store those of each trace's root.
    for what in ("service", "root_agent", "conversation"):
        offered = clickhouse.distinct_values(what)  # type: ignore[arg-type]
        assert set(store.distinct_values(what)) <= set(offered) and offered == sorted(offered)  # type: ignore[arg-type]
    assert clickhouse.distinct_values("service") == ["checkout", "other", "other-runtime", "pretty", "svc"]
    ch_stats, store_stats = clickhouse.ingest_stats(), store.ingest_stats()
    assert (ch_stats.spans, ch_stats.traces, ch_stats.duplicates) == (
        store_stats.spans,
        store_stats.traces,
        3,
    )


def test_rejects_odd_table_names(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="invalid table name"):
        ClickHouseSource(object(), table="otel_traces; DROP TABLE x")  # type: ignore[arg-type]


def test_embedded_store_keeps_the_exporters_logical_schema(tmp_path: Path) -> None:
    import re
    import sqlite3

    from janux.tracing.sources.store.schema import DB_FILE_NAME

    table = EXPORTER_DDL.split("(", 1)[1].split("INDEX", 1)[0]
    exporter_columns = re.findall(r"^\s{4}(\w+) ", table, flags=re.MULTILINE)
    open_store(tmp_path).close()
    with sqlite3.connect(tmp_path / DB_FILE_NAME) as conn:
        stored = [row[1] for row in conn.execute("PRAGMA table_info(otel_traces)")]
    # Same columns, same order; the store adds two derived ones its write path joins on.
    assert stored == [*exporter_columns, "Op", "HandoffStatus"]
    assert len(exporter_columns) == 17 and exporter_columns[0] == "Timestamp" and "Events" in exporter_columns
