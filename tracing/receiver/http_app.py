"""OTLP/HTTP `POST /v1/traces` as a Starlette app (served by uvicorn).

Accepts `application/x-protobuf` and `application/json` bodies, optionally gzip-encoded. Answers
in the request's encoding (protobuf for protobuf, JSON otherwise): `ExportTraceServiceResponse` on
success (with partial success when some spans were refused) and a `google.rpc.Status` on error:
401 (token), 413 (size), 415 (content type or encoding), 400 (malformed, naming the field),
503 (store failure). `POST /v1/metrics` and `/v1/logs` get a 404 saying only traces are received,
so an SDK exporting every signal to this address logs why; `GET /health` answers 200 while serving.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import json
import logging
import zlib
from dataclasses import dataclass

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from google.rpc.status_pb2 import Status
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from janux.tracing.otlp.errors import DecodeError, DecodeResult
from janux.tracing.otlp.json_decode import decode_json_bytes
from janux.tracing.otlp.proto_decode import decode_proto_request
from janux.tracing.receiver.export import response_message, submit
from janux.tracing.sources.store import TraceStore

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

_GRPC_INVALID_ARGUMENT = 3
_GRPC_RESOURCE_EXHAUSTED = 8
_GRPC_UNIMPLEMENTED = 12
_GRPC_UNAVAILABLE = 14
_GRPC_UNAUTHENTICATED = 16


class _Reject(Exception):
    """An HTTP error answer: status, gRPC-style code and message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(slots=True, frozen=True)
class HttpSettings:
    """What the HTTP endpoint enforces."""

    token: str | None
    """Required bearer token, or None for no authentication."""
    max_body_bytes: int
    """Largest body accepted, both as sent and after decompression."""
    reconnect_every: int = 0
    """End every Nth answered export's keep-alive connection (`Connection: close`); 0 never.

    With several receiver processes on one socket, a connection stays with the process that
    accepted it, and a burst of new connections mostly goes to one process. A client told to
    reconnect lands on whichever process is free to accept first, so the load evens out."""


def build_http_app(store: TraceStore, settings: HttpSettings) -> Starlette:
    """The Starlette app serving `POST /v1/traces` into `store`."""
    answered = itertools.count(1)

    async def traces(request: Request) -> Response:
        """`POST /v1/traces`: check, read, decode, store, then answer."""
        content_type = _content_type(request)
        try:
            _check_token(request, settings.token)
            if content_type not in (PROTOBUF, JSON):
                raise _Reject(415, _GRPC_INVALID_ARGUMENT, f"unsupported content type {content_type!r}")
            body = await _read_body(request, settings.max_body_bytes)
            result = await _decode(store, body, content_type)
            outcome, future = submit(store, result)
            try:
                await asyncio.wrap_future(future)
            except Exception as err:
                logger.exception("storing an export request failed")
                raise _Reject(503, _GRPC_UNAVAILABLE, f"store unavailable: {err}") from None
            if not outcome.ok:
                raise _Reject(400, _GRPC_INVALID_ARGUMENT, outcome.message)
        except _Reject as reject:
            return _status_response(reject, content_type)
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
    if token is None:
        return
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        raise _Reject(401, _GRPC_UNAUTHENTICATED, "missing or wrong bearer token")


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, decompressed, refusing anything larger than `limit` early."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _Reject(413, _GRPC_RESOURCE_EXHAUSTED, f"body of {declared} bytes exceeds {limit}")
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "", "gzip"):
        raise _Reject(415, _GRPC_INVALID_ARGUMENT, f"unsupported content encoding {encoding!r}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _Reject(413, _GRPC_RESOURCE_EXHAUSTED, f"body exceeds {limit} bytes")
        chunks.append(chunk)
    body = b"".join(chunks)
    return _gunzip(body, limit) if encoding == "gzip" else body


def _gunzip(body: bytes, limit: int) -> bytes:
    """Decompress gzip without ever holding more than `limit` bytes of output."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as err:
        raise _Reject(400, _GRPC_INVALID_ARGUMENT, f"body: invalid gzip data: {err}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise _Reject(413, _GRPC_RESOURCE_EXHAUSTED, f"decompressed body exceeds {limit} bytes")
    if not inflater.eof:
        raise _Reject(400, _GRPC_INVALID_ARGUMENT, "body: invalid gzip data: truncated stream")
    return out


async def _decode(store: TraceStore, body: bytes, content_type: str) -> DecodeResult:
    """Decode the body; a body that cannot be decoded at all is counted as one refused record."""
    try:
        if content_type == PROTOBUF:
            return decode_proto_request(body)
        return decode_json_bytes(body)
    except DecodeError as err:
        message = str(err)
    try:
        await asyncio.wrap_future(store.submit([], 1, [f"OTLP/HTTP request: {message}"]))
    except Exception:  # counting is best effort; the client still gets its 400
        logger.exception("could not record a refused request")
    raise _Reject(400, _GRPC_INVALID_ARGUMENT, message)


def _status_response(reject: _Reject, content_type: str) -> Response:
    status = Status(code=reject.code, message=reject.message)
    return _encode(status, content_type, reject.status)


def _encode(message: Message, content_type: str, status_code: int) -> Response:
    """A protobuf message as the response body: binary for a protobuf request, else JSON (also for
    unsupported or missing content types, so a person with curl can read the answer)."""
    if content_type != PROTOBUF:
        body = json.dumps(MessageToDict(message)).encode()
        return Response(body, status_code, media_type=JSON)
    return Response(message.SerializeToString(), status_code, media_type=PROTOBUF)
