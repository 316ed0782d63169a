"""One trace's spans from ClickHouse (chdb): with the Collector exporter's TraceId -> time lookup
table the read is bounded to the trace's time range (so it prunes partitions and uses the time key
of `otel_traces`), and it returns every span of every trace, also of traces the lookup table does
not know."""

from __future__ import annotations

import pytest

from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from tests.support.clickhouse_rows import TRACE_ID_TS_DDL, RecordingClient, insert_statement
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import all_spans


@pytest.fixture
def client(exporter_client: ChdbClient) -> ChdbClient:
    """The exporter's table only: these tests read `otel_traces` as the Collector writes it."""
    return exporter_client


def _ids(spans: list[SpanRecord]) -> list[tuple[str, str, int, int]]:
    """What identifies each span read (attribute values come back as the exporter's strings)."""
    return [(s.trace_id, s.span_id, s.start_ns, s.duration_ns) for s in spans]


def _by_trace(spans: list[SpanRecord]) -> dict[str, list[SpanRecord]]:
    found: dict[str, list[SpanRecord]] = {}
    for span in spans:
        found.setdefault(span.trace_id, []).append(span)
    return found


def test_a_trace_read_is_bounded_by_the_lookup_table_and_complete(client: ChdbClient) -> None:
    spans = [*demo_traces().spans, *all_spans()]
    traces = _by_trace(spans)
    before = sorted(traces)[: len(traces) // 3]  # stored before the lookup table existed
    client.command(insert_statement([s for s in spans if s.trace_id in before]))
    for statement in TRACE_ID_TS_DDL:
        client.command(statement)
    client.command(insert_statement([s for s in spans if s.trace_id not in before]))
    recording = RecordingClient(client)
    source, memory = ClickHouseSource(recording), MemoryTraceSource(spans)
    for trace_id in traces:
        recording.queries.clear()
        assert _ids(source.get_trace(trace_id)) == _ids(memory.get_trace(trace_id)), trace_id
        span_read = recording.queries[-1]
        bounded = "Timestamp >= fromUnixTimestamp64Nano" in span_read
        assert bounded == (trace_id not in before), trace_id  # unknown to the lookup: read unbounded
    assert source.get_trace("0" * 32) == []


def test_without_the_lookup_table_the_read_is_unbounded(client: ChdbClient) -> None:
    spans = list(demo_traces().spans)
    client.command(insert_statement(spans))
    recording = RecordingClient(client)
    source, memory = ClickHouseSource(recording), MemoryTraceSource(spans)
    trace_id = spans[0].trace_id
    assert _ids(source.get_trace(trace_id)) == _ids(memory.get_trace(trace_id))
    assert "Timestamp >=" not in recording.queries[-1]
