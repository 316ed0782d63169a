"""OTLP/JSON decoding: every accepted spelling, and errors that name the field."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from janux.tracing.otlp import DecodeError, decode_json_bytes, decode_json_document
from tests.support.otlp_build import b64

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"
PARENT = "eee19b7ec3c1b173"


def doc(*spans: dict[str, Any], resource: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": resource
                or {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                "scopeSpans": [{"scope": {"name": "lib", "version": "1.2"}, "spans": list(spans)}],
            }
        ]
    }


def span(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": SPAN,
        "name": "op",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000000001000",
    }
    base.update(fields)
    return base


def test_minimal_span_fields() -> None:
    result = decode_json_document(doc(span(parentSpanId=PARENT, kind=3, traceState="a=b")))
    assert result.rejected == 0
    (record,) = result.spans
    assert (record.trace_id, record.span_id, record.parent_span_id) == (TRACE, SPAN, PARENT)
    assert record.start_ns == 1_700_000_000_000_000_000 and record.duration_ns == 1000
    assert record.kind == "Client" and record.status_code == "Unset"
    assert record.service_name == "svc" and record.scope_name == "lib" and record.scope_version == "1.2"
    assert record.trace_state == "a=b"


@pytest.mark.parametrize(
    ("trace_id", "span_id"),
    [
        (TRACE, SPAN),
        (TRACE.upper(), SPAN.upper()),
        (b64(TRACE), b64(SPAN)),
        (b64(TRACE).rstrip("="), b64(SPAN)),
    ],
)
def test_ids_hex_or_base64(trace_id: str, span_id: str) -> None:
    (record,) = decode_json_document(doc(span(traceId=trace_id, spanId=span_id))).spans
    assert (record.trace_id, record.span_id) == (TRACE, SPAN)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (0, "Unspecified"),
        (1, "Internal"),
        ("SPAN_KIND_SERVER", "Server"),
        (3, "Client"),
        ("4", "Producer"),
        ("SPAN_KIND_CONSUMER", "Consumer"),
        ("Internal", "Internal"),
        (None, "Unspecified"),
    ],
)
def test_kind_number_or_name(kind: Any, expected: str) -> None:
    fields = {} if kind is None else {"kind": kind}
    assert decode_json_document(doc(span(**fields))).spans[0].kind == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (0, "Unset"),
        (1, "Ok"),
        (2, "Error"),
        ("STATUS_CODE_ERROR", "Error"),
        ("STATUS_CODE_OK", "Ok"),
        ("Error", "Error"),
    ],
)
def test_status_number_or_name(code: Any, expected: str) -> None:
    record = decode_json_document(doc(span(status={"code": code, "message": "boom"}))).spans[0]
    assert record.status_code == expected and record.status_message == "boom"


def test_int64_as_string_or_number() -> None:
    as_number = span(startTimeUnixNano=1700000000000000000, endTimeUnixNano=1700000000000000500)
    attrs = [{"key": "n", "value": {"intValue": 42}}, {"key": "s", "value": {"intValue": "-7"}}]
    record = decode_json_document(doc(span(**as_number, attributes=attrs))).spans[0]
    assert record.duration_ns == 500
    assert record.attributes == {"n": 42, "s": -7}


def test_every_any_value_kind() -> None:
    attrs = [
        {"key": "str", "value": {"stringValue": "x"}},
        {"key": "bool", "value": {"boolValue": True}},
        {"key": "int", "value": {"intValue": "9007199254740993"}},
        {"key": "double", "value": {"doubleValue": 1.5}},
        {"key": "nan", "value": {"doubleValue": "NaN"}},
        {"key": "bytes", "value": {"bytesValue": "AQID"}},
        {"key": "array", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "1"}]}}},
        {
            "key": "kvlist",
            "value": {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}},
        },
        {"key": "empty", "value": {}},
        {"key": "snake", "value": {"string_value": "proto name"}},
    ]
    record = decode_json_document(doc(span(attributes=attrs))).spans[0]
    values = record.attributes
    assert values["str"] == "x" and values["bool"] is True and values["int"] == 9007199254740993
    assert values["double"] == 1.5 and math.isnan(values["nan"]) and values["bytes"] == "AQID"
    assert values["array"] == ["a", 1] and values["kvlist"] == {"k": False}
    assert values["empty"] is None and values["snake"] == "proto name"


def test_events_and_links() -> None:
    events = [
        {"timeUnixNano": "5", "name": "HANDOFF_START", "attributes": [{"key": "a", "value": {"intValue": 1}}]}
    ]
    links = [{"traceId": TRACE, "spanId": PARENT, "traceState": "x=y", "attributes": []}]
    record = decode_json_document(doc(span(events=events, links=links))).spans[0]
    assert record.events[0].timestamp_ns == 5 and record.events[0].name == "HANDOFF_START"
    assert record.events[0].attributes == {"a": 1}
    assert record.links[0].span_id == PARENT and record.links[0].trace_state == "x=y"


def test_snake_case_field_names() -> None:
    snake = {
        "trace_id": TRACE,
        "span_id": SPAN,
        "parent_span_id": PARENT,
        "name": "op",
        "start_time_unix_nano": "10",
        "end_time_unix_nano": "30",
    }
    record = decode_json_document({"resource_spans": [{"scope_spans": [{"spans": [snake]}]}]}).spans[0]
    assert record.parent_span_id == PARENT and record.duration_ns == 20


def test_bad_span_is_rejected_with_its_path_and_siblings_are_kept() -> None:
    result = decode_json_document(doc(span(), span(spanId="zz"), span(spanId=PARENT)))
    assert [s.span_id for s in result.spans] == [SPAN, PARENT]
    assert result.rejected == 1
    expected = "resourceSpans[0].scopeSpans[0].spans[1].spanId: invalid hex/base64 id"
    assert result.errors[0].startswith(expected)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"traceId": "00000000000000000000000000000000"}, "spans[0].traceId: all-zero id"),
        ({"traceId": None}, "spans[0].traceId: missing id"),
        ({"spanId": 12}, "spans[0].spanId: id must be a string"),
        ({"kind": "SPAN_KIND_SIDEWAYS"}, "spans[0].kind: unknown enum name"),
        ({"kind": 9}, "spans[0].kind: unknown enum value 9"),
        ({"status": {"code": True}}, "spans[0].status.code"),
        ({"startTimeUnixNano": "soon"}, "spans[0].startTimeUnixNano: expected an integer"),
        ({"endTimeUnixNano": -1}, "spans[0].endTimeUnixNano: integer -1 out of range"),
        (
            {"startTimeUnixNano": str(2**64 - 1)},
            "spans[0].startTimeUnixNano: timestamp 18446744073709551615 is after",
        ),
        ({"events": [{"timeUnixNano": 2**63}]}, "spans[0].events[0].timeUnixNano: timestamp"),
        ({"name": 5}, "spans[0].name: expected a string"),
        ({"attributes": {"k": "v"}}, "spans[0].attributes: expected a list"),
        ({"attributes": [{"key": "k", "value": {"intValue": "x"}}]}, "spans[0].attributes[0].value.intValue"),
        ({"attributes": [{"value": {"intValue": 1}}]}, "spans[0].attributes[0].key: missing"),
        (
            {"attributes": [{"key": "k", "value": {"arrayValue": {"values": [{"boolValue": "yes"}]}}}]},
            "spans[0].attributes[0].value.arrayValue.values[0].boolValue",
        ),
        (
            {"attributes": [{"key": "k", "value": {"weirdValue": 1}}]},
            "spans[0].attributes[0].value.weirdValue",
        ),
        ({"events": [{"name": 3}]}, "spans[0].events[0].name"),
        ({"links": [{"traceId": TRACE, "spanId": "x"}]}, "spans[0].links[0].spanId"),
    ],
)
def test_every_error_names_the_field(bad: dict[str, Any], field: str) -> None:
    result = decode_json_document(doc(span(**bad)))
    assert result.spans == [] and result.rejected == 1
    assert field in result.errors[0], result.errors[0]


def test_broken_resource_rejects_its_spans_only() -> None:
    good = doc(span())["resourceSpans"][0]
    broken = {"resource": {"attributes": "nope"}, "scopeSpans": [{"spans": [span(), span(spanId=PARENT)]}]}
    result = decode_json_document({"resourceSpans": [broken, good]})
    assert len(result.spans) == 1 and result.rejected == 2
    assert result.errors[0].startswith("resourceSpans[0].resource.attributes: expected a list")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "invalid JSON"),
        (b"[1]", "[0]: expected an OTLP object"),
        (b'{"resourceSpans": {}}', "resourceSpans: expected a list"),
        (b'{"hello": 1}', "no resourceSpans, batches, trace or result field"),
        (b"\xff\xfe", "invalid JSON"),
        (b"[" * 100_000, "invalid JSON"),
    ],
)
def test_unusable_documents_raise_with_a_reason(body: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        decode_json_bytes(body)


def test_empty_request_is_valid() -> None:
    result = decode_json_bytes(b"{}")
    assert result.spans == [] and result.rejected == 0


def test_tempo_and_jaeger_wrappers() -> None:
    inner = doc(span(traceId=b64(TRACE), spanId=b64(SPAN)))["resourceSpans"]
    for wrapped in (
        {"batches": inner},
        {"trace": {"batches": inner}},
        {"trace": {"resourceSpans": inner}},
        {"result": {"resourceSpans": inner}},
        [{"resourceSpans": inner}],
    ):
        result = decode_json_bytes(json.dumps(wrapped))
        assert [s.span_id for s in result.spans] == [SPAN], wrapped


def test_instrumentation_library_spans_of_old_otlp() -> None:
    old = {
        "batches": [
            {
                "resource": {"attributes": []},
                "instrumentationLibrarySpans": [
                    {"instrumentationLibrary": {"name": "old-lib", "version": "0.1"}, "spans": [span()]}
                ],
            }
        ]
    }
    (record,) = decode_json_document(old).spans
    assert record.scope_name == "old-lib" and record.scope_version == "0.1"


def test_error_messages_are_capped_but_counted() -> None:
    result = decode_json_document(doc(*[span(spanId="bad") for _ in range(50)]))
    assert result.rejected == 50 and len(result.errors) == 20
