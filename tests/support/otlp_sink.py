"""Test-only OTLP sinks on 127.0.0.1: an OTLP/HTTP (protobuf) server and an OTLP/gRPC server.

They decode what the SDK exporters send with the OTLP protobuf classes and keep every request,
so a test can check what really went over the wire. The product's receiver is tested elsewhere.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from tests.support.wait import wait_until


@dataclass
class Received:
    """Everything a sink received, decoded."""

    traces: list[trace_service_pb2.ExportTraceServiceRequest] = field(default_factory=list)
    metrics: list[metrics_service_pb2.ExportMetricsServiceRequest] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def span_names(self) -> list[str]:
        """Names of every received span, in arrival order."""
        with self.lock:
            return [
                span.name
                for request in self.traces
                for resource_spans in request.resource_spans
                for scope_spans in resource_spans.scope_spans
                for span in scope_spans.spans
            ]

    def metric_names(self) -> set[str]:
        """Names of every received metric."""
        with self.lock:
            return {
                metric.name
                for request in self.metrics
                for resource_metrics in request.resource_metrics
                for scope_metrics in resource_metrics.scope_metrics
                for metric in scope_metrics.metrics
            }

    def service_names(self) -> set[str]:
        """`service.name` of every received resource."""
        with self.lock:
            return {
                attribute.value.string_value
                for request in self.traces
                for resource_spans in request.resource_spans
                for attribute in resource_spans.resource.attributes
                if attribute.key == "service.name"
            }

    def trace_ids(self) -> set[str]:
        """Hex trace ids of every received span."""
        with self.lock:
            return {
                span.trace_id.hex()
                for request in self.traces
                for resource_spans in request.resource_spans
                for scope_spans in resource_spans.scope_spans
                for span in scope_spans.spans
            }

    def wait_for_spans(self, count: int, timeout_s: float = 10.0) -> list[str]:
        """Wait until at least `count` spans arrived; return their names (what arrived, on timeout)."""
        try:
            return wait_until(lambda: len(names := self.span_names()) >= count and names, timeout_s=timeout_s)
        except AssertionError:
            return self.span_names()


@dataclass
class Sink:
    """A running sink: its base URL and what it received."""

    url: str
    received: Received


class _OtlpHttpHandler(BaseHTTPRequestHandler):
    received: Received

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        decoders: dict[str, Callable[[bytes], Any]] = {
            "/v1/traces": trace_service_pb2.ExportTraceServiceRequest.FromString,
            "/v1/metrics": metrics_service_pb2.ExportMetricsServiceRequest.FromString,
        }
        decode = decoders.get(self.path)
        if decode is None:
            self.send_response(404)
            self.end_headers()
            return
        message = decode(body)
        with self.received.lock:
            self.received.paths.append(self.path)
            self.received.headers.append({k.lower(): v for k, v in self.headers.items()})
            target = self.received.traces if self.path == "/v1/traces" else self.received.metrics
            target.append(message)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""


def serve_http() -> Iterator[Sink]:
    """Run an OTLP/HTTP sink on a free port of 127.0.0.1 until the generator is closed."""
    received = Received()
    handler = type("Handler", (_OtlpHttpHandler,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Sink(url=f"http://127.0.0.1:{server.server_address[1]}", received=received)
    finally:
        server.shutdown()
        server.server_close()


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, received: Received) -> None:
        self._received = received

    def Export(self, request: Any, context: Any) -> Any:
        with self._received.lock:
            self._received.traces.append(request)
            self._received.headers.append({k: v for k, v in context.invocation_metadata()})
        return trace_service_pb2.ExportTraceServiceResponse()


class _MetricsService(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, received: Received) -> None:
        self._received = received

    def Export(self, request: Any, context: Any) -> Any:
        with self._received.lock:
            self._received.metrics.append(request)
        return metrics_service_pb2.ExportMetricsServiceResponse()


def serve_grpc() -> Iterator[Sink]:
    """Run an OTLP/gRPC sink on a free port of 127.0.0.1 until the generator is closed."""
    received = Received()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
        _TraceService(received), server
    )
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(  # type: ignore[no-untyped-call]
        _MetricsService(received), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield Sink(url=f"http://127.0.0.1:{port}", received=received)
    finally:
        server.stop(grace=None)


def refused_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
