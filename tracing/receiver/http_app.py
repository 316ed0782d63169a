"""OTLP/HTTP `POST /v1/traces` as a Starlette app (served by uvicorn).

Accepts `application/x-protobuf` and `application/json` bodies, optionally gzip-encoded (every
member). Answers in the request's encoding (protobuf for protobuf, JSON otherwise):
`ExportTraceServiceResponse` on success (with partial success when some spans were refused) and a
`google.rpc.Status` on error: 401 (token), 408 (body too slow), 413 (size or a decode limit,
naming it), 415 (content type or encoding), 400 (malformed, naming the field), 503 (store failure,
or the memory budget stayed full: retry). `POST /v1/metrics` and `/v1/logs` get a 404 saying only
traces are received, so an SDK exporting every signal to this address logs why; `GET /health`
answers 200 while serving.

The event loop only reads bodies and answers: decompression, decoding and staging rows run on
`decoder`, a small thread pool (at most one body per thread is decompressed at once), after the
request reserved their memory from the process's `ProcessBudget` (see
`janux.tracing.receiver.budget`), so a hostile body never freezes `/health` or the other requests.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import json
import logging
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from functools import partial

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from google.rpc.status_pb2 import Status
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from janux.errors import JanuxError
from janux.tracing.otlp.decode_limits import LimitExceeded, check_json, check_proto
from janux.tracing.otlp.errors import DecodeError
from janux.tracing.otlp.json_decode import decode_json_bytes
from janux.tracing.otlp.proto_decode import decode_proto_request
from janux.tracing.receiver.budget import BudgetBusy, BudgetExceeded, ProcessBudget, Reservation
from janux.tracing.receiver.connections import RAW_AUTHORIZATION
from janux.tracing.receiver.export import Outcome, response_message, submit
from janux.tracing.receiver.gzip_body import GzipError, GzipTooLarge, gunzip
from janux.tracing.receiver.limits import ReceiverLimits
from janux.tracing.sources.store import TraceStore, WriteResult

logger = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
"""The OTLP/HTTP traces endpoint."""
OTHER_SIGNAL_PATHS = ("/v1/metrics", "/v1/logs")
"""OTLP/HTTP endpoints of the signals this receiver does not collect (answered with a clear 404)."""
HEALTH_PATH = "/health"
"""`GET` answers 200 `{"status": "ok"}` while the receiver serves (for container health checks)."""
PROTOBUF = "application/x-protobuf"
"""Content type of binary OTLP."""
JSON = "application/json"
"""Content type of OTLP/JSON."""
DECODER_THREADS = 1
"""Threads per process that decompress and decode bodies (off the event loop). One: decoding is
Python work that holds the GIL, so a second thread per process only contends with the event loop
and the store's writer (2 worker processes on 2 cores ingested ~10% less with two each, and one
process no more); parallel decoding comes from `--workers`. A hostile body is still refused in
well under a second (the limits stop it early), so one thread does not hold the others up long."""
RETRY_AFTER_S = 1
"""`Retry-After` of a 503 answered because the memory budget stayed full."""

_GRPC_INVALID_ARGUMENT = 3
_GRPC_RESOURCE_EXHAUSTED = 8
_GRPC_UNIMPLEMENTED = 12
_GRPC_UNAVAILABLE = 14
_GRPC_UNAUTHENTICATED = 16
_GRPC_DEADLINE_EXCEEDED = 4


class _Reject(JanuxError):
    """An HTTP error answer: status, gRPC-style code, message and extra headers."""

    def __init__(self, status: int, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


@dataclass(slots=True, frozen=True)
class HttpSettings:
    """What the HTTP endpoint enforces."""

    token: str | None
    """Required bearer token, or None for no authentication."""
    limits: ReceiverLimits = field(default_factory=ReceiverLimits)
    """Sizes, decode limits, memory budget, timeouts and connection caps."""
    reconnect_every: int = 0
    """End every Nth answered export's keep-alive connection (`Connection: close`); 0 never.

    With several receiver processes on one socket, a connection stays with the process that
    accepted it, and a burst of new connections mostly goes to one process. A client told to
    reconnect lands on whichever process is free to accept first, so the load evens out."""


def build_http_app(
    store: TraceStore, settings: HttpSettings, budget: ProcessBudget, decoder: Executor
) -> Starlette:
    """The Starlette app serving `POST /v1/traces` into `store`; requests reserve memory from
    `budget` and are decoded on `decoder`."""
    answered = itertools.count(1)
    limits = settings.limits

    async def traces(request: Request) -> Response:
        """`POST /v1/traces`: check, read, decode, store, then answer."""
        content_type = _content_type(request)
        body_memory, decoded_memory = Reservation(budget.bodies), Reservation(budget.decoding)
        try:
            _check_token(request, settings.token)
            if content_type not in (PROTOBUF, JSON):
                raise _Reject(415, _GRPC_INVALID_ARGUMENT, f"unsupported content type {content_type!r}")
            gzipped = _is_gzipped(request)
            body = await _read_body(request, limits, body_memory)
            loop = asyncio.get_running_loop()
            work = partial(_decode_and_stage, store, body, gzipped, content_type, limits, decoded_memory)
            del body
            outcome, future = await loop.run_in_executor(decoder, work)
            del work
            body_memory.close()  # decoded: the body is gone, what it became is held until the commit
            outcome = await _committed(store, outcome, future)
        except _Reject as reject:
            return _status_response(reject, content_type)
        finally:
            body_memory.close()
            decoded_memory.close()
        response = _encode(response_message(outcome), content_type, 200)
        if settings.reconnect_every and next(answered) % settings.reconnect_every == 0:
            response.headers["connection"] = "close"
        return response

    return Starlette(
        routes=[
            Route(TRACES_PATH, traces, methods=["POST"]),
            *(Route(path, _not_collected, methods=["POST"]) for path in OTHER_SIGNAL_PATHS),
            Route(HEALTH_PATH, _health, methods=["GET"]),
        ]
    )


async def _not_collected(request: Request) -> Response:
    """`POST /v1/metrics` or `/v1/logs`: a 404 naming what this receiver does take."""
    signal = request.url.path.rsplit("/", 1)[-1]
    message = (
        f"this OTLP receiver collects traces only (POST {TRACES_PATH}); {signal} are not collected: "
        f"send them elsewhere or switch that exporter off (OTEL_{signal.upper()}_EXPORTER=none)"
    )
    return _status_response(_Reject(404, _GRPC_UNIMPLEMENTED, message), _content_type(request))


async def _health(request: Request) -> Response:
    """`GET /health`: the receiver is up."""
    return Response(b'{"status":"ok"}', 200, media_type=JSON)


def _content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _check_token(request: Request, token: str | None) -> None:
    """Exactly one `Authorization: Bearer TOKEN`, compared in constant time. Raw values (see
    `connections.RAW_AUTHORIZATION`) are checked as sent after the whitespace that follows the
    colon, so `Bearer TOKEN ` (trailing space), a folded or a repeated header fail."""
    if token is None:
        return
    raw = request.scope.get(RAW_AUTHORIZATION)
    if raw is not None:
        given = [value.lstrip(b" \t") for value in raw]
    else:  # the head was not seen raw (an ASGI test client): the parsed values
        given = [value.encode() for value in request.headers.getlist("authorization")]
    expected = f"Bearer {token}".encode()
    if len(given) != 1 or not hmac.compare_digest(given[0], expected):
        raise _Reject(401, _GRPC_UNAUTHENTICATED, "missing or wrong bearer token")


def _is_gzipped(request: Request) -> bool:
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "", "gzip"):
        raise _Reject(415, _GRPC_INVALID_ARGUMENT, f"unsupported content encoding {encoding!r}")
    return encoding == "gzip"


async def _read_body(request: Request, limits: ReceiverLimits, reservation: Reservation) -> bytearray:
    """The request body as sent, refusing anything larger than the limit early; its memory is
    reserved first (the declared length, else the limit), and it must arrive within the body timeout."""
    limit = limits.max_body_bytes
    declared = request.headers.get("content-length")
    size = int(declared) if declared is not None and declared.isdigit() else None
    if size is not None and size > limit:
        raise _Reject(413, _GRPC_RESOURCE_EXHAUSTED, f"body of {declared} bytes exceeds {limit}")
    await _reserve(reservation, limit if size is None else size)
    body = bytearray()
    try:
        async with asyncio.timeout(limits.body_timeout_s):
            async for chunk in request.stream():
                if len(body) + len(chunk) > limit:
                    raise _Reject(413, _GRPC_RESOURCE_EXHAUSTED, f"body exceeds {limit} bytes")
                body += chunk
    except TimeoutError:
        message = f"the request body did not arrive within {limits.body_timeout_s:g} s"
        raise _Reject(408, _GRPC_DEADLINE_EXCEEDED, message, {"connection": "close"}) from None
    reservation.shrink_to(len(body))
    return body


async def _reserve(reservation: Reservation, size: int) -> None:
    try:
        await reservation.grow_async(size)
    except BudgetBusy as busy:
        raise _Reject(503, _GRPC_UNAVAILABLE, str(busy), {"retry-after": str(RETRY_AFTER_S)}) from None
    except BudgetExceeded as too_big:
        raise _Reject(413, _GRPC_RESOURCE_EXHAUSTED, str(too_big)) from None


def _decode_and_stage(
    store: TraceStore,
    body: bytearray,
    gzipped: bool,
    content_type: str,
    limits: ReceiverLimits,
    reservation: Reservation,
) -> tuple[Outcome, Future[WriteResult]]:
    """On a decoder thread: decompress, check the limits, reserve the decoded size (which counts
    the decompressed body), decode and hand the spans to the store. Returns the answer to give
    and the commit to wait for."""
    try:
        data = gunzip(body, limits.max_body_bytes) if gzipped else body
        del body
        proto = content_type == PROTOBUF
        estimate = check_proto(data, limits.decode) if proto else check_json(data, limits.decode)
        reservation.grow(estimate)
        if proto:
            result = decode_proto_request(data, limits.decode, checked=True)
        else:
            result = decode_json_bytes(data, limits.decode, checked=True)
    except GzipTooLarge as err:
        raise _Reject(413, _GRPC_RESOURCE_EXHAUSTED, str(err)) from None
    except GzipError as err:
        raise _Reject(400, _GRPC_INVALID_ARGUMENT, f"body: {err}") from None
    except BudgetBusy as busy:
        raise _Reject(503, _GRPC_UNAVAILABLE, str(busy), {"retry-after": str(RETRY_AFTER_S)}) from None
    except BudgetExceeded as too_big:
        raise _Reject(413, _GRPC_RESOURCE_EXHAUSTED, str(too_big)) from None
    except DecodeError as err:
        raise _refused(store, err) from None
    return submit(store, result)


def _refused(store: TraceStore, err: DecodeError) -> _Reject:
    """Count a request that could not be decoded at all (one refused record); the answer names why."""
    message = str(err)
    try:
        store.submit([], 1, [f"OTLP/HTTP request: {message}"]).result()
    except Exception:  # counting is best effort; the client still gets its error
        logger.debug("could not record a refused request", exc_info=True)  # the writer logged why
    if isinstance(err, LimitExceeded):
        return _Reject(413, _GRPC_RESOURCE_EXHAUSTED, message)
    return _Reject(400, _GRPC_INVALID_ARGUMENT, message)


async def _committed(store: TraceStore, outcome: Outcome, future: Future[WriteResult]) -> Outcome:
    """Wait for the commit of a staged request; the outcome, or the error answer."""
    try:
        await asyncio.wrap_future(future)
    except Exception as err:  # the store's writer logged it (rate-limited): answer only
        raise _Reject(503, _GRPC_UNAVAILABLE, f"store unavailable: {err}") from None
    if not outcome.ok:
        raise _Reject(400, _GRPC_INVALID_ARGUMENT, outcome.message)
    return outcome


def _status_response(reject: _Reject, content_type: str) -> Response:
    status = Status(code=reject.code, message=reject.message)
    response = _encode(status, content_type, reject.status)
    response.headers.update(reject.headers)
    return response


def _encode(message: Message, content_type: str, status_code: int) -> Response:
    """A protobuf message as the response body: binary for a protobuf request, else JSON (also for
    unsupported or missing content types, so a person with curl can read the answer)."""
    if content_type != PROTOBUF:
        body = json.dumps(MessageToDict(message)).encode()
        return Response(body, status_code, media_type=JSON)
    return Response(message.SerializeToString(), status_code, media_type=PROTOBUF)
