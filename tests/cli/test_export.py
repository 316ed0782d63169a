"""`janux export`: every demo scenario (recorded with content capture on) and every foreign fixture
goes out as OTLP and comes back through `janux import` (or a real `janux collect`) as the same spans
and the same analysis; `--redact` takes the captured content out and counts it; bad input is one
line and exit status 2."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.cli.export_output import requests_of
from janux.cli.main import main
from janux.demo.scenarios import run_scenarios
from janux.tracing.analysis.report import trace_report
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.conventions import CAPTURE_CONTENT_ENV
from janux.tracing.otlp import decode_proto_message
from janux.tracing.otlp.files import GZIP_MAGIC, ZSTD_MAGIC
from janux.tracing.records import SpanRecord
from janux.tracing.sdk.convert import span_records_from_readable
from janux.tracing.sources.file_loader import load_trace_file
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from tests.cli.helpers import janux, read_otlp_json_lines
from tests.support.foreign.common import FIXTURES
from tests.support.foreign.load import all_spans, cases
from tests.support.otlp_build import start_collect

_ALL = TraceFilter()


def _demo_spans_with_content() -> list[SpanRecord]:
    """Every demo scenario, run with content capture on (the shared demo traces have it off)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CAPTURE_CONTENT_ENV, "true")
        outcomes = asyncio.run(run_scenarios(tracer_provider=provider, latency_scale=0))
    provider.shutdown()
    assert all(o.trace_id and not o.error for o in outcomes), outcomes
    return span_records_from_readable(exporter.get_finished_spans())


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo-store")
    with open_store(path) as store:
        store.write(_demo_spans_with_content())
    return path


@pytest.fixture(scope="module")
def foreign_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("foreign-store")
    with open_store(path) as store:
        store.write(all_spans())
    return path


def _at(data_dir: Path) -> list[str]:
    return ["--data-dir", str(data_dir)]


def _stored(data_dir: Path) -> dict[str, list[SpanRecord]]:
    """Every trace of a store, each trace's spans in start order."""
    with open_store(data_dir) as store:
        ids = [s.trace_id for s in store.list_traces(_ALL, limit=10_000)]
        return store.get_traces(ids)


def _import(tmp_path: Path, *files: Path) -> Path:
    target = tmp_path / "imported"
    assert main(["import", *map(str, files), "--data-dir", str(target)]) == 0
    return target


def _assert_same_traces(before: dict[str, list[SpanRecord]], after: dict[str, list[SpanRecord]]) -> None:
    """Same trace ids, same spans field by field (ids, parents, attributes, events, links, status,
    kinds, times, resource, scope), and the same `janux trace --json` analysis."""
    assert sorted(after) == sorted(before)
    for trace_id, spans in before.items():
        assert after[trace_id] == spans, trace_id
        assert trace_report(reconstruct(after[trace_id])) == trace_report(reconstruct(spans)), trace_id


@pytest.mark.parametrize("file_format", ["json", "protobuf"])
def test_every_demo_scenario_round_trips(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, demo_store: Path, file_format: str
) -> None:
    out = tmp_path / f"demo.{file_format}"
    assert main(["export", "--data-dir", str(demo_store), "-o", str(out), "--format", file_format]) == 0
    before = _stored(demo_store)
    assert f"{len(before)} trace(s)" in capsys.readouterr().err
    _assert_same_traces(before, _stored(_import(tmp_path, out)))
    contents = [s.attributes["gen_ai.input.messages"] for t in before.values() for s in t
                if "gen_ai.input.messages" in s.attributes]  # fmt: skip
    assert contents, "the demo ran with capture on: its rounds carry their messages"


def test_every_foreign_fixture_round_trips_as_the_collector_writes_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, foreign_store: Path
) -> None:
    out = tmp_path / "foreign.jsonl"
    assert main(["export", "--data-dir", str(foreign_store), "-o", str(out), "--batch-spans", "100"]) == 0
    before = _stored(foreign_store)
    assert {c.trace_id for c in cases()} == set(before)
    lines = out.read_text().splitlines()
    assert all(set(json.loads(line)) == {"resourceSpans"} for line in lines)
    assert len(read_otlp_json_lines(out)) == sum(map(len, before.values()))  # hex ids, int enums, int64 text
    assert len(lines) > 1  # batches of about 100 spans
    _assert_same_traces(before, _stored(_import(tmp_path, out)))
    assert f"{len(lines)} request(s)" in capsys.readouterr().err


def test_export_by_id_and_prefix_and_by_filter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, foreign_store: Path
) -> None:
    ids = sorted(c.trace_id for c in cases())
    out = tmp_path / "two.jsonl"
    argv = ["export", ids[0], ids[1][:12], ids[0], "--data-dir", str(foreign_store), "-o", str(out)]
    assert main(argv) == 0
    assert {s["traceId"] for s in read_otlp_json_lines(out)} == {ids[0], ids[1]}
    failing = tmp_path / "failing.jsonl"
    argv = ["export", "--failed-handoffs", "--data-dir", str(foreign_store), "-o", str(failing)]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["traces", "--json", "--failed-handoffs", "--limit", "1000", *_at(foreign_store)]) == 0
    listed = {json.loads(line)["trace_id"] for line in capsys.readouterr().out.splitlines()}
    assert listed and {s["traceId"] for s in read_otlp_json_lines(failing)} == listed
    newest = tmp_path / "newest.jsonl"
    assert main(["export", "--limit", "3", "--data-dir", str(foreign_store), "-o", str(newest)]) == 0
    assert len({s["traceId"] for s in read_otlp_json_lines(newest)}) == 3


def test_export_to_stdout_from_a_trace_file_source(capsysbinary: pytest.CaptureFixture[bytes],
                                                   tmp_path: Path) -> None:  # fmt: skip
    source = FIXTURES / "openai_agents_genai.jsonl"
    assert main(["export", "--source", f"memory-file:{source}"]) == 0
    out = tmp_path / "stdout.jsonl"
    out.write_bytes(capsysbinary.readouterr().out)
    exported = load_trace_file(out)
    original = load_trace_file(source)
    assert not exported.errors
    key = {(s.trace_id, s.span_id): s for s in original.spans}
    assert {(s.trace_id, s.span_id): s for s in exported.spans} == key


def test_export_from_clickhouse_gives_what_clickhouse_stores(tmp_path: Path) -> None:
    from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
    from janux.tracing.sources.clickhouse.source import ClickHouseSource
    from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement

    spans = [s for c in cases() if c.fixture in ("openllmetry", "adk") for s in c.spans]
    client = ChdbClient(str(tmp_path / "chdb"))
    try:
        client.command(EXPORTER_DDL)
        client.command(insert_statement(spans))
        source = ClickHouseSource(client)
        before = source.get_traces(sorted({s.trace_id for s in spans}))
    finally:
        client.close()  # one chdb server per process: the export's process opens its own
    out = tmp_path / "clickhouse.pb"
    done = janux("export", "--chdb", str(tmp_path / "chdb"), "--format", "protobuf", "-o", str(out))
    assert done.returncode == 0, done.stderr
    _assert_same_traces(before, _stored(_import(tmp_path, out)))


def test_an_export_sent_to_a_real_receiver_arrives_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, foreign_store: Path
) -> None:
    secret = tmp_path / "token"
    secret.write_text("exp0rt-token\n")
    proc, http_port, _ = start_collect(tmp_path / "received", "--workers", "1", "--token-file", str(secret))
    try:
        url = f"http://127.0.0.1:{http_port}"
        refused = main(["export", *_at(foreign_store), "--endpoint", url])
        refusal = capsys.readouterr().err
        sent = main(["export", *_at(foreign_store), "--endpoint", url, "--token-file", str(secret),
                     "--batch-spans", "200"])  # fmt: skip
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert refused == 2 and "answered 401: missing or wrong bearer token" in refusal
    assert sent == 0 and "to http://127.0.0.1" in capsys.readouterr().err
    # The receiver answers only after the spans are durably stored: no waiting needed.
    _assert_same_traces(_stored(foreign_store), _stored(tmp_path / "received"))


def _attribute_values(spans: list[SpanRecord]) -> int:
    return sum(len(s.attributes) + sum(len(e.attributes) for e in s.events) for s in spans)


def test_redact_drops_captured_content_and_counts_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, demo_store: Path, foreign_store: Path
) -> None:
    for name, store in (("demo", demo_store), ("foreign", foreign_store)):
        plain, redacted = tmp_path / f"{name}.jsonl", tmp_path / f"{name}-redacted.jsonl"
        assert main(["export", "--data-dir", str(store), "-o", str(plain)]) == 0
        assert main(["export", "--data-dir", str(store), "-o", str(redacted), "--redact"]) == 0
        err = capsys.readouterr().err
        kept, dropped = load_trace_file(plain).spans, load_trace_file(redacted).spans
        removed = _attribute_values(kept) - _attribute_values(dropped)
        assert removed > 0 and f"--redact removed {removed} captured value(s)" in err
        assert [(s.span_id, s.name, s.status_code) for s in dropped] == [
            (s.span_id, s.name, s.status_code) for s in kept
        ]
    demo_text = (tmp_path / "demo-redacted.jsonl").read_text()
    for key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):  # fmt: skip
        assert key in (tmp_path / "demo.jsonl").read_text() and key not in demo_text
    foreign_text = (tmp_path / "foreign-redacted.jsonl").read_text()
    assert "Can I get a refund on my annual plan?" in (tmp_path / "foreign.jsonl").read_text()
    assert "Can I get a refund on my annual plan?" not in foreign_text
    assert "janux.bill.cost" in demo_text and "gen_ai.usage.input_tokens" in foreign_text
    # A Janux trace's analysis never rests on its content: redacted, every demo trace reads the same.
    before, after = _stored(demo_store), _stored(_import(tmp_path, tmp_path / "demo-redacted.jsonl"))
    assert sorted(after) == sorted(before)
    for trace_id, spans in before.items():
        assert trace_report(reconstruct(after[trace_id])) == trace_report(reconstruct(spans)), trace_id


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_bad_input_is_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, foreign_store: Path
) -> None:
    store = ["--data-dir", str(foreign_store)]
    known = cases()[0].trace_id
    bad = {
        "unknown trace id: " + "ab" * 16: ["export", "ab" * 16, *store],
        "no trace id starts with fffffff": ["export", "fffffff", *store],
        "'xyz' is not a trace id": ["export", "xyz", *store],
        "cannot write": ["export", known, *store, "-o", str(tmp_path / "missing-dir" / "out.jsonl")],
        "is a directory": ["export", known, *store, "-o", str(tmp_path)],
        "cannot send to": ["export", known, *store, "--endpoint", f"http://127.0.0.1:{_free_port()}"],
        "not an http:// or https:// URL": ["export", known, *store, "--endpoint", "localhost:4318"],
        "trace ids or filters, not both": ["export", known, "--service", "x", *store],
        "unknown source": ["export", known, "--source", "nowhere"],
        "--timeout must be more than 0": ["export", known, *store, "--timeout", "0"],
        "--token-file: cannot read": ["export", known, *store, "--endpoint", "http://127.0.0.1:1",
                                      "--token-file", str(tmp_path / "no-token")],
    }  # fmt: skip
    for expected, argv in bad.items():
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1 and expected in err, (argv, err)
        assert err.startswith("janux export: "), err
    assert list(tmp_path.iterdir()) == []  # nothing half written left behind


def test_nothing_matching_writes_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        foreign_store: Path) -> None:  # fmt: skip
    out = tmp_path / "none.jsonl"
    assert main(["export", "--service", "no-such-service", *_at(foreign_store), "-o", str(out)]) == 1
    assert "no traces match" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_request_over_the_size_bound_is_split_losing_nothing() -> None:
    spans = all_spans()
    whole = next(requests_of(spans))
    parts = list(requests_of(spans, max_bytes=whole.ByteSize() // 5))
    assert len(parts) >= 5
    assert all(p.ByteSize() <= whole.ByteSize() // 5 or sum(1 for _ in _spans(p)) == 1 for p in parts)
    decoded = [s for p in parts for s in decode_proto_message(p).spans]
    assert sorted(decoded, key=_key) == sorted(spans, key=_key)


def _key(span: SpanRecord) -> tuple[str, str]:
    return span.trace_id, span.span_id


def _spans(request: object) -> Iterator[object]:
    for resource_spans in request.resource_spans:  # type: ignore[attr-defined]
        for scope_spans in resource_spans.scope_spans:
            yield from scope_spans.spans


def test_every_value_kind_a_record_holds_survives_both_encodings() -> None:
    """What the fixtures do not carry: kvlists, empty and null values, nested arrays, trace state,
    an open span (no end time), a link's state and attributes, a status message."""
    from janux.tracing.otlp import decode_json_bytes
    from janux.tracing.otlp.encode import encode_request, request_json
    from janux.tracing.records import EventRecord, LinkRecord

    values = {
        "text": "x", "empty": "", "int": 2**40, "negative": -3, "double": 1.5, "whole double": 2.0,
        "false": False, "null": None, "array": [1, "a", [True, None]], "empty array": [],
        "kvlist": {"a": 1, "b": {"c": "d"}}, "empty kvlist": {},
    }  # fmt: skip
    span = SpanRecord(
        "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "", "root", 1_700_000_000_000_000_000,
        -1_700_000_000_000_000_000, kind="Producer", status_code="Ok", status_message="fine",
        service_name="svc", attributes=values, resource_attributes={"service.name": "svc", "n": 1},
        scope_name="lib", scope_version="1.2", trace_state="k=v",
        events=[EventRecord(1_700_000_000_000_000_001, "e", dict(values))],
        links=[LinkRecord("1" * 32, "2" * 16, "a=b", {"l": [1.5]})],
    )  # fmt: skip
    request = encode_request([span])
    assert decode_proto_message(request).spans == [span]
    assert decode_json_bytes(request_json(request).encode()).spans == [span]


def test_the_file_gets_the_mode_a_new_file_gets_or_keeps_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, foreign_store: Path
) -> None:
    import os

    trace_id = cases()[0].trace_id
    new, kept = tmp_path / "new.jsonl", tmp_path / "kept.jsonl"
    kept.write_text("old")
    kept.chmod(0o640)
    mask = os.umask(0o027)
    try:
        for out in (new, kept):
            assert main(["export", trace_id, *_at(foreign_store), "-o", str(out)]) == 0
    finally:
        os.umask(mask)
    assert (new.stat().st_mode & 0o777, kept.stat().st_mode & 0o777) == (0o640, 0o640)
    assert kept.read_text() == new.read_text() != "old"
    assert main(["export", trace_id, *_at(foreign_store), "-o", os.devnull]) == 0  # a device: written as is
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.jsonl", "new.jsonl"]


class _BusyThenPartial(BaseHTTPRequestHandler):
    """A third-party collector: busy (503, Retry-After 0) for the first request, then it accepts,
    refusing 2 spans of the last request (OTLP partial success)."""

    answers: list[tuple[int, bytes]]
    bodies: list[bytes]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        status, answer = self.answers.pop(0) if self.answers else (200, b"")
        if status == 200:
            self.bodies.append(body)
        self.send_response(status)
        self.send_header("Retry-After", "0")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


def test_a_busy_endpoint_is_retried_and_refused_spans_are_reported(
    capsys: pytest.CaptureFixture[str], foreign_store: Path
) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    partial = ExportTraceServiceResponse()
    partial.partial_success.rejected_spans = 2
    partial.partial_success.error_message = "two spans too old"
    bodies: list[bytes] = []
    handler = type("Handler", (_BusyThenPartial,), {
        "answers": [(503, b"busy"), (200, b""), (200, partial.SerializeToString())], "bodies": bodies,
    })  # fmt: skip
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    case = max(cases(), key=lambda c: len(c.spans))
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/custom/traces"
        status = main(["export", case.trace_id, *_at(foreign_store), "--endpoint", url,
                       "--batch-spans", str(len(case.spans) // 2 + 1)])  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert status == 1 and "refused 2 span(s): two spans too old" in err
    received = [s for body in bodies for s in decode_proto_message(
        ExportTraceServiceRequest.FromString(body)).spans]  # fmt: skip
    assert sorted(received, key=_key) == sorted(_stored(foreign_store)[case.trace_id], key=_key)
    assert len(bodies) == 2  # two requests, the first sent twice


def test_a_reader_that_goes_away_stops_the_export_quietly(foreign_store: Path) -> None:
    """`janux export | head`: the store's traces are far more than a pipe holds, so the export is
    still writing when the reader closes; it stops with the shell's SIGPIPE status, no message."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "janux", "export", *_at(foreign_store)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100).startswith(b'{"resourceSpans":')
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", err


@pytest.mark.parametrize(("name", "magic"), [("out.jsonl.zst", ZSTD_MAGIC), ("out.pb.gz", GZIP_MAGIC)])
def test_a_gz_or_zst_file_is_compressed_and_imports_the_same(
    tmp_path: Path, foreign_store: Path, name: str, magic: bytes
) -> None:
    out = tmp_path / name
    file_format = "protobuf" if ".pb" in name else "json"
    assert main(["export", *_at(foreign_store), "-o", str(out), "--format", file_format]) == 0
    assert out.read_bytes().startswith(magic)
    _assert_same_traces(_stored(foreign_store), _stored(_import(tmp_path, out)))


def test_a_trace_stored_during_an_export_moves_no_trace_out_and_none_in_twice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from dataclasses import replace

    from janux.cli.commands import export

    monkeypatch.setattr(export, "PAGE_TRACES", 10)
    spans = all_spans()
    latest = max(s.end_ns for s in spans)
    shift = latest + 10**9 - cases()[0].spans[0].start_ns
    newest = [replace(s, trace_id="f" * 32, start_ns=s.start_ns + shift) for s in cases()[0].spans]
    with open_store(tmp_path / "store") as store:
        store.write(spans)
        traces = export._by_filter(store, _ALL, None)
        first_page = [next(traces)[0].trace_id for _ in range(10)]
        store.write(newest)  # the newest trace: every later page starts one trace further down
        rest = [trace[0].trace_id for trace in traces]
    exported = first_page + rest
    assert len(exported) == len(set(exported)) and set(exported) == {s.trace_id for s in spans}
