"""Random bytes and random JSON never crash a reader: they decode, or fail with a counted error."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from janux.tracing import conventions as c
from janux.tracing.otlp import DecodeError, decode_json_bytes, decode_json_document, decode_proto_request
from janux.tracing.otlp.files import TraceFile
from janux.tracing.sources.protocol import USAGE_DIMENSIONS, TraceFilter
from janux.tracing.sources.store import TraceStore, open_store
from tests.support.otlp_build import numbered_spans, pb_request
from tests.support.paths import FIXTURES

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)
OTLP_KEYS = [
    "resourceSpans",
    "scopeSpans",
    "spans",
    "traceId",
    "spanId",
    "parentSpanId",
    "attributes",
    "key",
    "value",
    "stringValue",
    "intValue",
    "arrayValue",
    "kvlistValue",
    "values",
    "events",
    "links",
    "kind",
    "status",
    "code",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "batches",
    "trace",
    "result",
    "resource",
]
OTLP_SHAPED = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=40)
    | st.sampled_from(["0" * 32, "a" * 16, "AQID"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(OTLP_KEYS), inner, max_size=5)
    ),
    max_leaves=40,
)
VALID_BODY = pb_request(numbered_spans(3)).SerializeToString()
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _accounted(decode: Any, payload: Any) -> None:
    try:
        result = decode(payload)
    except DecodeError as err:
        assert str(err)
        return
    assert result.rejected >= len(result.errors) >= 0
    for span in result.spans:
        assert len(span.trace_id) == 32 and len(span.span_id) == 16


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes_to_protobuf_decoder(body: bytes) -> None:
    _accounted(decode_proto_request, body)


@FUZZ
@given(st.integers(0, len(VALID_BODY) - 1), st.binary(min_size=1, max_size=8))
def test_mutated_valid_protobuf(position: int, patch: bytes) -> None:
    _accounted(decode_proto_request, VALID_BODY[:position] + patch + VALID_BODY[position + len(patch) :])


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes_to_json_decoder(body: bytes) -> None:
    _accounted(decode_json_bytes, body)


@FUZZ
@given(JSON_VALUES)
def test_random_json_documents(doc: Any) -> None:
    _accounted(decode_json_document, doc)
    _accounted(decode_json_bytes, json.dumps(doc).encode())


@FUZZ
@given(OTLP_SHAPED)
def test_otlp_shaped_random_json(doc: Any) -> None:
    _accounted(decode_json_document, {"resourceSpans": [{"scopeSpans": [{"spans": [doc]}]}]})
    _accounted(decode_json_document, doc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.binary(max_size=600),
    prefix=st.sampled_from([b"", b"{", b"\x00\x00\x00\x05", b"\x28\xb5\x2f\xfd", b"\x1f\x8b", b"\x0a"]),
)
def test_random_files_never_raise(tmp_path: Path, body: bytes, prefix: bytes) -> None:
    path = tmp_path / "fuzz.bin"
    path.write_bytes(prefix + body)
    with TraceFile(path, max_record_bytes=4096) as trace_file:
        for record in trace_file.records():
            assert (record.result is None) != (record.error is None)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 3000), junk=st.binary(max_size=20))
def test_truncated_and_spliced_fixture_files(tmp_path: Path, cut: int, junk: bytes) -> None:
    raw = (FIXTURES / "collector_file_exporter.jsonl").read_bytes()
    path = tmp_path / "cut.jsonl"
    path.write_bytes(raw[:cut] + junk + raw[cut:])
    with TraceFile(path) as trace_file:
        records = list(trace_file.records())
    assert all((r.result is None) != (r.error is None) for r in records)


# ------------------------------------------------------------------------------------------------
# Whatever decodes can be stored and read back: odd text, times, numbers, cycles, duplicates.

TEXT = st.text(
    alphabet=st.sampled_from(["a", "é", "\ud800", "\udfff", "\U0001f600", "\x00", " "]), max_size=8
)
IDS = st.sampled_from(["0af7651916cd43dd8448eb211c80319c", "5b8efff798038103d269b633813fc60c"])
SPAN_IDS = st.sampled_from(["00000000000000a1", "00000000000000a2", "00000000000000a3"])
NUMBERS = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(lambda n: {"intValue": str(n)}),
    st.floats().map(lambda f: {"doubleValue": f if math.isfinite(f) else str(f).replace("inf", "Infinity")}),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e30", "12.7", "7"]).map(lambda s: {"doubleValue": s}),
    st.sampled_from(["12.7", "7", "inf", "x"]).map(lambda s: {"stringValue": s}),
    st.booleans().map(lambda b: {"boolValue": b}),
)
VALUES = st.one_of(
    NUMBERS,
    TEXT.map(lambda t: {"stringValue": t}),
    st.lists(TEXT.map(lambda t: {"stringValue": t}), max_size=3).map(lambda v: {"arrayValue": {"values": v}}),
)
KEYS = st.sampled_from(
    [c.GEN_AI_OPERATION_NAME, c.GEN_AI_AGENT_NAME, c.GEN_AI_CONVERSATION_ID, c.GEN_AI_TOOL_TYPE,
     c.GEN_AI_TOOL_NAME, c.GEN_AI_REQUEST_MODEL, c.JANUX_HANDOFF_STATUS, *c.TURN_USAGE_KEYS, *c.BILL_KEYS,
     c.GEN_AI_USAGE_INPUT_TOKENS, c.GEN_AI_USAGE_OUTPUT_TOKENS, c.JANUX_ROUND_COST, "free"]
)  # fmt: skip
OPS = st.sampled_from(
    [c.OP_INVOKE_AGENT, c.OP_CHAT, c.OP_EXECUTE_TOOL, c.TOOL_TYPE_DELEGATE, *c.FAILING_STATUSES]
)
TIMES = st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1).map(str))
SPANS = st.fixed_dictionaries(
    {
        "traceId": IDS,
        "spanId": SPAN_IDS,
        "parentSpanId": st.one_of(st.just(""), SPAN_IDS),  # self-parents and cycles included
        "name": TEXT,
        "startTimeUnixNano": TIMES,
        "endTimeUnixNano": TIMES,  # clock skew: often before the start
        "status": st.fixed_dictionaries({"code": st.integers(0, 2)}),
        "attributes": st.lists(
            st.fixed_dictionaries(
                {"key": KEYS, "value": st.one_of(VALUES, OPS.map(lambda o: {"stringValue": o}))}
            ),
            max_size=8,
        ),
        "events": st.lists(st.fixed_dictionaries({"name": TEXT, "timeUnixNano": TIMES}), max_size=2),
    }
)


@pytest.fixture(scope="module")
def fuzz_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TraceStore]:
    with open_store(tmp_path_factory.mktemp("fuzz")) as store:
        yield store


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spans=st.lists(SPANS, min_size=1, max_size=6), service=TEXT)
def test_whatever_decodes_is_stored_and_read_back(
    fuzz_store: TraceStore, spans: list[Any], service: str
) -> None:
    resource = {"attributes": [{"key": c.SERVICE_NAME, "value": {"stringValue": service}}]}
    doc = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}
    result = decode_json_document(json.loads(json.dumps(doc)))
    before = fuzz_store.ingest_stats()
    written = fuzz_store.write(result.spans, result.rejected, result.errors)
    assert written.stored + written.duplicates == len(result.spans)
    assert fuzz_store.ingest_stats().rejected == before.rejected + result.rejected
    for span in result.spans:
        assert span.span_id in {s.span_id for s in fuzz_store.get_trace(span.trace_id)}
    flt = TraceFilter()
    assert len(fuzz_store.list_traces(flt)) == fuzz_store.count_traces(flt) <= 2
    fuzz_store.failed_handoff_spans(flt)
    for dimension in USAGE_DIMENSIONS:
        fuzz_store.usage_by(dimension, flt)
    for what in ("service", "root_agent", "conversation"):
        fuzz_store.distinct_values(what)  # type: ignore[arg-type]
