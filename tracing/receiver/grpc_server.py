"""OTLP/gRPC `opentelemetry.proto.collector.trace.v1.TraceService/Export` on grpcio.

The request is taken as raw bytes (no deserializer) so a malformed message gets
INVALID_ARGUMENT naming the problem instead of grpc's generic INTERNAL. grpcio itself enforces
the size limit (RESOURCE_EXHAUSTED), handles gzip, caps concurrent calls and connections and
closes connections that never finish their handshake.

Memory: grpcio reads a unary call's message before its handler runs, so a burst of large calls
would be held whole, outside any budget. Export is therefore registered as a client-streaming
method (the same bytes on the wire; a unary client cannot tell): the handler first reserves one
largest message from the process's body pool, only then pulls the message, and keeps the
reservation until the call is answered. The calls reading at once are so bounded by the budget
(`grpc_limits`), and HTTP/2 flow control holds every other sender back. Each call then checks the
decode limits (RESOURCE_EXHAUSTED naming the limit) and reserves its decoded size (UNAVAILABLE,
retryable, when the budget stays full) before it parses. The metrics and logs services answer
UNIMPLEMENTED with a message saying only traces are collected (rather than grpc's bare
"Method not found"), so an SDK exporting every signal here logs why.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from janux.tracing.otlp.decode_limits import LimitExceeded, check_proto
from janux.tracing.otlp.errors import DecodeError
from janux.tracing.otlp.proto_decode import decode_proto_request
from janux.tracing.receiver.budget import BudgetBusy, BudgetExceeded, ProcessBudget, Reservation
from janux.tracing.receiver.export import response_message, submit
from janux.tracing.receiver.limits import ReceiverLimits
from janux.tracing.sources.store import TraceStore

logger = logging.getLogger(__name__)

SERVICE_NAME = "opentelemetry.proto.collector.trace.v1.TraceService"
"""Fully qualified gRPC service name of OTLP traces."""

OTHER_SIGNAL_SERVICES = {
    "metrics": "opentelemetry.proto.collector.metrics.v1.MetricsService",
    "logs": "opentelemetry.proto.collector.logs.v1.LogsService",
}
"""The OTLP/gRPC services of the signals this receiver does not collect, by signal."""

GRPC_WORKERS = 8
"""Threads serving concurrent Export calls (each mostly waits for its commit)."""
MESSAGE_COPIES = 2
"""How many times grpcio holds a message while handing it over: its own buffer and the bytes
given to the handler. A reading call reserves this many largest messages."""
STREAM_WINDOW_BYTES = 64 * 1024
"""HTTP/2 flow-control window of a call (fixed: no bandwidth probing). A call not yet admitted
holds at most this much; the client waits for more window."""
IDLE_CONNECTION_MS = 5 * 60_000
"""A connection without any call for this long is closed (clients reconnect transparently)."""


@dataclass(frozen=True, slots=True)
class GrpcLimits:
    """What the gRPC server is configured with, derived from the receiver's limits and budget."""

    max_message_bytes: int
    """Largest message accepted: the body limit, but never more than the body pool holds."""
    reading_at_once: int
    """Messages that fit in the body pool together (each counted `MESSAGE_COPIES` times): calls
    reading at once, at most."""
    max_concurrent_rpcs: int
    """Calls admitted at once (the rest get RESOURCE_EXHAUSTED); the ones not yet reading hold no
    message, only a place in the budget's queue."""


def grpc_limits(limits: ReceiverLimits, budget: ProcessBudget) -> GrpcLimits:
    """The gRPC server's limits: message size and reading calls within the budget's body pool."""
    largest = min(limits.max_body_bytes, budget.bodies.total // MESSAGE_COPIES)
    reading = max(1, budget.bodies.total // (largest * MESSAGE_COPIES))
    return GrpcLimits(largest, reading, limits.max_concurrent_rpcs)


class _TraceService:
    """The Export handler: admit, read, check, reserve memory, decode, store, answer after commit."""

    def __init__(
        self, store: TraceStore, token: str | None, limits: ReceiverLimits, budget: ProcessBudget
    ) -> None:
        self._store = store
        self._expected = f"Bearer {token}".encode() if token is not None else None
        self._limits = limits
        self._budget = budget
        self._largest = grpc_limits(limits, budget).max_message_bytes

    def export(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        """Handle one Export call; `requests` yields its one raw message, read only once admitted."""
        if self._expected is not None and not self._authorized(context):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        body, decoding = Reservation(self._budget.bodies), Reservation(self._budget.decoding)
        try:
            request = self._admitted_message(requests, context, body)
            return self._export(request, context, decoding)
        finally:
            body.close()
            decoding.close()

    def _admitted_message(
        self, requests: Iterator[bytes], context: grpc.ServicerContext, body: Reservation
    ) -> bytes:
        """Reserve one largest message (grpcio does not tell the size before reading it), then read."""
        try:
            body.grow(self._largest * MESSAGE_COPIES)
        except BudgetBusy as busy:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(busy))
        request = next(requests, None)
        if request is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "Export needs exactly one request message")
            raise AssertionError("not reached: abort raises")
        body.shrink_to(len(request))  # grpcio's own buffer is gone; the bytes stay until answered
        return request

    def _export(
        self, request: bytes, context: grpc.ServicerContext, reservation: Reservation
    ) -> ExportTraceServiceResponse:
        limits = self._limits.decode
        try:
            reservation.grow(check_proto(request, limits))
            result = decode_proto_request(request, limits, checked=True)
        except BudgetBusy as busy:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(busy))
        except BudgetExceeded as too_big:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(too_big))
        except DecodeError as err:
            self._count_refused(str(err))
            code = grpc.StatusCode.RESOURCE_EXHAUSTED if isinstance(err, LimitExceeded) else None
            context.abort(code or grpc.StatusCode.INVALID_ARGUMENT, str(err))
        del request
        outcome, future = submit(self._store, result)
        del result
        try:
            future.result()
        except Exception as err:  # the store's writer logged it (rate-limited): answer only
            context.abort(grpc.StatusCode.UNAVAILABLE, f"store unavailable: {err}")
        if not outcome.ok:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, outcome.message)
        return response_message(outcome)

    def _authorized(self, context: grpc.ServicerContext) -> bool:
        """Exactly one `authorization` entry, equal to `Bearer TOKEN` byte for byte."""
        given = [
            value.encode() if isinstance(value, str) else bytes(value)
            for key, value in context.invocation_metadata()
            if key.lower() == "authorization"
        ]
        return (
            self._expected is not None and len(given) == 1 and hmac.compare_digest(given[0], self._expected)
        )

    def _count_refused(self, message: str) -> None:
        try:
            self._store.write([], 1, [f"OTLP/gRPC request: {message}"])
        except Exception:  # counting is best effort; the client still gets its error
            logger.debug("could not record a refused request", exc_info=True)  # the writer logged why


def _not_collected_handler(signal: str, service: str) -> grpc.GenericRpcHandler:
    """`<service>/Export` answering UNIMPLEMENTED with what this receiver does take."""
    message = (
        f"this OTLP receiver collects traces only ({SERVICE_NAME}/Export); {signal} are not collected: "
        f"send them elsewhere or switch that exporter off (OTEL_{signal.upper()}_EXPORTER=none)"
    )

    def export(request: bytes, context: grpc.ServicerContext) -> bytes:
        """Refuse the call."""
        context.abort(grpc.StatusCode.UNIMPLEMENTED, message)
        return b""  # not reached: abort raises

    return grpc.method_handlers_generic_handler(
        service, {"Export": grpc.unary_unary_rpc_method_handler(export, response_serializer=None)}
    )


def start_grpc_server(
    store: TraceStore,
    host: str,
    port: int,
    token: str | None,
    limits: ReceiverLimits,
    budget: ProcessBudget,
) -> tuple[grpc.Server, int]:
    """Start the gRPC server; returns it and the port it actually bound (for port 0)."""
    service = _TraceService(store, token, limits, budget)
    bounds = grpc_limits(limits, budget)
    handler = grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            # Client-streaming on our side so the message is read only once admitted (see above).
            "Export": grpc.stream_unary_rpc_method_handler(
                service.export,
                request_deserializer=None,
                response_serializer=ExportTraceServiceResponse.SerializeToString,
            )
        },
    )
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=GRPC_WORKERS, thread_name_prefix="janux-otlp-grpc"),
        handlers=[handler, *(_not_collected_handler(k, v) for k, v in OTHER_SIGNAL_SERVICES.items())],
        maximum_concurrent_rpcs=bounds.max_concurrent_rpcs,
        options=[
            ("grpc.max_receive_message_length", bounds.max_message_bytes),
            ("grpc.so_reuseport", 0),
            # Calls not yet admitted must not receive their messages: a fixed, small window.
            ("grpc.http2.bdp_probe", 0),
            ("grpc.http2.lookahead_bytes", STREAM_WINDOW_BYTES),
            ("grpc.max_allowed_incoming_connections", limits.max_connections),
            # A connection that has not finished its HTTP/2 handshake in time is closed.
            ("grpc.server_handshake_timeout_ms", int(limits.header_timeout_s * 1000)),
            ("grpc.max_connection_idle_ms", IDLE_CONNECTION_MS),
        ],
    )
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    bound = server.add_insecure_port(address)
    if bound == 0:
        raise OSError(f"cannot bind OTLP/gRPC on {address}")
    server.start()
    return server, bound
