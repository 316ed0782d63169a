"""Where `janux export` writes its OTLP requests: a JSON-lines file, a length-delimited protobuf file
(each to stdout too), or an OTLP/HTTP endpoint.

A file is written under a temporary name beside it and renamed when the export completes, so a
failed export never leaves a file that looks whole. Every failure is an `ExportFailed` whose text
is the one line the command prints.
"""

from __future__ import annotations

import errno
import gzip
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol
from urllib.parse import urlsplit, urlunsplit

import zstandard
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from janux.errors import JanuxError
from janux.tracing.otlp.encode import encode_request, request_json
from janux.tracing.records import SpanRecord

FORMAT_JSON = "json"
"""OTLP/JSON lines: one `ExportTraceServiceRequest` per line."""
FORMAT_PROTOBUF = "protobuf"
"""Length-delimited protobuf: each request's bytes after their length as a 4-byte big-endian
unsigned integer, the records the Collector's file exporter writes with `format: proto`."""
TRACES_PATH = "/v1/traces"
"""The OTLP/HTTP path of traces, added to an endpoint given without a path."""
MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""Largest request written or sent (a bigger batch is split): a quarter of the receiver's default
request limit, so a request fits every OTLP receiver's default."""
RETRY_STATUSES = frozenset({429, 502, 503, 504})
"""Answers of a busy endpoint (OTLP/HTTP's retryable codes): the request is sent again."""
RETRY_ATTEMPTS = 5
"""Tries per request before a busy endpoint ends the export."""
MAX_PAUSE_S = 30.0
"""Longest pause before a retry, whatever Retry-After asks."""
_PROTOBUF = "application/x-protobuf"


class ExportFailed(JanuxError):
    """The export cannot go on; the message says what is wrong, on one line."""


class Output(Protocol):
    """A destination of OTLP requests."""

    where: str
    """Where the requests go, as the summary names it."""

    def write(self, request: ExportTraceServiceRequest) -> None:
        """Write or send one request; raises `ExportFailed`."""
        ...

    def finish(self) -> None:
        """Complete the export (a file gets its name); raises `ExportFailed`."""
        ...

    def abandon(self) -> None:
        """Give up after a failure: nothing half written stays behind."""
        ...


def requests_of(
    records: list[SpanRecord], max_bytes: int = MAX_REQUEST_BYTES
) -> Iterator[ExportTraceServiceRequest]:
    """`records` as requests of at most `max_bytes` (halved until they fit; a single span is sent
    whatever its size, for the receiver to judge)."""
    request = encode_request(records)
    if len(records) <= 1 or request.ByteSize() <= max_bytes:
        yield request
        return
    middle = len(records) // 2
    yield from requests_of(records[:middle], max_bytes)
    yield from requests_of(records[middle:], max_bytes)


class FileOutput:
    """OTLP/JSON lines or length-delimited protobuf, to a file (`None`: stdout); a file named
    `.gz` or `.zst` is compressed."""

    def __init__(self, path: str | None, file_format: str) -> None:
        self.where = path or "stdout"
        self._format = file_format
        self._path = Path(path).resolve() if path else None
        self._temp: Path | None = None
        self._raw: IO[bytes]
        try:
            self._raw = self._open()
        except OSError as err:
            raise ExportFailed(f"cannot write {path}: {err.strerror or err}") from None
        self._stream = _compressing(self._raw, self._path.suffix if self._path else "")

    def _open(self) -> IO[bytes]:
        """Stdout; a device or pipe as it is; else a temporary file beside the target, with the mode
        the target has (or a new file would get)."""
        if self._path is None:
            return sys.stdout.buffer
        if self._path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "it is a directory")
        exists = self._path.exists()
        if exists and not self._path.is_file():  # /dev/null, a named pipe: no rename possible
            return open(self._path, "wb")  # closed by finish() / abandon()
        if exists and not os.access(self._path, os.W_OK):
            raise PermissionError(errno.EACCES, "Permission denied")
        mode = stat.S_IMODE(self._path.stat().st_mode) if exists else 0o666 & ~_umask()
        handle, temp = tempfile.mkstemp(prefix=f".{self._path.name}.", suffix=".part", dir=self._path.parent)
        self._temp = Path(temp)
        os.chmod(handle, mode)
        return os.fdopen(handle, "wb")

    def write(self, request: ExportTraceServiceRequest) -> None:
        """Append one request (a line, or a length-prefixed record)."""
        if self._format == FORMAT_JSON:
            data = request_json(request).encode("utf-8") + b"\n"
        else:
            body = request.SerializeToString()
            data = len(body).to_bytes(4, "big") + body
        try:
            self._stream.write(data)
        except BrokenPipeError:  # the reader of stdout went away (`| head`): the CLI stops quietly
            raise
        except OSError as err:
            raise ExportFailed(f"cannot write {self.where}: {err.strerror or err}") from None

    def finish(self) -> None:
        """Flush, and give the file its name."""
        try:
            self._stream.flush()
            if self._path is not None:
                self._stream.close()  # a compressor writes its last frame
                self._raw.close()
            if self._temp is not None and self._path is not None:
                os.replace(self._temp, self._path)
                self._temp = None
        except OSError as err:
            raise ExportFailed(f"cannot write {self.where}: {err.strerror or err}") from None

    def abandon(self) -> None:
        """Remove the temporary file."""
        if self._path is not None:
            self._raw.close()
        if self._temp is not None:
            self._temp.unlink(missing_ok=True)
            self._temp = None


class _Writable(Protocol):
    """What a file output writes through: the file, or a compressor in front of it."""

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> object: ...

    def close(self) -> None: ...


def _compressing(raw: IO[bytes], suffix: str) -> _Writable:
    """`raw` behind a gzip or zstd compressor for a `.gz` or `.zst` file name, else `raw` itself
    (`janux import` reads both, by content)."""
    if suffix == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="wb")
    if suffix == ".zst":
        writer: _Writable = zstandard.ZstdCompressor().stream_writer(raw, closefd=False)
        return writer
    return raw


def _umask() -> int:
    """The process's file-mode creation mask (reading it means setting it: set it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def traces_url(endpoint: str) -> str:
    """`endpoint` as the URL to POST traces to: `http://host:4318` gets `/v1/traces`, a URL with a
    path is used as given (the OTLP exporters' rule for a base and a signal endpoint)."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ExportFailed(f"--endpoint {endpoint}: not an http:// or https:// URL")
    if parts.path in ("", "/"):
        parts = parts._replace(path=TRACES_PATH)
    return urlunsplit(parts)


@dataclass(slots=True)
class Refused:
    """Spans an endpoint accepted the request for but refused (OTLP partial success)."""

    spans: int = 0
    """Spans refused."""
    message: str = ""
    """The endpoint's latest reason."""


class EndpointOutput:
    """OTLP/HTTP protobuf POSTs to a collector or receiver, optionally with a bearer token."""

    def __init__(self, endpoint: str, token: str | None, timeout_s: float) -> None:
        import httpx  # only an export to an endpoint needs the HTTP client

        self.where = traces_url(endpoint)
        self.refused = Refused()
        headers = {"content-type": _PROTOBUF}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self._client = httpx.Client(headers=headers, timeout=timeout_s)
        self._errors = (httpx.HTTPError,)

    def write(self, request: ExportTraceServiceRequest) -> None:
        """POST one request, again while the endpoint says it is busy (429, 502, 503, 504: after
        its Retry-After, else a doubling pause); a refusal or a transport error ends the export."""
        body = request.SerializeToString()
        for attempt in range(1, RETRY_ATTEMPTS + 1):
            try:
                response = self._client.post(self.where, content=body)
            except self._errors as err:
                raise ExportFailed(f"cannot send to {self.where}: {err or type(err).__name__}") from None
            if response.status_code not in RETRY_STATUSES or attempt == RETRY_ATTEMPTS:
                break
            time.sleep(_pause(response.headers.get("retry-after"), attempt))
        if response.status_code != 200:
            raise ExportFailed(f"{self.where} answered {response.status_code}: {_reason(response.content)}")
        self._partial(response.content)

    def _partial(self, body: bytes) -> None:
        try:
            answer = ExportTraceServiceResponse.FromString(body)
        except Exception:  # an answer that is not a response message: the request was accepted
            return
        if answer.partial_success.rejected_spans:
            self.refused.spans += answer.partial_success.rejected_spans
            self.refused.message = answer.partial_success.error_message

    def finish(self) -> None:
        """Close the connection."""
        self._client.close()

    def abandon(self) -> None:
        """Close the connection (what was sent stays sent)."""
        self._client.close()


def _pause(retry_after: str | None, attempt: int) -> float:
    """Seconds to wait before try `attempt + 1`: Retry-After when it is a number of seconds."""
    try:
        asked = float(retry_after) if retry_after is not None else None
    except ValueError:  # an HTTP date, or nonsense: the doubling pause
        asked = None
    pause = asked if asked is not None and asked >= 0 else 0.5 * 2 ** (attempt - 1)
    return min(pause, MAX_PAUSE_S)


def _reason(body: bytes) -> str:
    """The message of an OTLP error answer (a `google.rpc.Status`), else the start of its text."""
    from google.rpc.status_pb2 import Status

    try:
        message = Status.FromString(body).message
    except Exception:  # not a protobuf Status (a proxy's page, JSON): show its start
        message = ""
    text = message or body[:200].decode("utf-8", "replace")
    return " ".join(text.split()) or "(no message)"
