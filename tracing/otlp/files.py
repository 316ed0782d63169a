"""Read trace files record by record, with memory bounded by the largest record, not the file.

Formats, detected from the content (not the file name):
- OTLP/JSON lines: the Collector file exporter (`format: json`) and
  `opentelemetry-exporter-otlp-json-file`; one `TracesData` (or Tempo / Jaeger wrapper) per line.
- A single OTLP/JSON document spread over many lines (pretty-printed), up to `max_record_bytes`.
- OTLP protobuf: one `TracesData` / `ExportTraceServiceRequest` message, or the Collector file
  exporter's records, each prefixed by its length as a 4-byte big-endian unsigned integer and
  optionally zstd-compressed one by one (`format: proto` and/or `compression: zstd`).
- Any of the above compressed as a whole with zstd (`.zst`) or gzip (`.gz`).
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import zstandard

from janux.tracing.otlp.errors import DecodeError, DecodeResult
from janux.tracing.otlp.json_decode import decode_json_bytes
from janux.tracing.otlp.proto_decode import decode_proto_request

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""First bytes of a zstd frame."""
GZIP_MAGIC = b"\x1f\x8b"
"""First bytes of a gzip member."""
DEFAULT_MAX_RECORD_BYTES = 256 * 1024 * 1024
"""Largest single line, record or whole document read into memory (decompressed)."""
_READ_CHUNK = 1024 * 1024
_PROTO_FIRST_TAG = 0x0A  # field 1 (resource_spans), wire type LEN: how a bare message starts


@dataclass(slots=True)
class FileRecord:
    """One record of a trace file: its decoded spans, or why it could not be read."""

    location: str
    """`path:line` for JSON lines, `path:record N` for length-prefixed records, else `path`."""
    result: DecodeResult | None = None
    """Spans and per-span rejections, when the record itself was readable."""
    error: str | None = None
    """Why the whole record was refused (it counts as one rejected record)."""


class TraceFile:
    """An open trace file; iterate `records()` once, read `position()` for progress."""

    def __init__(self, path: str | Path, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> None:
        self.path = Path(path)
        self.max_record_bytes = max_record_bytes
        self._raw: IO[bytes] = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        self.size = self.path.stat().st_size
        """Size of the file on disk in bytes (compressed size for compressed files)."""

    def position(self) -> int:
        """Bytes of the file on disk consumed so far (for a progress bar)."""
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return self.size

    def close(self) -> None:
        """Close the file."""
        self._raw.close()

    def __enter__(self) -> TraceFile:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def records(self) -> Iterator[FileRecord]:
        """Each record of the file, in order; never raises on bad content."""
        try:
            yield from self._records()
        except (zstandard.ZstdError, OSError, EOFError, ValueError) as err:
            # Corrupt or truncated compression: what was read so far stands, the rest is reported.
            yield FileRecord(str(self.path), error=f"unreadable data after byte {self.position()}: {err}")

    def _records(self) -> Iterator[FileRecord]:
        stream = _decompressed(self._raw)
        head = stream.peek(64)[:64]
        if not head:
            return
        if head.lstrip()[:1] in (b"{", b"[") or _looks_like_text(head):
            # Text that is not JSON still goes line by line, so each bad line is reported by number.
            yield from self._json_records(stream)
        elif head[0] == _PROTO_FIRST_TAG:
            yield self._whole_proto(stream)
        else:
            yield from self._prefixed_records(stream)

    def _json_records(self, stream: io.BufferedReader) -> Iterator[FileRecord]:
        """JSON lines, or one multi-line document when the first line is an unfinished document."""
        first = stream.readline(self.max_record_bytes + 1)
        if _is_unfinished_document(first):
            yield self._whole_json(first, stream)
            return
        line_no = 0
        line: bytes | None = first
        while line:
            line_no += 1
            yield self._json_line(line, stream, line_no)
            line = stream.readline(self.max_record_bytes + 1)

    def _json_line(self, line: bytes, stream: io.BufferedReader, line_no: int) -> FileRecord:
        location = f"{self.path}:{line_no}"
        if len(line) > self.max_record_bytes and not line.endswith(b"\n"):
            _skip_line(stream)
            return FileRecord(location, error=f"line longer than {self.max_record_bytes} bytes; skipped")
        if not line.strip():
            return FileRecord(location, result=DecodeResult())
        return _decode(location, decode_json_bytes, line)

    def _whole_json(self, first: bytes, stream: io.BufferedReader) -> FileRecord:
        location = str(self.path)
        body = first + stream.read(self.max_record_bytes + 1 - len(first))
        if len(body) > self.max_record_bytes:
            return FileRecord(
                location,
                error=f"JSON document larger than {self.max_record_bytes} bytes; "
                "split it into JSON lines or raise the limit",
            )
        return _decode(location, decode_json_bytes, body)

    def _whole_proto(self, stream: io.BufferedReader) -> FileRecord:
        location = str(self.path)
        body = stream.read(self.max_record_bytes + 1)
        if len(body) > self.max_record_bytes:
            return FileRecord(location, error=f"protobuf message larger than {self.max_record_bytes} bytes")
        return _decode(location, decode_proto_request, body)

    def _prefixed_records(self, stream: io.BufferedReader) -> Iterator[FileRecord]:
        """Length-prefixed records (Collector file exporter with `format: proto` or compression)."""
        number = 0
        while True:
            header = stream.read(4)
            if not header:
                return
            number += 1
            location = f"{self.path}:record {number}"
            if len(header) < 4:
                yield FileRecord(location, error="truncated length prefix at end of file")
                return
            size = int.from_bytes(header, "big")
            if size > self.max_record_bytes:
                yield FileRecord(location, error=f"record length {size} exceeds {self.max_record_bytes}")
                return
            payload = stream.read(size)
            if len(payload) < size:
                yield FileRecord(location, error=f"truncated record: {len(payload)} of {size} bytes")
                return
            yield _decode(location, self._payload, payload)

    def _payload(self, payload: bytes) -> DecodeResult:
        """One length-prefixed payload: optionally a zstd frame, then JSON or protobuf."""
        if payload.startswith(ZSTD_MAGIC):
            try:
                reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(payload))
                payload = reader.read(self.max_record_bytes + 1)
            except zstandard.ZstdError as err:
                raise DecodeError("", f"invalid zstd frame: {err}") from None
            if len(payload) > self.max_record_bytes:
                raise DecodeError("", f"decompressed record exceeds {self.max_record_bytes} bytes")
        if payload.lstrip()[:1] == b"{":
            return decode_json_bytes(payload)
        return decode_proto_request(payload)


def _decode(location: str, decode: Callable[[bytes], DecodeResult], data: bytes) -> FileRecord:
    """Run one record's decoder, turning a structural failure into a refused record."""
    try:
        result = decode(data)
    except DecodeError as err:
        return FileRecord(location, error=str(err))
    except (zstandard.ZstdError, OSError, EOFError) as err:
        return FileRecord(location, error=f"unreadable data: {err}")
    return FileRecord(location, result=result)


def _decompressed(raw: IO[bytes]) -> io.BufferedReader:
    """`raw` as a buffered stream, transparently decompressing whole-file zstd or gzip."""
    buffered = io.BufferedReader(raw, _READ_CHUNK)  # type: ignore[arg-type,type-var]
    head = buffered.peek(4)[:4]
    if head.startswith(ZSTD_MAGIC):
        return io.BufferedReader(_ZstdStream(buffered), _READ_CHUNK)
    if head.startswith(GZIP_MAGIC):
        return io.BufferedReader(gzip.GzipFile(fileobj=buffered), _READ_CHUNK)  # type: ignore[arg-type]
    return buffered  # type: ignore[return-value]


class _ZstdStream(io.RawIOBase):
    """Streaming zstd decompression across frames that reports a truncated last frame."""

    def __init__(self, source: IO[bytes]) -> None:
        super().__init__()
        self._source = source
        self._inflater = zstandard.ZstdDecompressor().decompressobj()
        self._pending = b""
        self._in_frame = False

    def readable(self) -> bool:
        """Always readable."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Fill `buffer` with decompressed bytes; 0 at the end of a complete stream."""
        while not self._pending:
            chunk = self._source.read(_READ_CHUNK)
            if not chunk:
                if self._in_frame:
                    raise zstandard.ZstdError("truncated zstd stream")
                return 0
            self._feed(chunk)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def _feed(self, chunk: bytes) -> None:
        while chunk:
            self._in_frame = True
            self._pending += self._inflater.decompress(chunk)
            if not self._inflater.eof:
                return
            # Frame finished: whatever follows starts a new frame.
            self._in_frame = False
            chunk = self._inflater.unused_data
            self._inflater = zstandard.ZstdDecompressor().decompressobj()


def _looks_like_text(head: bytes) -> bool:
    """True when the first bytes are printable UTF-8 (binary records start with a length or a tag)."""
    if any(byte < 0x09 or 0x0D < byte < 0x20 for byte in head):
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start >= len(head) - 3  # a multi-byte character cut by the peek window
    return True


def _is_unfinished_document(first: bytes) -> bool:
    """True when the first line opens a JSON value that continues on later lines."""
    text = first.strip()
    if not text:
        return False
    try:
        json.loads(text)
    except RecursionError:
        return False
    except ValueError as err:
        # The parser ran out of input (rather than meeting a bad character): a pretty-printed document.
        return isinstance(err, json.JSONDecodeError) and err.pos >= len(text.decode("utf-8", "replace"))
    return False


def _skip_line(stream: io.BufferedReader) -> None:
    """Consume the rest of an over-long line without holding it in memory."""
    while True:
        chunk = stream.readline(_READ_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return
