"""A strict checker of OTLP/JSON trace lines (the Collector file exporter's format).

Written from the OTLP/JSON rules, independently of the encoder under test: ids are lowercase hex
(32 / 16 characters), enums are integers, 64-bit integers are decimal strings, attribute values
carry exactly one typed field. Returns the spans as plain dicts for further checks.
"""

from __future__ import annotations

import json
import re
from typing import Any

from opentelemetry.proto_json.trace.v1.trace import TracesData

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_UINT64 = re.compile(r"[0-9]+")
_INT64 = re.compile(r"-?[0-9]+")
_VALUE_KEYS = {
    "stringValue",
    "boolValue",
    "intValue",
    "doubleValue",
    "arrayValue",
    "kvlistValue",
    "bytesValue",
}


class OtlpJsonError(AssertionError):
    """A line is not valid OTLP/JSON; the message names the line and field."""


def parse_lines(text: str) -> list[dict[str, Any]]:
    """Check every line of `text` and return all spans, each with `_resource` and `_scope` added."""
    spans: list[dict[str, Any]] = []
    lines = text.splitlines()
    if not lines:
        raise OtlpJsonError("no lines")
    for number, line in enumerate(lines, start=1):
        spans.extend(parse_line(line, number))
    return spans


def parse_line(line: str, number: int = 1) -> list[dict[str, Any]]:
    """Check one line (one export call) and return its spans."""
    try:
        document = json.loads(line)
    except json.JSONDecodeError as error:
        raise OtlpJsonError(f"line {number}: not JSON: {error}") from error
    _expect(isinstance(document, dict) and set(document) == {"resourceSpans"}, number, "top level")
    TracesData.from_dict(document)  # the OTLP/JSON codec must accept it as well
    spans: list[dict[str, Any]] = []
    for resource_spans in document["resourceSpans"]:
        resource = resource_spans.get("resource", {})
        _check_attributes(resource.get("attributes", []), number, "resource.attributes")
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                _check_span(span, number)
                spans.append({**span, "_resource": resource, "_scope": scope_spans.get("scope", {})})
    return spans


def attributes(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Flatten OTLP/JSON key-values into Python values (intValue -> int)."""
    return {item["key"]: _value(item["value"]) for item in items}


def _value(value: dict[str, Any]) -> Any:
    ((kind, raw),) = value.items()
    if kind == "intValue":
        return int(raw)
    if kind == "arrayValue":
        return [_value(item) for item in raw.get("values", [])]
    return raw


def _check_span(span: dict[str, Any], number: int) -> None:
    _expect(bool(_TRACE_ID.fullmatch(span.get("traceId", ""))), number, "traceId")
    _expect(bool(_SPAN_ID.fullmatch(span.get("spanId", ""))), number, "spanId")
    if span.get("parentSpanId"):
        _expect(bool(_SPAN_ID.fullmatch(span["parentSpanId"])), number, "parentSpanId")
    _expect(isinstance(span.get("kind"), int), number, "kind (an integer enum)")
    for key in ("startTimeUnixNano", "endTimeUnixNano"):
        _expect(isinstance(span.get(key), str) and bool(_UINT64.fullmatch(span[key])), number, key)
    status = span.get("status", {})
    _expect(isinstance(status.get("code", 0), int), number, "status.code (an integer enum)")
    _check_attributes(span.get("attributes", []), number, "attributes")
    for event in span.get("events", []):
        _expect(bool(_UINT64.fullmatch(event.get("timeUnixNano", ""))), number, "events.timeUnixNano")
        _check_attributes(event.get("attributes", []), number, "events.attributes")
    for link in span.get("links", []):
        _expect(bool(_TRACE_ID.fullmatch(link.get("traceId", ""))), number, "links.traceId")
        _expect(bool(_SPAN_ID.fullmatch(link.get("spanId", ""))), number, "links.spanId")


def _check_attributes(items: list[dict[str, Any]], number: int, where: str) -> None:
    for item in items:
        _expect(isinstance(item.get("key"), str), number, f"{where}.key")
        _check_value(item.get("value", {}), number, f"{where}[{item.get('key')}]")


def _check_value(value: dict[str, Any], number: int, where: str) -> None:
    _expect(isinstance(value, dict) and len(value) == 1 and set(value) <= _VALUE_KEYS, number, where)
    ((kind, raw),) = value.items()
    if kind == "intValue":
        _expect(isinstance(raw, str) and bool(_INT64.fullmatch(raw)), number, f"{where} (int64 as string)")
    elif kind == "arrayValue":
        for item in raw.get("values", []):
            _check_value(item, number, where)


def _expect(condition: bool, number: int, field: str) -> None:
    if not condition:
        raise OtlpJsonError(f"line {number}: invalid {field}")
