"""SpanRecords to OTLP/JSON (one `TracesData` document), to feed the real decoders in tests."""

from __future__ import annotations

import json
from typing import Any

from janux.tracing.records import SpanRecord

_KINDS = {"Unspecified": 0, "Internal": 1, "Server": 2, "Client": 3, "Producer": 4, "Consumer": 5}
_STATUS = {"Unset": 0, "Ok": 1, "Error": 2}


def any_value(value: Any) -> dict[str, Any]:
    """OTLP/JSON AnyValue of a Python value."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attrs(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in attributes.items()]


def _span(span: SpanRecord) -> dict[str, Any]:
    return {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "parentSpanId": span.parent_span_id,
        "name": span.name,
        "kind": _KINDS.get(span.kind, 1),
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
        "attributes": _attrs(span.attributes),
        "events": [
            {"timeUnixNano": str(e.timestamp_ns), "name": e.name, "attributes": _attrs(e.attributes)}
            for e in span.events
        ],
        "status": {"code": _STATUS.get(span.status_code, 0), "message": span.status_message},
    }


def traces_data(spans: list[SpanRecord]) -> dict[str, Any]:
    """One TracesData document, one resource per service name."""
    by_service: dict[str, list[SpanRecord]] = {}
    for span in spans:
        by_service.setdefault(span.service_name, []).append(span)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attrs({"service.name": service})},
                "scopeSpans": [{"scope": {"name": "janux"}, "spans": [_span(s) for s in group]}],
            }
            for service, group in by_service.items()
        ]
    }


def json_lines(*batches: list[SpanRecord]) -> bytes:
    """OTLP/JSON lines: one TracesData per batch."""
    return b"".join(json.dumps(traces_data(batch)).encode() + b"\n" for batch in batches)
