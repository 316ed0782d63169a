"""The Collector ClickHouse exporter's `otel_traces` table, and rows shaped the way it writes them.

The DDL is written from the exporter's documented traces table (internal/sqltemplates): the same
columns, types, codecs, skip indexes, partitioning and ordering. Rows follow the exporter's
conversion: attribute values through pcommon `AsString` (ints in decimal, booleans `true`/`false`,
arrays and maps as JSON), ids as hex ('' for no parent), `Duration` in ns, both the current
(`Error`, `Internal`) and the older (`STATUS_CODE_ERROR`, `SPAN_KIND_INTERNAL`) enum spellings.
"""

from __future__ import annotations

import json
from typing import Any

from janux.tracing.records import SpanRecord

EXPORTER_DDL = """
CREATE TABLE IF NOT EXISTS otel_traces (
    Timestamp DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ParentSpanId String CODEC(ZSTD(1)),
    TraceState String CODEC(ZSTD(1)),
    SpanName LowCardinality(String) CODEC(ZSTD(1)),
    SpanKind LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    ResourceAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    ScopeName String CODEC(ZSTD(1)),
    ScopeVersion String CODEC(ZSTD(1)),
    SpanAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    Duration UInt64 CODEC(T64, ZSTD(1)),
    StatusCode LowCardinality(String) CODEC(ZSTD(1)),
    StatusMessage String CODEC(ZSTD(1)),
    Events Nested (
        Timestamp DateTime64(9),
        Name LowCardinality(String),
        Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    Links Nested (
        TraceId String,
        SpanId String,
        TraceState String,
        Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_res_attr_key mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_res_attr_value mapValues(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_key mapKeys(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_value mapValues(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_duration Duration TYPE minmax GRANULARITY 1
) ENGINE = MergeTree()
PARTITION BY toDate(Timestamp)
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp), Timestamp)
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1
"""

TRACE_ID_TS_DDL = (
    """
CREATE TABLE IF NOT EXISTS otel_traces_trace_id_ts (
    TraceId String CODEC(ZSTD(1)),
    Start DateTime CODEC(Delta(4), ZSTD(1)),
    End DateTime CODEC(Delta(4), ZSTD(1)),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.01) GRANULARITY 1
) ENGINE = MergeTree()
PARTITION BY toDate(Start)
ORDER BY (TraceId, Start)
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1
""",
    """
CREATE MATERIALIZED VIEW IF NOT EXISTS otel_traces_trace_id_ts_mv TO otel_traces_trace_id_ts AS
SELECT TraceId, min(Timestamp) AS Start, max(Timestamp) AS End FROM otel_traces
WHERE TraceId != '' GROUP BY TraceId
""",
)
"""The exporter's TraceId -> time lookup table and the view that fills it on every insert (its
documented schema, `Start`/`End` in whole seconds as its DateTime columns keep them)."""

_OLD_KIND = {"Internal": "SPAN_KIND_INTERNAL", "Client": "SPAN_KIND_CLIENT", "Server": "SPAN_KIND_SERVER",
             "Producer": "SPAN_KIND_PRODUCER", "Consumer": "SPAN_KIND_CONSUMER",
             "Unspecified": "SPAN_KIND_UNSPECIFIED"}  # fmt: skip
_OLD_STATUS = {"Unset": "STATUS_CODE_UNSET", "Ok": "STATUS_CODE_OK", "Error": "STATUS_CODE_ERROR"}


def as_string(value: Any) -> str:
    """pcommon `Value.AsString` of a decoded attribute value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"))
    if value is None:
        return ""
    return str(value)


def _text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _map(attributes: dict[str, Any]) -> str:
    return "map(" + ", ".join(f"{_text(k)}, {_text(as_string(v))}" for k, v in attributes.items()) + ")"


def _time(ns: int) -> str:
    return f"fromUnixTimestamp64Nano(toInt64({ns}))"


def exporter_row(span: SpanRecord, old_spelling: bool) -> str:
    """One VALUES tuple as the exporter inserts it."""
    kind = _OLD_KIND.get(span.kind, span.kind) if old_spelling else span.kind
    status = _OLD_STATUS.get(span.status_code, span.status_code) if old_spelling else span.status_code
    events = span.events
    links = span.links
    fields = [
        _time(span.start_ns), _text(span.trace_id), _text(span.span_id), _text(span.parent_span_id),
        _text(span.trace_state), _text(span.name), _text(kind), _text(span.service_name),
        _map(span.resource_attributes), _text(span.scope_name), _text(span.scope_version),
        _map(span.attributes),
        str(max(0, span.duration_ns)), _text(status), _text(span.status_message),
        "[" + ", ".join(_time(e.timestamp_ns) for e in events) + "]",
        "[" + ", ".join(_text(e.name) for e in events) + "]",
        "[" + ", ".join(_map(e.attributes) for e in events) + "]",
        "[" + ", ".join(_text(k.trace_id) for k in links) + "]",
        "[" + ", ".join(_text(k.span_id) for k in links) + "]",
        "[" + ", ".join(_text(k.trace_state) for k in links) + "]",
        "[" + ", ".join(_map(k.attributes) for k in links) + "]",
    ]  # fmt: skip
    return "(" + ", ".join(fields) + ")"


def insert_statement(spans: list[SpanRecord]) -> str:
    """An INSERT of `spans`, alternating the current and the older enum spellings."""
    rows = ",\n".join(exporter_row(span, old_spelling=i % 2 == 1) for i, span in enumerate(spans))
    return (
        "INSERT INTO otel_traces (Timestamp, TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, "
        "ServiceName, ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, Duration, StatusCode, "
        "StatusMessage, Events.Timestamp, Events.Name, Events.Attributes, Links.TraceId, Links.SpanId, "
        f"Links.TraceState, Links.Attributes) VALUES\n{rows}"
    )


class RecordingClient:
    """A ClickHouse client that remembers every query it ran (to see which tables a source read)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.queries: list[str] = []
        self.parameters: list[dict[str, Any]] = []
        """The parameters of each query, in the same order."""

    def query(self, query: str, parameters: dict[str, Any] | None = None) -> Any:
        """Run `query` on the wrapped client, remembering its text and parameters."""
        self.queries.append(query)
        self.parameters.append(dict(parameters or {}))
        return self.client.query(query, parameters=parameters)
