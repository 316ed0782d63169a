"""OTLP/JSON (and its Tempo / Jaeger wrappers) into `SpanRecord`s, one span at a time.

Follows the OTLP/JSON encoding: lowerCamelCase keys (proto names accepted too), ids as hex
(base64 accepted, as Tempo and Jaeger write them), enums as integers or names, 64-bit integers as
strings or numbers. A span that fails is rejected with a message naming its field; its siblings
are kept.
"""

from __future__ import annotations

import json
from typing import Any

from janux.tracing.conventions import SERVICE_NAME
from janux.tracing.otlp.decode_limits import (
    RECEIVER_LIMITS,
    DecodeLimits,
    check_json,
    check_span_count,
    too_many,
)
from janux.tracing.otlp.enums import span_kind, status_code
from janux.tracing.otlp.errors import DecodeError, DecodeResult
from janux.tracing.otlp.ids import SPAN_ID_BYTES, TRACE_ID_BYTES, json_id
from janux.tracing.otlp.json_values import (
    json_list,
    json_object,
    json_str,
    json_time,
    key_values,
    pick,
)
from janux.tracing.otlp.wrappers import resource_span_lists
from janux.tracing.records import EventRecord, LinkRecord, SpanRecord


def decode_json_bytes(
    body: bytes | bytearray | str, limits: DecodeLimits = RECEIVER_LIMITS, *, checked: bool = False
) -> DecodeResult:
    """Parse an OTLP/JSON payload and decode it; raises `DecodeError` if it is not usable JSON and
    `LimitExceeded` if it is over `limits` (`checked`: the caller already ran `check_json`)."""
    if not checked:
        check_json(body, limits)
    try:
        doc = json.loads(body)
    except RecursionError:
        raise DecodeError("", "invalid JSON: nested too deeply") from None
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError
        raise DecodeError("", f"invalid JSON: {err}") from None
    return decode_json_document(doc, limits)


def decode_json_document(doc: object, limits: DecodeLimits = RECEIVER_LIMITS) -> DecodeResult:
    """Decode an already-parsed OTLP/JSON document (any accepted wrapper) into spans."""
    found = resource_span_lists(doc)
    spans = sum(_count_spans(item) for _, resource_spans in found for item in resource_spans)
    check_span_count(spans, limits)
    result = DecodeResult()
    for path, resource_spans in found:
        for i, item in enumerate(resource_spans):
            _resource_spans(item, f"{path}[{i}]", result, limits)
    return result


def _count_spans(resource: object) -> int:
    """Best-effort number of spans inside a ResourceSpans (at least 1: a broken one counts as one)."""
    if not isinstance(resource, dict):
        return 1
    total = 0
    for scope in _scope_list(resource):
        spans = scope.get("spans") if isinstance(scope, dict) else None
        total += len(spans) if isinstance(spans, list) else 0
    return max(total, 1)


def _scope_list(resource: dict[str, Any]) -> list[Any]:
    value = pick(resource, "scopeSpans", "scope_spans")
    if value is None:
        # OTLP before 0.15 (older Tempo and Jaeger answers) called it instrumentationLibrarySpans.
        value = pick(resource, "instrumentationLibrarySpans", "instrumentation_library_spans")
    return value if isinstance(value, list) else []


def _resource_spans(item: object, path: str, result: DecodeResult, limits: DecodeLimits) -> None:
    """Decode one ResourceSpans into `result`; a broken resource rejects all of its spans."""
    try:
        resource = json_object(item, "")
        resource_obj = json_object(resource.get("resource"), "resource")
        attrs = _attributes(resource_obj.get("attributes"), "resource.", limits)
        scopes = pick(resource, "scopeSpans", "scope_spans")
        key = "scopeSpans"
        if scopes is None:
            scopes = pick(resource, "instrumentationLibrarySpans", "instrumentation_library_spans")
            key = "instrumentationLibrarySpans"
        scopes = json_list(scopes, key)
    except DecodeError as err:
        result.reject(str(err.under(path)), _count_spans(item))
        return
    service = attrs.get(SERVICE_NAME)
    service_name = service if isinstance(service, str) else ("" if service is None else str(service))
    for j, scope in enumerate(scopes):
        _scope_spans(scope, f"{path}.{key}[{j}]", attrs, service_name, result, limits)


def _attributes(value: object, prefix: str, limits: DecodeLimits) -> dict[str, Any]:
    """The `attributes` list at `prefix`, within the attribute-count and nesting limits."""
    items = json_list(value, f"{prefix}attributes")
    if len(items) > limits.max_attributes:
        error = too_many(len(items), limits.max_attributes, "attributes", "max_attributes")
        raise error.under(prefix.rstrip("."))
    return key_values(items, path=f"{prefix}attributes", max_depth=limits.max_depth)


def _scope_spans(
    item: object, path: str, attrs: dict[str, Any], service: str, result: DecodeResult, limits: DecodeLimits
) -> None:
    """Decode one ScopeSpans into `result`."""
    try:
        scope_spans = json_object(item, "")
        scope_obj = scope_spans.get("scope")
        scope_key = "scope"
        if scope_obj is None:
            scope_obj = pick(scope_spans, "instrumentationLibrary", "instrumentation_library")
            scope_key = "instrumentationLibrary"
        scope = json_object(scope_obj, scope_key)
        scope_name = json_str(scope.get("name"), f"{scope_key}.name")
        scope_version = json_str(scope.get("version"), f"{scope_key}.version")
        spans = json_list(scope_spans.get("spans"), "spans")
    except DecodeError as err:
        result.reject(str(err.under(path)), _count_spans({"scopeSpans": [item]}))
        return
    append = result.spans.append
    for k, span in enumerate(spans):
        try:
            record = _span(span, attrs, service, scope_name, scope_version, limits)
        except DecodeError as err:
            result.reject(str(err.under(f"{path}.spans[{k}]")))
            continue
        append(record)


def _span(
    obj: object,
    resource: dict[str, Any],
    service: str,
    scope_name: str,
    scope_version: str,
    limits: DecodeLimits,
) -> SpanRecord:
    """One OTLP/JSON Span as a record; raises `DecodeError` with a path relative to the span."""
    if not isinstance(obj, dict):
        raise DecodeError("", f"expected a Span object, got {type(obj).__name__}")
    start = json_time(pick(obj, "startTimeUnixNano", "start_time_unix_nano"), "startTimeUnixNano")
    end = json_time(pick(obj, "endTimeUnixNano", "end_time_unix_nano"), "endTimeUnixNano")
    status = json_object(obj.get("status"), "status")
    return SpanRecord(
        trace_id=json_id(pick(obj, "traceId", "trace_id"), TRACE_ID_BYTES, "traceId"),
        span_id=json_id(pick(obj, "spanId", "span_id"), SPAN_ID_BYTES, "spanId"),
        parent_span_id=json_id(
            pick(obj, "parentSpanId", "parent_span_id"), SPAN_ID_BYTES, "parentSpanId", optional=True
        ),
        name=json_str(obj.get("name"), "name"),
        start_ns=start,
        duration_ns=end - start,
        kind=span_kind(obj.get("kind"), "kind"),
        status_code=status_code(status.get("code"), "status.code"),
        status_message=json_str(status.get("message"), "status.message"),
        service_name=service,
        attributes=_attributes(obj.get("attributes"), "", limits),
        resource_attributes=resource,
        scope_name=scope_name,
        scope_version=scope_version,
        trace_state=json_str(pick(obj, "traceState", "trace_state"), "traceState"),
        events=_events(obj.get("events"), limits),
        links=_links(obj.get("links"), limits),
    )


def _events(value: object, limits: DecodeLimits) -> list[EventRecord]:
    events: list[EventRecord] = []
    items = json_list(value, "events")
    if len(items) > limits.max_events:
        raise too_many(len(items), limits.max_events, "events", "max_events")
    for i, item in enumerate(items):
        path = f"events[{i}]"
        event = json_object(item, path)
        events.append(
            EventRecord(
                timestamp_ns=json_time(pick(event, "timeUnixNano", "time_unix_nano"), f"{path}.timeUnixNano"),
                name=json_str(event.get("name"), f"{path}.name"),
                attributes=_attributes(event.get("attributes"), f"{path}.", limits),
            )
        )
    return events


def _links(value: object, limits: DecodeLimits) -> list[LinkRecord]:
    links: list[LinkRecord] = []
    items = json_list(value, "links")
    if len(items) > limits.max_links:
        raise too_many(len(items), limits.max_links, "links", "max_links")
    for i, item in enumerate(items):
        path = f"links[{i}]"
        link = json_object(item, path)
        links.append(
            LinkRecord(
                trace_id=json_id(pick(link, "traceId", "trace_id"), TRACE_ID_BYTES, f"{path}.traceId"),
                span_id=json_id(pick(link, "spanId", "span_id"), SPAN_ID_BYTES, f"{path}.spanId"),
                trace_state=json_str(pick(link, "traceState", "trace_state"), f"{path}.traceState"),
                attributes=_attributes(link.get("attributes"), f"{path}.", limits),
            )
        )
    return links
