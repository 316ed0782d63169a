"""Builders shared by the ingestion tests: OTLP protobuf requests, JSON documents, records."""

from __future__ import annotations

import base64
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from janux.tracing import conventions as c
from janux.tracing.records import EventRecord, SpanRecord
from tests.support.paths import REPO_ROOT

TRACE_A = "5b8efff798038103d269b633813fc60c"
"""A trace id used by the fixture files."""


def any_value(value: Any) -> AnyValue:
    """A protobuf AnyValue for a Python value (lists -> arrays, dicts -> kvlists, bytes -> bytes)."""
    out = AnyValue()
    if value is None:
        return out
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, bytes):
        out.bytes_value = value
    elif isinstance(value, list):
        out.array_value.values.extend(any_value(v) for v in value)
    elif isinstance(value, dict):
        out.kvlist_value.values.extend(KeyValue(key=k, value=any_value(v)) for k, v in value.items())
    else:
        out.string_value = str(value)
    return out


def pb_span(
    trace_id: str,
    span_id: str,
    parent: str = "",
    name: str = "span",
    attrs: dict[str, Any] | None = None,
    *,
    start: int = 1_700_000_000_000_000_000,
    duration: int = 1_000_000,
    kind: int = 1,
    status: int = 0,
    events: list[tuple[str, dict[str, Any]]] | None = None,
) -> Span:
    """A protobuf span with hex ids."""
    span = Span(
        trace_id=bytes.fromhex(trace_id),
        span_id=bytes.fromhex(span_id),
        parent_span_id=bytes.fromhex(parent),
        name=name,
        kind=kind,  # type: ignore[arg-type]
        start_time_unix_nano=start,
        end_time_unix_nano=start + duration,
        status=Status(code=status),  # type: ignore[arg-type]
    )
    span.attributes.extend(KeyValue(key=k, value=any_value(v)) for k, v in (attrs or {}).items())
    for event_name, event_attrs in events or []:
        event = span.events.add(name=event_name, time_unix_nano=start + 1)
        event.attributes.extend(KeyValue(key=k, value=any_value(v)) for k, v in event_attrs.items())
    return span


def pb_request(spans: list[Span], service: str = "svc") -> ExportTraceServiceRequest:
    """One resource, one scope, these spans."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(KeyValue(key=c.SERVICE_NAME, value=any_value(service)))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "tests"
    scope_spans.spans.extend(spans)
    return request


def numbered_spans(count: int, trace_no: int = 1, per_trace: int = 10) -> list[Span]:
    """`count` valid spans, `per_trace` per trace starting at trace number `trace_no`."""
    spans = []
    for i in range(count):
        trace = trace_no + i // per_trace
        index = i % per_trace
        parent = "" if index == 0 else f"{trace:08x}{1:08x}"
        spans.append(pb_span(f"{trace:032x}", f"{trace:08x}{index + 1:08x}", parent, f"span {index}"))
    return spans


def b64(hex_id: str) -> str:
    """A hex id as base64 (how Tempo and Jaeger write ids)."""
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def record(
    span_id: str,
    parent: str = "",
    name: str = "span",
    attrs: dict[str, Any] | None = None,
    *,
    trace_id: str = TRACE_A,
    start: int = 1_000,
    duration: int = 100,
    status: str = "Unset",
    service: str = "svc",
    events: list[EventRecord] | None = None,
) -> SpanRecord:
    """A SpanRecord with short defaults."""
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=start,
        duration_ns=duration,
        status_code=status,
        service_name=service,
        attributes=attrs or {},
        resource_attributes={c.SERVICE_NAME: service},
        events=events or [],
    )


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_collect(
    data_dir: Path,
    *extra: str,
    preexec_fn: Callable[[], None] | None = None,
    stderr_path: Path | None = None,
) -> tuple[subprocess.Popen[str], int, int]:
    """`janux collect` in a subprocess on free ports; returns it with its HTTP and gRPC ports.

    `preexec_fn` runs in the child before it starts (e.g. to set resource limits); with
    `stderr_path`, the child's stderr goes to that file instead of a pipe.
    """
    stderr = open(stderr_path, "w") if stderr_path is not None else subprocess.PIPE  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "janux",
            "collect",
            "--data-dir",
            str(data_dir),
            "--http-port",
            "0",
            "--grpc-port",
            "0",
            *extra,
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        preexec_fn=preexec_fn,
    )
    if stderr_path is not None:
        stderr.close()  # type: ignore[union-attr]
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    line = proc.stdout.readline()
    if "OTLP/HTTP on" not in line or time.monotonic() > deadline:
        proc.kill()
        errors = proc.stderr.read() if proc.stderr else stderr_path.read_text() if stderr_path else ""
        raise AssertionError(f"collector did not start: {line!r} {errors}")
    http_port = int(line.split("/v1/traces")[0].rsplit(":", 1)[1])
    grpc_port = int(line.split("OTLP/gRPC on ")[1].split(",")[0].rsplit(":", 1)[1])
    return proc, http_port, grpc_port
