"""Every import format, read record by record from files (fixtures written from the specs)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest
import zstandard
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from janux.tracing.otlp.files import TraceFile
from janux.tracing.records import SpanRecord
from tests.support.otlp_build import numbered_spans, pb_request
from tests.support.paths import FIXTURES


def read(path: Path, max_record_bytes: int = 1 << 20) -> tuple[list[SpanRecord], list[str], int]:
    """All spans of a file, its problems (`location: message`) and the rejected count."""
    spans: list[SpanRecord] = []
    problems: list[str] = []
    rejected = 0
    with TraceFile(path, max_record_bytes) as trace_file:
        for record in trace_file.records():
            if record.result is None:
                problems.append(f"{record.location}: {record.error}")
                rejected += 1
                continue
            spans.extend(record.result.spans)
            rejected += record.result.rejected
            problems.extend(f"{record.location}: {e}" for e in record.result.errors)
    return spans, problems, rejected


def test_collector_file_exporter_json_lines() -> None:
    spans, problems, _ = read(FIXTURES / "collector_file_exporter.jsonl")
    assert problems == []
    assert [s.name for s in spans] == [
        "invoke_agent planner",
        "execute_tool delegate.researcher",
        "invoke_agent researcher",
        "invoke_agent researcher",
    ]
    assert spans[0].service_name == "checkout" and spans[0].attributes["janux.bill.cost"] == 0.0021
    assert spans[1].status_code == "Error" and [e.name for e in spans[1].events] == [
        "HANDOFF_START",
        "HANDOFF_END",
    ]


def test_otlp_json_file_exporter_fixture() -> None:
    (span,), problems, _ = read(FIXTURES / "otlp_json_file_exporter.jsonl")
    assert problems == [] and span.kind == "Client"
    assert span.attributes["gen_ai.response.finish_reasons"] == ["stop"]


def test_real_json_file_exporter_output(tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.json.file import FileSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    path = tmp_path / "sdk.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(path)))
    tracer = provider.get_tracer("janux")
    with tracer.start_as_current_span("parent", attributes={"n": 3}), tracer.start_as_current_span("child"):
        pass
    provider.shutdown()
    spans, problems, _ = read(path)
    assert problems == [] and sorted(s.name for s in spans) == ["child", "parent"]
    child = next(s for s in spans if s.name == "child")
    assert child.parent_span_id == next(s.span_id for s in spans if s.name == "parent")


def test_single_pretty_printed_document() -> None:
    spans, problems, _ = read(FIXTURES / "single_document.json")
    assert problems == [] and len(spans) == 2
    assert spans[0].status_code == "Ok" and spans[1].attributes["gen_ai.usage.output_tokens"] == 4


def test_single_document_over_the_limit_is_refused_clearly() -> None:
    spans, problems, rejected = read(FIXTURES / "single_document.json", max_record_bytes=200)
    assert spans == [] and rejected == 1
    assert "JSON document larger than 200 bytes" in problems[0]


def test_tempo_v1_batches_base64_ids_and_enum_names() -> None:
    spans, problems, _ = read(FIXTURES / "tempo_v1_batches.json")
    assert problems == [] and len(spans) == 4
    assert spans[0].trace_id == "abcdef0123456789abcdef0123456789" and spans[0].span_id == "0000000000000001"
    assert spans[0].kind == "Server" and spans[0].scope_name == "agents-sdk"
    assert spans[2].status_code == "Error" and spans[2].parent_span_id == "0000000000000002"


def test_tempo_v2_trace_wrapper() -> None:
    spans, problems, _ = read(FIXTURES / "tempo_v2_trace.json")
    assert problems == [] and [s.span_id for s in spans] == ["1122334455667788", "1122334455667789"]
    assert spans[1].parent_span_id == "1122334455667788"


def test_jaeger_v3_result_stream() -> None:
    spans, problems, _ = read(FIXTURES / "jaeger_v3_result.jsonl")
    assert problems == [] and [s.name for s in spans] == ["GET /", "SELECT"]


def test_bad_lines_are_skipped_counted_and_located() -> None:
    path = FIXTURES / "mixed_bad.jsonl"
    spans, problems, rejected = read(path)
    assert sorted(s.name for s in spans) == ["good-1", "good-2", "good-3"]
    assert rejected == 3
    assert problems[0].startswith(f"{path}:2: invalid JSON")
    assert problems[1].startswith(f"{path}:3: no resourceSpans")
    assert problems[2].startswith(f"{path}:4: resourceSpans[0].scopeSpans[0].spans[1].traceId")


def _traces_data(count: int, trace_no: int = 1) -> bytes:
    data = TracesData()
    data.resource_spans.extend(pb_request(numbered_spans(count, trace_no)).resource_spans)
    return data.SerializeToString()


def test_protobuf_single_message(tmp_path: Path) -> None:
    path = tmp_path / "traces.pb"
    path.write_bytes(_traces_data(25))
    spans, problems, _ = read(path)
    assert problems == [] and len(spans) == 25


def _length_prefixed(messages: list[bytes]) -> bytes:
    return b"".join(len(m).to_bytes(4, "big") + m for m in messages)


@pytest.mark.parametrize("compress_each", [False, True])
def test_collector_length_prefixed_records(tmp_path: Path, compress_each: bool) -> None:
    messages = [_traces_data(10, trace_no=1), _traces_data(10, trace_no=100)]
    if compress_each:
        messages = [zstandard.ZstdCompressor().compress(m) for m in messages]
    path = tmp_path / "collector.proto"
    path.write_bytes(_length_prefixed(messages))
    spans, problems, _ = read(path)
    assert problems == [] and len(spans) == 20


def test_length_prefixed_zstd_json_records(tmp_path: Path) -> None:
    line = (FIXTURES / "jaeger_v3_result.jsonl").read_bytes().splitlines()[0]
    path = tmp_path / "collector-json.zst"
    path.write_bytes(_length_prefixed([zstandard.ZstdCompressor().compress(line)]))
    spans, problems, _ = read(path)
    assert problems == [] and [s.name for s in spans] == ["GET /"]


def test_truncated_length_prefixed_file_keeps_whole_records(tmp_path: Path) -> None:
    body = _length_prefixed([_traces_data(5), _traces_data(5, trace_no=50)])
    path = tmp_path / "cut.proto"
    path.write_bytes(body[:-7])
    spans, problems, rejected = read(path)
    assert len(spans) == 5 and rejected == 1 and "record 2: truncated record" in problems[0]


def test_whole_file_zstd_and_gzip(tmp_path: Path) -> None:
    raw = (FIXTURES / "collector_file_exporter.jsonl").read_bytes()
    zst = tmp_path / "traces.jsonl.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(raw))
    gz = tmp_path / "traces.jsonl.gz"
    gz.write_bytes(gzip.compress(raw))
    for path in (zst, gz):
        spans, problems, _ = read(path)
        assert problems == [] and len(spans) == 4, path


def test_streaming_zstd_of_protobuf(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(buffer, closefd=False) as writer:
        writer.write(_traces_data(30))
    path = tmp_path / "traces.pb.zst"
    path.write_bytes(buffer.getvalue())
    spans, problems, _ = read(path)
    assert problems == [] and len(spans) == 30


def test_overlong_line_is_skipped_and_the_rest_read(tmp_path: Path) -> None:
    good = (FIXTURES / "jaeger_v3_result.jsonl").read_bytes()
    path = tmp_path / "long.jsonl"
    first, second = good.splitlines()
    path.write_bytes(first + b"\n" + b'{"x":"' + b"a" * 5000 + b'"}\n' + second + b"\n")
    spans, problems, rejected = read(path, max_record_bytes=2000)
    assert [s.name for s in spans] == ["GET /", "SELECT"]
    assert rejected == 1 and "long.jsonl:2: line longer than 2000 bytes" in problems[0]


def test_truncated_zstd_keeps_what_was_read_and_reports_the_rest(tmp_path: Path) -> None:
    lines = (FIXTURES / "collector_file_exporter.jsonl").read_bytes() * 2000  # several zstd blocks
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(lines)[:-20])
    spans, problems, rejected = read(path)
    assert len(spans) > 4 * 1000 and rejected == 2  # the line cut in half, and the cut itself
    assert "line cut off" in problems[0]
    assert "truncated zstd data: the file ends inside a frame" in problems[-1]


@pytest.mark.parametrize("body", [b"\x28\xb5\x2f\xfd" + b"garbage" * 10, b"\x1f\x8b" + b"nope" * 10])
def test_corrupt_compressed_file_is_reported_not_raised(tmp_path: Path, body: bytes) -> None:
    path = tmp_path / "broken.bin"
    path.write_bytes(body)
    spans, problems, rejected = read(path)
    assert spans == [] and rejected == 1
    assert "invalid zstd data" in problems[0] or "invalid gzip data" in problems[0]


def test_empty_file_has_no_records(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert read(path) == ([], [], 0)
