"""Each exporter kind really exports: OTLP/HTTP and OTLP/gRPC to local sinks, the JSON-lines file."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.trace.export import ConsoleSpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from janux.tracing import conventions as c
from janux.tracing.sdk.telemetry import Telemetry, configure_telemetry
from tests.support.otlp_json import attributes, parse_lines
from tests.support.otlp_sink import Sink
from tests.support.paths import REPO_ROOT

from .workload import SPANS_PER_TURN, expected_results, run_turns

FAST = {"OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_METRIC_EXPORT_INTERVAL": "60000"}
"""Short batch delay so spans leave quickly; metrics only at shutdown."""


def _record_metric(telemetry: Telemetry) -> None:
    assert telemetry.meter_provider is not None
    meter = telemetry.meter_provider.get_meter(c.INSTRUMENTATION_SCOPE)
    meter.create_histogram("gen_ai.client.token.usage", unit="{token}").record(42)


def test_otlp_http_exports_spans_and_metrics(http_sink: Sink) -> None:
    telemetry = configure_telemetry(
        service_name="http-test",
        endpoint=http_sink.url,
        protocol="http/protobuf",
        headers={"x-janux-test": "yes"},
        set_global=False,
        env=FAST,
    )
    results = asyncio.run(run_turns(telemetry.tracer_provider, 3))
    _record_metric(telemetry)
    assert telemetry.shutdown(timeout_ms=10_000)
    assert results == expected_results(3)
    names = http_sink.received.span_names()
    assert len(names) == 3 * SPANS_PER_TURN
    assert names.count(c.invoke_agent_span_name("planner")) == 3
    assert http_sink.received.service_names() == {"http-test"}
    assert "gen_ai.client.token.usage" in http_sink.received.metric_names()
    assert {"/v1/traces", "/v1/metrics"} <= set(http_sink.received.paths)
    assert all(headers.get("x-janux-test") == "yes" for headers in http_sink.received.headers)
    assert telemetry.exported_spans == 3 * SPANS_PER_TURN
    assert telemetry.dropped_spans == 0


def test_otlp_grpc_exports_spans_and_metrics(grpc_sink: Sink) -> None:
    env = {
        **FAST,
        "OTEL_EXPORTER_OTLP_ENDPOINT": grpc_sink.url,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-janux-test=grpc",
        "OTEL_SERVICE_NAME": "grpc-test",
    }
    telemetry = configure_telemetry(set_global=False, env=env)
    results = asyncio.run(run_turns(telemetry.tracer_provider, 2))
    _record_metric(telemetry)
    assert telemetry.shutdown(timeout_ms=10_000)
    assert results == expected_results(2)
    assert len(grpc_sink.received.span_names()) == 2 * SPANS_PER_TURN
    assert grpc_sink.received.service_names() == {"grpc-test"}
    assert "gen_ai.client.token.usage" in grpc_sink.received.metric_names()
    assert all(headers.get("x-janux-test") == "grpc" for headers in grpc_sink.received.headers)
    assert telemetry.dropped_spans == 0


def test_json_lines_file_is_otlp_json(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "traces.jsonl"
    telemetry = configure_telemetry(
        service_name="file-test",
        exporter="otlp_json_file",
        file_path=path,
        max_export_batch_size=4,
        schedule_delay_ms=60_000,
        set_global=False,
        env={},
    )
    assert telemetry.meter_provider is None  # a trace file gets no metrics unless JANUX_METRICS_FILE
    tracer = telemetry.tracer_provider.get_tracer(c.INSTRUMENTATION_SCOPE)
    with tracer.start_as_current_span("root", kind=SpanKind.INTERNAL) as root:
        root.set_attributes({"int": 2**40, "float": 0.25, "text": "x", "flag": True, "list": ["a", "b"]})
        with tracer.start_as_current_span(
            "child", kind=SpanKind.CLIENT, links=[Link(root.get_span_context())]
        ) as child:
            child.add_event(c.EVENT_HANDOFF_START, {c.JANUX_HANDOFF_ATTEMPTS: 3})
            child.set_status(Status(StatusCode.ERROR, "boom"))
    for index in range(8):
        with tracer.start_as_current_span(f"extra-{index}"):
            pass
    assert telemetry.shutdown(timeout_ms=10_000)

    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    spans = parse_lines(text)
    assert len(spans) == 10
    assert len(lines) >= 3  # one line per export call: 10 spans in batches of at most 4
    assert all(len(json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]) <= 4 for line in lines)
    by_name = {span["name"]: span for span in spans}
    root_span, child_span = by_name["root"], by_name["child"]
    assert root_span["traceId"] == format(root.get_span_context().trace_id, "032x")
    assert root_span["spanId"] == format(root.get_span_context().span_id, "016x")
    assert child_span["parentSpanId"] == root_span["spanId"]
    assert child_span["kind"] == 3 and root_span["kind"] == 1  # CLIENT, INTERNAL as integers
    assert child_span["status"]["code"] == 2 and child_span["status"]["message"] == "boom"
    assert child_span["links"][0]["spanId"] == root_span["spanId"]
    assert attributes(root_span["attributes"]) == {
        "int": 2**40,
        "float": 0.25,
        "text": "x",
        "flag": True,
        "list": ["a", "b"],
    }
    raw_int = next(a for a in root_span["attributes"] if a["key"] == "int")["value"]["intValue"]
    assert raw_int == str(2**40)  # int64 as a string
    assert attributes(child_span["events"][0]["attributes"]) == {c.JANUX_HANDOFF_ATTEMPTS: 3}
    assert attributes(root_span["_resource"]["attributes"])["service.name"] == "file-test"


def test_file_destination_metrics_go_to_their_own_file(tmp_path: Path) -> None:
    env = {"JANUX_METRICS_FILE": str(tmp_path / "metrics.jsonl")}
    telemetry = configure_telemetry(
        exporter="file", file_path=tmp_path / "t.jsonl", set_global=False, env=env
    )
    _record_metric(telemetry)
    assert telemetry.shutdown(timeout_ms=10_000)
    line = json.loads((tmp_path / "metrics.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert "resourceMetrics" in line


def test_console_and_none_exporters() -> None:
    console = configure_telemetry(exporter="console", metrics=False, set_global=False, env={})
    assert isinstance(console.span_exporter, ConsoleSpanExporter)
    console.shutdown(timeout_ms=5000)
    none = configure_telemetry(exporter="none", set_global=False, env={})
    assert none.span_exporter is None and none.meter_provider is None
    none.tracer_provider.get_tracer("x").start_span("s").end()
    assert none.dropped_spans == 0 and none.shutdown(timeout_ms=5000)


def test_custom_exporter_instance_is_wrapped(tmp_path: Path) -> None:
    exporter = FileSpanExporter(tmp_path / "custom.jsonl")
    telemetry = configure_telemetry(exporter=exporter, set_global=False, env={})
    assert telemetry.meter_provider is None  # no metric exporter given with a custom span exporter
    telemetry.tracer_provider.get_tracer("x").start_span("one").end()
    assert telemetry.shutdown(timeout_ms=5000)
    assert [span["name"] for span in parse_lines((tmp_path / "custom.jsonl").read_text())] == ["one"]


def test_global_install_reads_the_process_environment(tmp_path: Path) -> None:
    """In a fresh interpreter (the global can be set once per process): env only, then the API."""
    path = tmp_path / "global.jsonl"
    script = textwrap.dedent(
        """
        from opentelemetry import trace
        from janux.tracing.sdk.telemetry import Telemetry, configure_telemetry
        telemetry = configure_telemetry()
        assert telemetry.installed_globally
        trace.get_tracer("t").start_span("via-global").end()
        second = configure_telemetry(exporter="none")
        assert not second.installed_globally
        assert telemetry.shutdown(timeout_ms=5000)
        """
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "OTEL_TRACES_EXPORTER": "otlp_json_file",
        "JANUX_TRACES_FILE": str(path),
        "OTEL_SERVICE_NAME": "from-env",
    }
    root = REPO_ROOT
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    spans = parse_lines(path.read_text(encoding="utf-8"))
    assert [span["name"] for span in spans] == ["via-global"]
    assert attributes(spans[0]["_resource"]["attributes"])["service.name"] == "from-env"


def test_environment_alone_selects_http_endpoint_protocol_service_and_exporter(
    http_sink: Sink, tmp_path: Path
) -> None:
    """OTEL_EXPORTER_OTLP_ENDPOINT/PROTOCOL, OTEL_SERVICE_NAME and OTEL_TRACES_EXPORTER, no argument."""
    env = {
        **FAST,
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": http_sink.url,
        "OTEL_SERVICE_NAME": "env-http",
    }
    telemetry = configure_telemetry(set_global=False, env=env)
    asyncio.run(run_turns(telemetry.tracer_provider, 1))
    assert telemetry.shutdown(timeout_ms=10_000)
    assert len(http_sink.received.span_names()) == SPANS_PER_TURN
    assert http_sink.received.service_names() == {"env-http"}
    assert "/v1/traces" in http_sink.received.paths  # the signal path is appended to the base endpoint

    path = tmp_path / "env.jsonl"
    env = {"OTEL_TRACES_EXPORTER": "otlp_json_file", "JANUX_TRACES_FILE": str(path), "OTEL_SERVICE_NAME": "f"}
    telemetry = configure_telemetry(set_global=False, env=env)
    asyncio.run(run_turns(telemetry.tracer_provider, 1))
    assert telemetry.shutdown(timeout_ms=10_000)
    spans = parse_lines(path.read_text(encoding="utf-8"))
    assert len(spans) == SPANS_PER_TURN
    assert {attributes(s["_resource"]["attributes"])["service.name"] for s in spans} == {"f"}

    silent = configure_telemetry(set_global=False, env={"OTEL_TRACES_EXPORTER": "none"})
    assert silent.span_exporter is None and silent.meter_provider is None
    assert silent.shutdown(timeout_ms=5000)


def test_json_lines_of_a_real_agent_run_are_spec_compliant(tmp_path: Path) -> None:
    """Every scenario's spans through the file exporter: strict OTLP/JSON, contract values typed."""
    from janux.demo.scenarios import run_scenarios

    path = tmp_path / "agents.jsonl"
    telemetry = configure_telemetry(exporter="otlp_json_file", file_path=path, set_global=False, env={})
    asyncio.run(run_scenarios(tracer_provider=telemetry.tracer_provider, latency_scale=0))
    assert telemetry.shutdown(timeout_ms=10_000)
    spans = parse_lines(path.read_text(encoding="utf-8"))
    assert spans and telemetry.dropped_spans == 0
    for root in (s for s in spans if not s.get("parentSpanId")):
        raw = {a["key"]: a["value"] for a in root["attributes"]}
        assert set(raw[c.JANUX_BILL_INPUT_TOKENS]) == {"intValue"}  # ints stay ints (as int64 strings)
        assert c.JANUX_BILL_COST not in raw or set(raw[c.JANUX_BILL_COST]) == {"doubleValue"}
    events = [e for s in spans for e in s.get("events", [])]
    assert {e["name"] for e in events} == {c.EVENT_HANDOFF_START, c.EVENT_HANDOFF_END}
    key = c.GEN_AI_RESPONSE_FINISH_REASONS
    finish = [a["value"] for s in spans for a in s["attributes"] if a["key"] == key]
    assert finish and all("arrayValue" in value for value in finish)
