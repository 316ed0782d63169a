"""`janux demo` end to end, as a subprocess: file output, OTLP output, errors, and compose's command."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from janux.cli.commands.demo import wait_until_up
from janux.cli.main import build_parser
from janux.demo.scenarios import SCENARIO_NAMES
from janux.tracing import conventions as c
from tests.support.otlp_sink import Sink, refused_port, serve_http

from .helpers import ROOT, janux, read_otlp_json_lines, report_rows

FAST = ("--latency-scale", "0")


@pytest.fixture
def http_sink() -> Iterator[Sink]:
    yield from serve_http()


def test_out_writes_otlp_json_lines_with_every_scenario(tmp_path: Path) -> None:
    out = tmp_path / "f.jsonl"
    out.write_text("stale content that must be replaced\n")
    done = janux("demo", "--out", str(out), *FAST)
    assert done.returncode == 0, done.stderr
    rows = report_rows(done.stdout)
    assert [row.name for row in rows] == list(SCENARIO_NAMES)
    spans = read_otlp_json_lines(out)
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_trace.setdefault(span["traceId"], []).append(span)
    for row in rows:
        trace = by_trace.get(row.trace_id)
        assert trace, f"scenario {row.name}: no span of trace {row.trace_id} in the file"
        roots = [span for span in trace if not span.get("parentSpanId")]
        assert len(roots) == 1 and roots[0]["name"].startswith(c.OP_INVOKE_AGENT), row.name
    assert {span["_resource"]["service.name"]["stringValue"] for span in spans} == {"janux-demo"}
    assert f"{len(spans)} spans of {len(rows)} scenarios" in done.stdout


def test_scenario_subset_and_append(tmp_path: Path) -> None:
    out = tmp_path / "subset.jsonl"
    first, second = SCENARIO_NAMES[0], SCENARIO_NAMES[-1]
    done = janux("demo", "--out", str(out), "--scenario", first, *FAST)
    assert done.returncode == 0, done.stderr
    assert [row.name for row in report_rows(done.stdout)] == [first]
    again = janux("demo", "--out", str(out), "--append", "--scenario", second, *FAST)
    assert again.returncode == 0, again.stderr
    traces = {span["traceId"] for span in read_otlp_json_lines(out)}
    assert {report_rows(done.stdout)[0].trace_id, report_rows(again.stdout)[0].trace_id} <= traces


def test_list_prints_every_scenario() -> None:
    done = janux("demo", "--list")
    assert done.returncode == 0
    assert done.stdout.split() == list(SCENARIO_NAMES)


def test_usage_errors_name_the_problem(tmp_path: Path) -> None:
    unknown = janux("demo", "--out", str(tmp_path / "x.jsonl"), "--scenario", "no-such-scenario")
    assert unknown.returncode == 2 and "no-such-scenario" in unknown.stderr
    assert not (tmp_path / "x.jsonl").exists()
    nowhere = janux("demo")
    assert nowhere.returncode == 2 and "--out" in nowhere.stderr
    both = janux("demo", "--out", "a.jsonl", "--endpoint", "http://127.0.0.1:1")
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_endpoint_sends_over_otlp_http(http_sink: Sink) -> None:
    done = janux("demo", "--endpoint", http_sink.url, *FAST)
    assert done.returncode == 0, done.stderr
    assert {row.trace_id for row in report_rows(done.stdout)} <= http_sink.received.trace_ids()


def test_unreachable_endpoint_finishes_and_reports_dropped_spans() -> None:
    env = {"OTEL_EXPORTER_OTLP_TIMEOUT": "300", "OTEL_BSP_EXPORT_TIMEOUT": "1000"}
    done = janux(
        "demo",
        "--endpoint",
        f"http://127.0.0.1:{refused_port()}",
        "--scenario",
        SCENARIO_NAMES[0],
        *FAST,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1
    assert "could not be delivered" in done.stderr
    assert [row.name for row in report_rows(done.stdout)] == [SCENARIO_NAMES[0]]


def test_wait_for_gives_up_after_its_timeout(tmp_path: Path) -> None:
    out = tmp_path / "never.jsonl"
    done = janux(
        "demo", "--out", str(out), "--wait-for", f"http://127.0.0.1:{refused_port()}/", "--wait-timeout", "1"
    )
    assert done.returncode == 1 and "did not answer" in done.stderr
    assert not out.exists()


def test_wait_until_up_polls_until_the_server_is_healthy() -> None:
    answers = iter([503, 503, 200])

    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(next(answers, 200))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert wait_until_up(f"http://127.0.0.1:{server.server_address[1]}/", 10, interval_s=0.01)
    finally:
        server.shutdown()
        server.server_close()
    assert not wait_until_up(f"http://127.0.0.1:{refused_port()}/", 0.2, interval_s=0.05)


def test_compose_demo_command_is_a_valid_janux_command() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    command = compose["services"]["demo"]["command"]
    assert command[0] == "janux"
    args = build_parser().parse_args(command[1:])
    assert args.command == "demo"
    assert args.endpoint == "http://otel-collector:4318" and args.protocol == "http/protobuf"
    assert args.wait_for.startswith("http://otel-collector:")
