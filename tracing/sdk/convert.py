"""SDK spans to `SpanRecord`s, so in-memory exports and decoded OTLP read the same way.

This is the one module under `tracing/` (besides exporter setup) that touches the OpenTelemetry
SDK: it reads `ReadableSpan`s as produced by `InMemorySpanExporter` or a span processor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from janux.tracing.conventions import SERVICE_NAME
from janux.tracing.records import (
    KIND_CLIENT,
    KIND_CONSUMER,
    KIND_INTERNAL,
    KIND_PRODUCER,
    KIND_SERVER,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    EventRecord,
    LinkRecord,
    SpanRecord,
)

_KINDS = {
    SpanKind.INTERNAL: KIND_INTERNAL,
    SpanKind.SERVER: KIND_SERVER,
    SpanKind.CLIENT: KIND_CLIENT,
    SpanKind.PRODUCER: KIND_PRODUCER,
    SpanKind.CONSUMER: KIND_CONSUMER,
}
_STATUSES = {StatusCode.UNSET: STATUS_UNSET, StatusCode.OK: STATUS_OK, StatusCode.ERROR: STATUS_ERROR}


def _value(value: Any) -> Any:
    """SDK attribute values keep their type; sequences (tuples) become lists like decoded OTLP arrays."""
    if isinstance(value, (tuple, list)):
        return [_value(item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    if not attributes:
        return {}
    return {key: _value(value) for key, value in attributes.items()}


def span_record_from_readable(span: ReadableSpan, *, service_name: str | None = None) -> SpanRecord:
    """One `SpanRecord` from an SDK span; `service_name` overrides the resource's `service.name`."""
    context = span.context
    if context is None:
        raise ValueError(f"span {span.name!r}: field 'context' is missing")
    resource = _attributes(span.resource.attributes) if span.resource is not None else {}
    start = span.start_time or 0
    end = span.end_time if span.end_time is not None else start
    scope = span.instrumentation_scope
    return SpanRecord(
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        parent_span_id=format(span.parent.span_id, "016x") if span.parent is not None else "",
        name=span.name,
        start_ns=start,
        duration_ns=end - start,
        kind=_KINDS.get(span.kind, KIND_INTERNAL),
        status_code=_STATUSES.get(span.status.status_code, STATUS_UNSET),
        status_message=span.status.description or "",
        service_name=service_name if service_name is not None else str(resource.get(SERVICE_NAME, "")),
        attributes=_attributes(span.attributes),
        resource_attributes=resource,
        scope_name=scope.name if scope is not None else "",
        scope_version=(scope.version or "") if scope is not None else "",
        trace_state=context.trace_state.to_header() if context.trace_state else "",
        events=[
            EventRecord(
                timestamp_ns=event.timestamp, name=event.name, attributes=_attributes(event.attributes)
            )
            for event in span.events
        ],
        links=[
            LinkRecord(
                trace_id=format(link.context.trace_id, "032x"),
                span_id=format(link.context.span_id, "016x"),
                trace_state=link.context.trace_state.to_header() if link.context.trace_state else "",
                attributes=_attributes(link.attributes),
            )
            for link in span.links
        ],
    )


def span_records_from_readable(spans: Iterable[ReadableSpan]) -> list[SpanRecord]:
    """`span_record_from_readable` over many spans, in the given order."""
    return [span_record_from_readable(span) for span in spans]
