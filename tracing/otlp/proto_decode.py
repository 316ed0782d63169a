"""OTLP protobuf (`ExportTraceServiceRequest` / `TracesData`) into `SpanRecord`s.

The fast path of the receiver: it walks the parsed message's fields directly (no MessageToDict),
shares one resource-attribute dict among the spans of a resource, and builds an error path
(`resource_spans[0].scope_spans[1].spans[3].trace_id`) only when a span is refused.
"""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.message import DecodeError as ProtoDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from janux.tracing.conventions import SERVICE_NAME
from janux.tracing.otlp.decode_limits import (
    RECEIVER_LIMITS,
    DecodeLimits,
    check_proto,
    check_span_count,
    too_many,
)
from janux.tracing.otlp.enums import KIND_BY_NUMBER, STATUS_BY_NUMBER
from janux.tracing.otlp.errors import DecodeError, DecodeResult
from janux.tracing.otlp.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, bytes_id
from janux.tracing.otlp.json_values import INT64_MAX, check_time
from janux.tracing.records import EventRecord, LinkRecord, SpanRecord

_SCALARS = frozenset({"string_value", "int_value", "double_value", "bool_value"})
_ZERO_TRACE = bytes(TRACE_ID_BYTES)
_ZERO_SPAN = bytes(SPAN_ID_BYTES)
_N_KINDS = len(KIND_BY_NUMBER)
_N_STATUSES = len(STATUS_BY_NUMBER)


def decode_proto_request(
    body: bytes | bytearray, limits: DecodeLimits = RECEIVER_LIMITS, *, checked: bool = False
) -> DecodeResult:
    """Parse OTLP protobuf bytes and decode them; raises `DecodeError` if they do not parse and
    `LimitExceeded` if they are over `limits` (`checked`: the caller already ran `check_proto`)."""
    if not checked:
        check_proto(body, limits)
    try:
        message = ExportTraceServiceRequest.FromString(body)
    except (ProtoDecodeError, RecursionError, ValueError) as err:
        raise DecodeError("", f"invalid protobuf ExportTraceServiceRequest: {err}") from None
    return decode_proto_message(message, limits)


def decode_proto_message(message: Any, limits: DecodeLimits = RECEIVER_LIMITS) -> DecodeResult:
    """Decode a parsed `ExportTraceServiceRequest` or `TracesData` (both have `resource_spans`)."""
    spans = sum(len(s.spans) for r in message.resource_spans for s in r.scope_spans)
    check_span_count(spans, limits)
    result = DecodeResult()
    for i, resource_spans in enumerate(message.resource_spans):
        try:
            resource = _attribute_list(resource_spans.resource.attributes, limits)
        except DecodeError as err:
            count = sum(len(s.spans) for s in resource_spans.scope_spans) or 1
            result.reject(str(err.under(f"resource_spans[{i}].resource")), count)
            continue
        service = resource.get(SERVICE_NAME)
        service_name = service if isinstance(service, str) else ("" if service is None else str(service))
        for j, scope_spans in enumerate(resource_spans.scope_spans):
            _scope_spans(scope_spans, i, j, resource, service_name, result, limits)
    return result


def _scope_spans(
    scope_spans: ScopeSpans,
    i: int,
    j: int,
    resource: dict[str, Any],
    service: str,
    result: DecodeResult,
    limits: DecodeLimits,
) -> None:
    scope = scope_spans.scope
    scope_name = scope.name
    scope_version = scope.version
    append = result.spans.append
    for k, span in enumerate(scope_spans.spans):
        try:
            append(_span(span, resource, service, scope_name, scope_version, limits))
        except DecodeError as err:
            result.reject(str(err.under(f"resource_spans[{i}].scope_spans[{j}].spans[{k}]")))


def _span(
    span: Span,
    resource: dict[str, Any],
    service: str,
    scope_name: str,
    scope_version: str,
    limits: DecodeLimits,
) -> SpanRecord:
    """One protobuf Span as a record; raises `DecodeError` with a path relative to the span."""
    trace_id = span.trace_id
    span_id = span.span_id
    parent = span.parent_span_id
    # Inline checks for the common, valid case; the helpers produce the precise error.
    if len(trace_id) != TRACE_ID_BYTES or trace_id == _ZERO_TRACE:
        bytes_id(trace_id, TRACE_ID_BYTES, "trace_id")
    if len(span_id) != SPAN_ID_BYTES or span_id == _ZERO_SPAN:
        bytes_id(span_id, SPAN_ID_BYTES, "span_id")
    parent_hex = ""
    if parent and parent != _ZERO_SPAN:
        parent_hex = (
            parent.hex()
            if len(parent) == SPAN_ID_BYTES
            else bytes_id(parent, SPAN_ID_BYTES, "parent_span_id")
        )
    kind = span.kind
    if not 0 <= kind < _N_KINDS:
        raise DecodeError("kind", f"unknown enum value {kind}")
    status = span.status
    code = status.code
    if not 0 <= code < _N_STATUSES:
        raise DecodeError("status.code", f"unknown enum value {code}")
    start = span.start_time_unix_nano
    end = span.end_time_unix_nano
    if start > INT64_MAX or end > INT64_MAX:
        check_time(start, "start_time_unix_nano")
        check_time(end, "end_time_unix_nano")
    attrs = _attribute_list(span.attributes, limits)
    events = span.events
    links = span.links
    if len(events) > limits.max_events:
        raise too_many(len(events), limits.max_events, "events", "max_events")
    if len(links) > limits.max_links:
        raise too_many(len(links), limits.max_links, "links", "max_links")
    # Positional (SpanRecord field order): the keyword form costs a third of the call.
    return SpanRecord(
        trace_id.hex(), span_id.hex(), parent_hex, span.name, start, end - start, KIND_BY_NUMBER[kind],
        STATUS_BY_NUMBER[code], status.message, service, attrs, resource, scope_name, scope_version,
        span.trace_state, _events(events, limits) if events else [], _links(links, limits) if links else [],
    )  # fmt: skip


def _attribute_list(kvs: Any, limits: DecodeLimits) -> dict[str, Any]:
    """`attributes` of a span, event, link or resource, within the attribute-count limit; errors
    carry a path starting with `attributes`."""
    if len(kvs) > limits.max_attributes:
        raise too_many(len(kvs), limits.max_attributes, "attributes", "max_attributes")
    try:
        return attributes(kvs, 0, limits.max_depth)
    except DecodeError as err:
        raise err.under("attributes") from None


def _events(span_events: Any, limits: DecodeLimits) -> list[EventRecord]:
    events = []
    for i, event in enumerate(span_events):
        try:
            attrs = _attribute_list(event.attributes, limits)
        except DecodeError as err:
            raise err.under(f"events[{i}]") from None
        time_ns = event.time_unix_nano
        if time_ns > INT64_MAX:
            check_time(time_ns, f"events[{i}].time_unix_nano")
        events.append(EventRecord(time_ns, event.name, attrs))
    return events


def _links(span_links: Any, limits: DecodeLimits) -> list[LinkRecord]:
    links = []
    for i, link in enumerate(span_links):
        try:
            attrs = _attribute_list(link.attributes, limits)
        except DecodeError as err:
            raise err.under(f"links[{i}]") from None
        links.append(
            LinkRecord(
                trace_id=bytes_id(link.trace_id, TRACE_ID_BYTES, f"links[{i}].trace_id"),
                span_id=bytes_id(link.span_id, SPAN_ID_BYTES, f"links[{i}].span_id"),
                trace_state=link.trace_state,
                attributes=attrs,
            )
        )
    return links


def attributes(kvs: Any, depth: int = 0, max_depth: int = RECEIVER_LIMITS.max_depth) -> dict[str, Any]:
    """A repeated KeyValue as a dict; errors carry a path relative to the list (`[2].value`).
    Values nested deeper than `max_depth` arrays or kvlists are refused."""
    out: dict[str, Any] = {}
    kv: KeyValue
    for kv in kvs:
        value = kv.value
        # Most values are non-empty strings: one field read, no WhichOneof (a oneof has one field set).
        text = value.string_value
        if text:
            out[kv.key] = text
            continue
        which = value.WhichOneof("value")
        if which in _SCALARS:
            out[kv.key] = getattr(value, which)
        elif which is None:
            out[kv.key] = None
        else:
            out[kv.key] = _complex_value(value, depth, max_depth, kvs, kv)
    return out


def _complex_value(value: AnyValue, depth: int, max_depth: int, kvs: Any, kv: KeyValue) -> Any:
    """An array, kvlist or bytes AnyValue; on error, the path names the entry inside `kvs`."""
    try:
        return any_value(value, depth, max_depth)
    except DecodeError as err:
        index = next(n for n, item in enumerate(kvs) if item is kv or item == kv)
        raise err.under(f"[{index}].value") from None


def any_value(value: AnyValue, depth: int = 0, max_depth: int = RECEIVER_LIMITS.max_depth) -> Any:
    """One protobuf AnyValue: scalars as is, arrays as lists, kvlists as dicts, bytes as base64."""
    if depth > max_depth:
        raise DecodeError("", f"value nested too deeply: more than {max_depth} levels (max_depth)")
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which in _SCALARS:
        return getattr(value, which)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    if which == "array_value":
        out = []
        for n, item in enumerate(value.array_value.values):
            text = item.string_value  # arrays are mostly of strings: skip the dispatch
            if text:
                out.append(text)
                continue
            try:
                out.append(any_value(item, depth + 1, max_depth))
            except DecodeError as err:
                raise err.under(f"array_value.values[{n}]") from None
        return out
    try:
        return attributes(value.kvlist_value.values, depth + 1, max_depth)
    except DecodeError as err:
        raise err.under("kvlist_value.values") from None
