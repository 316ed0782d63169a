"""What both transports do with a decoded request: store it, then say what was accepted.

The transports (HTTP and gRPC) only translate. Here: a request whose spans were all refused is
a client error (naming the first bad field); otherwise the good spans are stored and the answer
waits for their commit, with OTLP partial success when some spans were refused.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from janux.tracing.otlp.errors import DecodeResult
from janux.tracing.sources.store import TraceStore, WriteResult


@dataclass(slots=True)
class Outcome:
    """The answer to one export request, before transport encoding."""

    ok: bool
    """False: the whole request is refused as malformed (HTTP 400 / INVALID_ARGUMENT)."""
    message: str = ""
    """Why it was refused, or the partial-success message."""
    rejected: int = 0
    """Spans refused."""


def submit(store: TraceStore, result: DecodeResult) -> tuple[Outcome, Future[WriteResult]]:
    """Queue the decoded spans (and the rejection count) and return the answer to give after commit."""
    future = store.submit(result.spans, result.rejected, result.errors)
    if result.rejected and not result.spans:
        return Outcome(False, result.first_error, result.rejected), future
    message = ""
    if result.rejected:
        message = f"{result.rejected} span(s) rejected; first: {result.first_error}"
    return Outcome(True, message, result.rejected), future


def response_message(outcome: Outcome) -> ExportTraceServiceResponse:
    """The OTLP response for an accepted request (partial success when spans were refused)."""
    response = ExportTraceServiceResponse()
    if outcome.rejected:
        response.partial_success.CopyFrom(
            ExportTracePartialSuccess(rejected_spans=outcome.rejected, error_message=outcome.message)
        )
    return response
