"""Spans read from the Collector exporter's `otel_traces` table: one JSON text per span, built by
ClickHouse, decoded into `SpanRecord`s in bulk. The one span reader of the ClickHouse source and
the deriver.

Why JSON built by the engine: returning the columns as they are (maps, nested arrays) made the
client build a Python dict per map and the source copy and convert every value again, about a
second for a 10,000-span trace. Here ClickHouse writes each span as a JSON object whose keys are
`SpanRecord`'s fields, and one `msgspec` call turns a batch of them into the records (events and
links included), with the cyclic garbage collector paused meanwhile.

The JSON is written with `concat` and `toJSONString` of single values, so it does not depend on the
server's JSON output settings (64-bit integers quoted or not, named tuples as objects or arrays),
and `toValidUTF8` replaces invalid UTF-8 sequences with U+FFFD: `clickhouse_connect` would return
a string that is not UTF-8 as hex, which no JSON decoder can read. Any client whose `query` gives
the text column as `str` or `bytes` works (`clickhouse_connect`, `ChdbClient`).

Attribute values stay the exporter's strings (its maps are `Map(String, String)`; pcommon
`AsString` wrote ints in decimal, booleans as `true`/`false`, arrays and maps as JSON); readers get
typed values with `janux.tracing.records.attr_*`. Span kind and status are normalized here, both
spellings (`Error` / `STATUS_CODE_ERROR`, `Internal` / `SPAN_KIND_INTERNAL`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from janux.tracing.analysis.agentmap.build import gc_paused
from janux.tracing.otlp.enums import KIND_BY_NAME, STATUS_BY_NAME
from janux.tracing.records import SpanRecord

_INT = "int"
_TEXT = "text"
_RAW = "raw"
"""How a value is written into the JSON: an integer in decimal (`toString`, never quoted), a
JSON string or map (`toJSONString`), or JSON that an inner expression already wrote."""


def _json_object(fields: Sequence[tuple[str, str, str]]) -> str:
    """SQL writing one JSON object from (key, how, expression) triples."""
    parts: list[str] = []
    for index, (key, how, expression) in enumerate(fields):
        parts.append(("'{" if index == 0 else "',") + f'"{key}":' + "'")
        parts.append(
            f"toString({expression})" if how == _INT else f"toJSONString({expression})" if how == _TEXT
            else expression
        )  # fmt: skip
    parts.append("'}'")
    return f"concat({', '.join(parts)})"


def _json_array(arrays: Sequence[str], lambda_args: str, fields: Sequence[tuple[str, str, str]]) -> str:
    """SQL writing a JSON array with one object per element of the parallel `arrays` (a Nested
    column's subcolumns), the lambda's arguments named `lambda_args`."""
    each = f"arrayMap(({lambda_args}) -> {_json_object(fields)}, {', '.join(arrays)})"
    return f"concat('[', arrayStringConcat({each}, ','), ']')"


_EVENTS = _json_array(
    ("Events.Timestamp", "Events.Name", "Events.Attributes"), "t, n, a",
    (("timestamp_ns", _INT, "toUnixTimestamp64Nano(t)"), ("name", _TEXT, "n"), ("attributes", _TEXT, "a")),
)  # fmt: skip
_LINKS = _json_array(
    ("Links.TraceId", "Links.SpanId", "Links.TraceState", "Links.Attributes"), "t, s, ts, a",
    (("trace_id", _TEXT, "t"), ("span_id", _TEXT, "s"), ("trace_state", _TEXT, "ts"),
     ("attributes", _TEXT, "a")),
)  # fmt: skip

_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("trace_id", _TEXT, "TraceId"), ("span_id", _TEXT, "SpanId"), ("parent_span_id", _TEXT, "ParentSpanId"),
    ("name", _TEXT, "SpanName"), ("start_ns", _INT, "toUnixTimestamp64Nano(Timestamp)"),
    ("duration_ns", _INT, "toInt64(Duration)"), ("kind", _TEXT, "SpanKind"),
    ("status_code", _TEXT, "StatusCode"),
    ("status_message", _TEXT, "StatusMessage"), ("service_name", _TEXT, "ServiceName"),
    ("attributes", _TEXT, "SpanAttributes"), ("resource_attributes", _TEXT, "ResourceAttributes"),
    ("scope_name", _TEXT, "ScopeName"), ("scope_version", _TEXT, "ScopeVersion"),
    ("trace_state", _TEXT, "TraceState"), ("events", _RAW, _EVENTS), ("links", _RAW, _LINKS),
)  # fmt: skip
"""Every `SpanRecord` field and the `otel_traces` column it comes from."""

NOT_ANALYSED = frozenset({"resource_attributes", "scope_name", "scope_version", "trace_state"})
"""What the analysis layer never reads: the deriver leaves it out (the record keeps its default).
The parity tests of the derived tables would fail if the analysis started reading one of them.
(Links are read: span links place agent runs, and the deriver writes the link index from them.)"""

SPAN_JSON = f"toValidUTF8({_json_object(_FIELDS)})"
"""SQL: one span of `otel_traces` as JSON text (`decode_spans` reads it)."""
ANALYSED_SPAN_JSON = f"toValidUTF8({_json_object([f for f in _FIELDS if f[0] not in NOT_ANALYSED])})"
"""`SPAN_JSON` without `NOT_ANALYSED`: the deriver's read."""

_DECODER = msgspec.json.Decoder(list[SpanRecord])
_CHUNK = 20_000
"""Spans decoded per call: a batch's JSON is joined into one text, so this bounds that copy."""


def decode_spans(texts: Iterable[str | bytes]) -> list[SpanRecord]:
    """The records of `SPAN_JSON` / `ANALYSED_SPAN_JSON` texts, in order. Raises ValueError naming
    the span and field when a text is not such a span."""
    found: list[SpanRecord] = []
    chunk: list[str] = []
    with gc_paused():  # tens of thousands of dicts, no cycles: collections would double the time
        for text in texts:
            chunk.append(text if isinstance(text, str) else text.decode())
            if len(chunk) == _CHUNK:
                found += _decode_chunk(chunk, len(found))
                chunk = []
        if chunk:
            found += _decode_chunk(chunk, len(found))
    return found


def _decode_chunk(chunk: list[str], first: int) -> list[SpanRecord]:
    try:
        spans = _DECODER.decode("[" + ",".join(chunk) + "]")
    except msgspec.DecodeError as error:  # `$[3].start_ns` is the 4th span of this chunk
        raise ValueError(f"span read from ClickHouse (from span {first}): {error}") from None
    for span in spans:
        span.kind = _normalized(span.kind, "SPAN_KIND_", KIND_BY_NAME, _KINDS)
        span.status_code = _normalized(span.status_code, "STATUS_CODE_", STATUS_BY_NAME, _STATUSES)
    return spans


def span_texts(rows: Iterable[Sequence[Any]], column: int = 0) -> Iterable[str | bytes]:
    """The JSON texts in `column` of query result rows."""
    return (row[column] for row in rows)


_KINDS: dict[str, str] = {}
_STATUSES: dict[str, str] = {}
_KNOWN_SPELLINGS = 64
"""Most spellings each cache keeps (a hostile table cannot grow them)."""


def _normalized(value: str, prefix: str, names: dict[str, str], seen: dict[str, str]) -> str:
    """Span kind or status code as the records spell it (`SPAN_KIND_CLIENT` and `Client` ->
    `Client`, `STATUS_CODE_ERROR` -> `Error`); text naming none of them as written."""
    found = seen.get(value)
    if found is None:
        found = names.get(value.upper().removeprefix(prefix), value)
        if len(seen) < _KNOWN_SPELLINGS:
            seen[value] = found
    return found
