"""Spans read from `otel_traces` (`clickhouse.span_json`: one JSON text per span, built by the
engine, decoded in bulk) come back exactly as the Collector's exporter wrote them, through every
client: chdb, chdb with the JSON output settings a server may have, and `clickhouse_connect`'s own
decoding of the Native format (the production client). The source and the deriver read with it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from janux.tracing.records import EventRecord, LinkRecord, SpanRecord
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.clickhouse.span_json import (
    ANALYSED_SPAN_JSON,
    NOT_ANALYSED,
    SPAN_JSON,
    decode_spans,
    span_texts,
)
from janux.tracing.sources.protocol import TraceFilter
from tests.support.clickhouse_native import NativeClient
from tests.support.clickhouse_rows import EXPORTER_DDL, as_string, insert_statement
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import all_spans

TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENTS = ("chdb", "chdb, server JSON settings", "clickhouse_connect (Native)")

VALUES: dict[str, Any] = {
    "text": "plain", "empty": "", "unicode": "é ✓ 😀 \u2028", "quotes": 'say "hi" \\ it\'s',
    "control": "line\nnext\ttab\x01\x7f", "json_text": '{"a":[1,2]}', "int": 42, "negative": -7,
    "int64": 2**62 + 1, "float": 1.5, "tiny": 1e-300, "true": True, "false": False,
    "ints": [1, 2, 3], "strings": ["a", "b \"c\""], "mixed": [1, "x", 2.5, True],
    "kvlist": {"k": [1, {"n": None}]},
}  # fmt: skip
"""One attribute of every kind a span can carry (the exporter keeps each as pcommon `AsString`)."""


def _spans() -> list[SpanRecord]:
    """Two spans (the second written with the older enum spellings) using every field."""
    root = SpanRecord(
        trace_id=TRACE, span_id="b7ad6b7169203331", parent_span_id="", name="invoke_agent planner \u00e9",
        start_ns=1_700_000_000_123_456_789, duration_ns=987_654_321, kind="Server", status_code="Error",
        status_message='failed: "quota"\n', service_name="svc", attributes=dict(VALUES),
        resource_attributes={"service.name": "svc", "host.cpus": 8}, scope_name="janux", scope_version="1.2",
        trace_state="vendor=1",
        events=[EventRecord(1_700_000_000_200_000_001, "HANDOFF_START", dict(VALUES)),
                EventRecord(1_700_000_000_300_000_002, "no attributes")],
        links=[LinkRecord("1" * 32, "2" * 16, "k=v", {"weight": 0.5, "on": True}),
               LinkRecord("3" * 32, "4" * 16)],
    )  # fmt: skip
    child = SpanRecord(
        trace_id=TRACE, span_id="00f067aa0ba902b7", parent_span_id=root.span_id, name="chat m",
        start_ns=root.start_ns + 1, duration_ns=5, kind="Client", status_code="Ok", attributes={"n": 1},
    )  # fmt: skip
    return [root, child]


def _as_written(span: SpanRecord) -> SpanRecord:
    """`span` as the exporter stores it: every attribute value as its string."""

    def strings(attributes: dict[str, Any]) -> dict[str, Any]:
        return {key: as_string(value) for key, value in attributes.items()}

    return dataclasses.replace(
        span,
        attributes=strings(span.attributes),
        resource_attributes=strings(span.resource_attributes),
        events=[dataclasses.replace(e, attributes=strings(e.attributes)) for e in span.events],
        links=[dataclasses.replace(k, attributes=strings(k.attributes)) for k in span.links],
    )


@pytest.fixture
def chdb(exporter_client: ChdbClient) -> ChdbClient:
    """The exporter's table only: these tests read `otel_traces` as the Collector writes it."""
    return exporter_client


def _client(chdb: ChdbClient, kind: str) -> Any:
    if kind == "chdb, server JSON settings":  # a server's JSON output settings must not matter
        chdb.command("SET output_format_json_quote_64bit_integers = 1")
        chdb.command("SET output_format_json_named_tuples_as_objects = 0")
        chdb.command("SET output_format_json_quote_denormals = 1")
    return NativeClient(chdb) if kind.startswith("clickhouse_connect") else chdb


@pytest.mark.parametrize("kind", CLIENTS)
def test_every_field_and_value_kind_reads_back_as_the_exporter_wrote_it(chdb: ChdbClient, kind: str) -> None:
    spans = _spans()
    chdb.command(insert_statement(spans))
    read = ClickHouseSource(_client(chdb, kind)).get_trace(TRACE)
    assert read == [_as_written(span) for span in spans]
    assert read[0].attributes["int64"] == str(2**62 + 1) and read[0].attributes["true"] == "true"
    assert read[0].events[0].timestamp_ns == 1_700_000_000_200_000_001


@pytest.mark.parametrize("kind", CLIENTS)
def test_the_deriver_reads_what_the_source_reads_less_what_analysis_never_reads(
    chdb: ChdbClient, kind: str
) -> None:
    spans = _spans()
    chdb.command(insert_statement(spans))
    client = _client(chdb, kind)

    def read(span_json: str) -> list[SpanRecord]:
        rows = client.query(f"SELECT {span_json} FROM otel_traces ORDER BY Timestamp").result_rows
        return decode_spans(span_texts(rows))

    full, analysed = read(SPAN_JSON), read(ANALYSED_SPAN_JSON)
    empty = SpanRecord("", "", "", "", 0, 0)
    assert analysed == [
        dataclasses.replace(span, **{name: getattr(empty, name) for name in NOT_ANALYSED}) for span in full
    ]
    assert analysed[0].events == full[0].events and analysed[0].attributes == full[0].attributes


def test_text_that_is_not_utf8_reads_the_same_through_every_client(chdb: ChdbClient) -> None:
    """`clickhouse_connect` returns a string that is not UTF-8 as hex: before the spans were read as
    JSON made valid by the engine, such a value read `ff41` there and `\ufffdA` through chdb."""
    bad = "unhex('ff41')"
    chdb.command(
        "INSERT INTO otel_traces (Timestamp, TraceId, SpanId, SpanName, SpanAttributes, Events.Timestamp, "
        f"Events.Name, Events.Attributes) VALUES (now64(9), '{TRACE}', 'b7ad6b7169203331', "
        f"concat('n', {bad}), map('k', {bad}), [now64(9)], ['e'], [map({bad}, 'v')])"
    )
    for kind in ("chdb", "clickhouse_connect (Native)"):
        (span,) = ClickHouseSource(_client(chdb, kind)).get_trace(TRACE)
        assert span.attributes == {"k": "\ufffdA"}, kind
        assert span.name == "n\ufffdA" and span.events[0].attributes == {"\ufffdA": "v"}, kind


def test_a_text_that_is_not_a_span_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"from span 0.*\$\[0\]\.start_ns"):
        decode_spans(['{"trace_id": "a", "span_id": "b", "parent_span_id": "", "name": "n", '
                      '"start_ns": "soon", "duration_ns": 1}'])  # fmt: skip
    with pytest.raises(ValueError, match="span_id"):
        decode_spans([b'{"trace_id": "a"}'])
    assert decode_spans([]) == []


def test_demo_and_foreign_traces_read_and_derive_the_same_through_clickhouse_connect(tmp_path: Path) -> None:
    """The production client's rows (Native format decoded by `clickhouse_connect`) give the same
    spans, derived facts and pages as chdb's, for the demo set and every foreign fixture."""
    spans = [*demo_traces().spans, *all_spans()]
    ids = sorted({span.trace_id for span in spans})
    answers = []
    for kind in ("chdb", "clickhouse_connect (Native)"):
        chdb = ChdbClient(str(tmp_path / kind))
        try:
            chdb.command(EXPORTER_DDL)
            chdb.command(insert_statement(spans))
            schema.init(chdb)
            client = _client(chdb, kind)
            stats = derive_pending(client, quiet_s=0)
            source = ClickHouseSource(client)
            answers.append((
                (stats.traces, stats.spans), source.get_traces(ids), source.list_traces(TraceFilter(), 1_000),
                source.usage_by("agent", TraceFilter()), source.agent_map(TraceFilter()),
                source.failed_handoff_spans(TraceFilter()),
            ))  # fmt: skip
        finally:
            chdb.close()
    assert answers[0] == answers[1]
    assert answers[0][0] == (len(ids), len(spans))
