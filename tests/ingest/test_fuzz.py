"""Random bytes and random JSON never crash a reader: they decode, or fail with a counted error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.helpers import FIXTURES, numbered_spans, pb_request
from tracing.otlp import DecodeError, decode_json_bytes, decode_json_document, decode_proto_request
from tracing.otlp.files import TraceFile

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
