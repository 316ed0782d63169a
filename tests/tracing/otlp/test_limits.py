"""Decode limits: hostile payloads are refused from their bytes before they are parsed, and spans
over the per-span limits are refused by name while their siblings are kept."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from janux.tracing.otlp import decode_json_bytes, decode_proto_request
from janux.tracing.otlp.decode_limits import DecodeLimits, LimitExceeded, check_json, check_proto
from janux.tracing.otlp.errors import DecodeError
from janux.tracing.otlp.wire import count_spans
from tests.support.hostile import empty_spans, events_span, field, json_empty_spans, valid_request
from tests.support.otlp_build import pb_request, pb_span
from tests.support.paths import REPO_ROOT

T = "0af7651916cd43dd8448eb211c80319c"


def test_eight_million_empty_spans_are_refused_without_parsing_them() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    body = empty_spans()
    with pytest.raises(LimitExceeded) as refused:
        decode_proto_request(body)
    assert refused.value.limit == "max_spans" and "max_spans" in str(refused.value)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 200  # the body itself is 16 MiB; parsing it would take 1.5 GB


def test_sixteen_mib_of_json_empty_objects_are_refused_before_json_loads() -> None:
    with pytest.raises(LimitExceeded) as refused:
        decode_json_bytes(json_empty_spans())
    assert refused.value.limit == "max_decoded_bytes" and "MiB" in str(refused.value)


def test_many_empty_events_are_refused_by_their_decoded_size() -> None:
    body = events_span(4000, spans=1000)  # 8 MB: under every per-span limit, 800 MB once decoded
    with pytest.raises(LimitExceeded) as refused:
        check_proto(body, DecodeLimits())
    assert refused.value.limit == "max_decoded_bytes"


def test_an_ordinary_request_is_estimated_far_below_the_limits() -> None:
    body = valid_request(512)
    assert count_spans(body, 10**6) == 512
    assert check_proto(body, DecodeLimits()) < 5 * 1024 * 1024


@pytest.mark.parametrize(
    "body",
    [b"\x0a\x05ab", b"\x00", b"\x0f", bytes([0xFF] * 11), field(0x0A, field(0x12, b"\x12\x09x"))],
)
def test_malformed_protobuf_is_a_decode_error_not_a_limit(body: bytes) -> None:
    with pytest.raises(DecodeError, match="invalid protobuf") as refused:
        check_proto(body, DecodeLimits())
    assert not isinstance(refused.value, LimitExceeded)


def test_unknown_fields_and_groups_are_skipped_as_the_parser_does() -> None:
    request = pb_request([pb_span(T, "00000000000000a1")]).SerializeToString()
    group = b"\x9b\x01" + b"\x08\x01" + b"\x9c\x01"  # field 19: start group, a varint, end group
    body = group + request + b"\xa1\x01" + b"\x00" * 8  # and an unknown fixed64 after it
    assert count_spans(body, 10) == 1 and len(decode_proto_request(body).spans) == 1


def test_spans_over_the_request_limit_are_refused_whole() -> None:
    body = valid_request(11)
    with pytest.raises(LimitExceeded, match="over the limit of 10"):
        decode_proto_request(body, DecodeLimits(max_spans=10))
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": T, "spanId": f"{n + 1:016x}"}
                                                          for n in range(11)]}]}]}  # fmt: skip
    with pytest.raises(LimitExceeded, match="11 spans"):
        decode_json_bytes(json.dumps(doc), DecodeLimits(max_spans=10))


@pytest.mark.parametrize(
    ("limits", "field_name", "message"),
    [
        (DecodeLimits(max_attributes=3), "attributes", "4 attributes exceed the limit of 3 (max_attributes)"),
        (DecodeLimits(max_events=1), "events", "2 events exceed the limit of 1 (max_events)"),
        (DecodeLimits(max_depth=2), "attributes[0].value", "too deeply: more than 2 levels (max_depth)"),
    ],
)
def test_a_span_over_a_per_span_limit_is_refused_by_name_and_its_sibling_kept(
    limits: DecodeLimits, field_name: str, message: str
) -> None:
    big = pb_span(T, "00000000000000a1", attrs={"deep": [[[["x"]]]], "a": 1, "b": 2, "c": 3},
                  events=[("e1", {}), ("e2", {})])  # fmt: skip
    request = pb_request([big, pb_span(T, "00000000000000a2")])
    for result in (
        decode_proto_request(request.SerializeToString(), limits),
        decode_json_bytes(_json(request), limits),
    ):
        assert [s.span_id for s in result.spans] == ["00000000000000a2"] and result.rejected == 1
        assert message in result.errors[0] and f"spans[0].{field_name}" in result.errors[0]


def test_links_and_resource_attributes_are_limited_too() -> None:
    request = pb_request([pb_span(T, "00000000000000a1")])
    span = request.resource_spans[0].scope_spans[0].spans[0]
    for n in range(3):
        span.links.add(trace_id=bytes.fromhex(T), span_id=(n + 1).to_bytes(8, "big"))
    result = decode_proto_request(request.SerializeToString(), DecodeLimits(max_links=2))
    assert result.rejected == 1 and "3 links exceed the limit of 2 (max_links)" in result.errors[0]
    result = decode_proto_request(request.SerializeToString(), DecodeLimits(max_attributes=0))
    assert result.rejected == 1 and "resource_spans[0].resource.attributes: 1 attributes" in result.errors[0]


def _json(request: object) -> str:
    from google.protobuf.json_format import MessageToJson

    return MessageToJson(request, indent=None)  # type: ignore[arg-type]


# VmHWM (peak RSS) of this process only: ru_maxrss of a child starts at its parent's peak.
_PEAK = """
import sys
from janux.tracing.otlp import decode_json_bytes, decode_proto_request
def status(key):
    line = next(l for l in open("/proc/self/status") if l.startswith(key))
    return int(line.split()[1]) * 1024
body = open(sys.argv[1], "rb").read()
before = status("VmRSS")
decode = decode_json_bytes if sys.argv[1].endswith(".json") else decode_proto_request
result = decode(body, checked=True)
print(status("VmHWM") - before)
"""


@pytest.mark.parametrize(
    "name",
    ["events.pb", "empty_spans.pb", "nested.pb", "genai.pb", "genai.json", "numbers.json"],
)
def test_the_estimate_is_at_least_the_real_peak_of_decoding(tmp_path: Path, name: str) -> None:
    """Measured in a fresh process: the estimate the memory budget reserves covers the real cost,
    for the shapes that cost the most per byte and for ordinary GenAI spans."""
    body = _shape(name)
    path = tmp_path / name
    path.write_bytes(body)
    out = subprocess.run([sys.executable, "-c", _PEAK, str(path)], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True, timeout=120)  # fmt: skip
    peak = int(out.stdout.strip())
    check = check_json if name.endswith(".json") else check_proto
    estimate = check(body, DecodeLimits(max_spans=10**6, max_decoded_bytes=2**40))
    assert peak <= estimate, f"{name}: peak {peak / 2**20:.1f} MiB > estimate {estimate / 2**20:.1f} MiB"
    assert estimate < 4 * max(peak, 8 * 2**20), f"{name}: estimate {estimate} far above peak {peak}"


def _shape(name: str) -> bytes:
    if name == "events.pb":
        return events_span(4000, spans=100)
    if name == "empty_spans.pb":
        trace_id = field(0x0A, bytes.fromhex(T))
        spans = [field(0x12, trace_id + field(0x12, (n + 1).to_bytes(8, "big"))) for n in range(50_000)]
        return field(0x0A, field(0x12, b"".join(spans)))
    if name == "nested.pb":  # arrays of empty kvlists: 4 bytes and 2 messages per element
        value = field(0x12, field(0x2A, b"\x0a\x02\x32\x00" * 250_000))
        ids = field(0x0A, bytes.fromhex(T)) + field(0x12, b"\x00" * 7 + b"\x01")
        return field(0x0A, field(0x12, field(0x12, ids + field(0x4A, field(0x0A, b"k") + value))))
    if name == "numbers.json":
        values = ",".join(['{"doubleValue": 1.5}'] * 100_000)
        span = {"traceId": T, "spanId": "00000000000000a1"}
        text = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
        attribute = '"attributes": [{"key": "v", "value": {"arrayValue": {"values": [' + values + "]}}}]"
        span_id = '"spanId": "00000000000000a1"'
        return text.replace(span_id, f"{span_id}, {attribute}").encode()
    request = pb_request([_genai_span(n) for n in range(5_000)])
    return _json(request).encode() if name.endswith(".json") else request.SerializeToString()


def _genai_span(n: int) -> object:
    attrs = {
        "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 420, "gen_ai.usage.output_tokens": 33, "janux.agent.name": "researcher",
        "gen_ai.response.id": f"chatcmpl-{n:020d}", "gen_ai.response.finish_reasons": ["stop"],
        "janux.turn.cost": 0.00123, "server.address": "api.openai.com",
    }  # fmt: skip
    parent = f"{n // 10 * 10 + 1:016x}" if n % 10 else ""
    return pb_span(f"{n // 10 + 1:032x}", f"{n + 1:016x}", parent, f"chat gpt-4o-mini {n}", attrs,
                   events=[("gen_ai.choice", {"index": 0})])  # fmt: skip
