"""OTLP protobuf decoding: the same records as JSON, and errors that name the field."""

from __future__ import annotations

import json

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from janux.tracing.otlp import DecodeError, decode_json_document, decode_proto_message, decode_proto_request
from tests.support.otlp_build import pb_request, pb_span

T = "0af7651916cd43dd8448eb211c80319c"
S1 = "b7ad6b7169203331"
S2 = "b7ad6b7169203332"


def test_roundtrip_matches_json_decoder() -> None:
    attrs = {
        "s": "x",
        "i": 7,
        "d": 0.5,
        "b": False,
        "a": ["p", 2],
        "m": {"k": "v"},
        "bytes": b"\x01\x02",
        "e": "",
    }
    request = pb_request(
        [pb_span(T, S1, "", "root", attrs, kind=2, status=2, events=[("ev", {"n": 1})]), pb_span(T, S2, S1)]
    )
    from_proto = decode_proto_request(request.SerializeToString())
    as_json = MessageToDict(request)  # protobuf JSON mapping: base64 ids, int64 as strings
    from_json = decode_json_document(json.loads(json.dumps(as_json)))
    assert from_proto.rejected == 0 and from_proto.spans == from_json.spans
    root = from_proto.spans[0]
    assert root.kind == "Server" and root.status_code == "Error"
    assert root.attributes == {**attrs, "bytes": "AQI="}
    assert root.events[0].attributes == {"n": 1}
    assert from_proto.spans[1].parent_span_id == S1


def test_traces_data_message_decodes_too() -> None:
    data = TracesData()
    data.resource_spans.extend(pb_request([pb_span(T, S1)]).resource_spans)
    assert decode_proto_request(data.SerializeToString()).spans[0].span_id == S1
    assert decode_proto_message(data).spans[0].trace_id == T


def test_resource_is_shared_between_spans() -> None:
    spans = decode_proto_request(pb_request([pb_span(T, S1), pb_span(T, S2)]).SerializeToString()).spans
    assert spans[0].resource_attributes is spans[1].resource_attributes
    assert spans[0].service_name == "svc"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: setattr(s, "trace_id", b"\x01" * 15), "spans[1].trace_id: id must be 16 bytes, got 15"),
        (lambda s: setattr(s, "trace_id", b""), "spans[1].trace_id: missing id"),
        (lambda s: setattr(s, "span_id", b"\x00" * 8), "spans[1].span_id: all-zero id is invalid"),
        (lambda s: setattr(s, "parent_span_id", b"\x01\x02"), "spans[1].parent_span_id: id must be 8 bytes"),
        (lambda s: setattr(s, "kind", 17), "spans[1].kind: unknown enum value 17"),
        (lambda s: s.status.__setattr__("code", 5), "spans[1].status.code: unknown enum value 5"),
        (lambda s: setattr(s, "end_time_unix_nano", 2**63), "spans[1].end_time_unix_nano: timestamp"),
        (lambda s: s.events.add(time_unix_nano=2**64 - 1), "spans[1].events[0].time_unix_nano: timestamp"),
    ],
)
def test_bad_span_named_and_siblings_kept(mutate: object, message: str) -> None:
    request = pb_request([pb_span(T, S1), pb_span(T, S2, S1)])
    assert callable(mutate)
    mutate(request.resource_spans[0].scope_spans[0].spans[1])
    result = decode_proto_request(request.SerializeToString())
    assert [s.span_id for s in result.spans] == [S1]
    assert result.rejected == 1
    assert message in result.errors[0]
    assert result.errors[0].startswith("resource_spans[0].scope_spans[0].spans[1].")


def test_all_zero_parent_means_root() -> None:
    request = pb_request([pb_span(T, S1)])
    request.resource_spans[0].scope_spans[0].spans[0].parent_span_id = b"\x00" * 8
    assert decode_proto_request(request.SerializeToString()).spans[0].parent_span_id == ""


def test_too_deep_value_is_rejected_with_path() -> None:
    nested: object = "leaf"
    for _ in range(40):
        nested = [nested]
    request = pb_request([pb_span(T, S1, attrs={"deep": nested})])
    result = decode_proto_request(request.SerializeToString())
    assert result.rejected == 1
    assert "spans[0].attributes[0].value" in result.errors[0] and "nested too deeply" in result.errors[0]


@pytest.mark.parametrize("body", [b"\xff\xff\xff", b"\x0a\x05abc", b"\x0a\xff\xff\xff\xff\x0f"])
def test_unparsable_bytes_raise_decode_error(body: bytes) -> None:
    with pytest.raises(DecodeError, match="invalid protobuf"):
        decode_proto_request(body)
