"""Read trace files record by record, with memory bounded by the largest record, not the file.

Formats, detected from the content (not the file name):
- OTLP/JSON lines: the Collector file exporter (`format: json`) and
  `opentelemetry-exporter-otlp-json-file`; one `TracesData` (or Tempo / Jaeger wrapper) per line.
- A single OTLP/JSON document spread over many lines (pretty-printed), up to `max_record_bytes`.
- OTLP protobuf: one `TracesData` / `ExportTraceServiceRequest` message, or the Collector file
  exporter's records, each prefixed by its length as a 4-byte big-endian unsigned integer and
  optionally zstd-compressed one by one (`format: proto` and/or `compression: zstd`).
- Any of the above compressed as a whole with zstd (`.zst`) or gzip (`.gz`), read as a stream
  (see `janux.tracing.otlp.decompress`): a file cut off keeps the complete records before the cut.

What is not a trace file gets one clear error rather than a flood: a file of zero bytes (no
record has length 0), a UTF-16 or UTF-32 text (OTLP/JSON is UTF-8), a record over the size limit.
Each record is decoded under `DecodeLimits` (`FILE_LIMITS` by default), and an optional
`max_total_bytes` caps the decompressed size of the whole file (uploads).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import zstandard

from janux.tracing.otlp.decode_limits import FILE_LIMITS, DecodeLimits
from janux.tracing.otlp.decompress import GZIP_MAGIC, ZSTD_MAGIC, Inflating, decompressing
from janux.tracing.otlp.errors import DecodeError, DecodeResult
from janux.tracing.otlp.json_decode import decode_json_bytes
from janux.tracing.otlp.proto_decode import decode_proto_request

__all__ = ["DEFAULT_MAX_RECORD_BYTES", "GZIP_MAGIC", "ZSTD_MAGIC", "FileRecord", "TraceFile"]

DEFAULT_MAX_RECORD_BYTES = 256 * 1024 * 1024
"""Largest single line, record or whole document read into memory (decompressed)."""
_READ_CHUNK = 1024 * 1024
_PROTO_FIRST_TAG = 0x0A  # field 1 (resource_spans), wire type LEN: how a bare message starts
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_NOT_UTF8 = (
    "not UTF-8: the file looks {} encoded; OTLP/JSON files are UTF-8 "
    "(convert it, e.g. iconv -f {} -t UTF-8)"
)


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

    def __init__(
        self,
        path: str | Path,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        *,
        limits: DecodeLimits = FILE_LIMITS,
        max_total_bytes: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.max_record_bytes = max_record_bytes
        self.limits = limits
        """What one record may hold (spans, attributes, decoded size...)."""
        self.max_total_bytes = max_total_bytes
        """Largest decompressed size of the whole file, or None for no limit."""
        self._raw: IO[bytes] = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        self._inflating: Inflating | None = None
        self.size = self.path.stat().st_size
        """Size of the file on disk in bytes (compressed size for compressed files)."""

    def position(self) -> int:
        """Bytes of the file on disk consumed so far (for a progress bar)."""
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return self.size

    @property
    def bytes_read(self) -> int:
        """Bytes of content read so far (after decompression for a compressed file)."""
        return self._inflating.total if self._inflating is not None else self.position()

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
        buffered = io.BufferedReader(self._raw, _READ_CHUNK)  # type: ignore[arg-type,type-var]
        self._inflating = inflating = decompressing(buffered, self.max_total_bytes)
        stream = io.BufferedReader(inflating, _READ_CHUNK) if inflating is not None else buffered
        try:
            yield from self._records(stream)
        except (zstandard.ZstdError, OSError, EOFError, ValueError) as err:
            # Unreadable data or over the size limit: what was read so far stands, the rest is reported.
            yield FileRecord(str(self.path), error=f"unreadable data after byte {self.position()}: {err}")
            return
        if inflating is not None and inflating.problem is not None:
            yield FileRecord(str(self.path), error=inflating.problem)

    def _records(self, stream: io.BufferedReader[Any]) -> Iterator[FileRecord]:
        head = stream.peek(64)[:64]
        if not head:
            return
        wide = _wide_encoding(head)
        if wide is not None:
            yield FileRecord(str(self.path), error=_NOT_UTF8.format(wide, wide))
            return
        if head.startswith(_UTF8_BOM):
            stream.read(len(_UTF8_BOM))
            head = head[len(_UTF8_BOM) :]
        if head.lstrip()[:1] in (b"{", b"[") or _looks_like_text(head):
            # Text that is not JSON still goes line by line, so each bad line is reported by number.
            yield from self._json_records(stream)
        elif head[0] == _PROTO_FIRST_TAG:
            yield self._whole_proto(stream)
        else:
            yield from self._prefixed_records(stream)

    def _json_records(self, stream: io.BufferedReader[Any]) -> Iterator[FileRecord]:
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

    def _json_line(self, line: bytes, stream: io.BufferedReader[Any], line_no: int) -> FileRecord:
        location = f"{self.path}:{line_no}"
        if len(line) > self.max_record_bytes and not line.endswith(b"\n"):
            _skip_line(stream)
            return FileRecord(location, error=f"line longer than {_size(self.max_record_bytes)} "
                              "(the record size limit); skipped")  # fmt: skip
        if not line.strip():
            return FileRecord(location, result=DecodeResult())
        if not line.endswith(b"\n") and self._inflating is not None and self._inflating.problem:
            return FileRecord(location, error="line cut off where the compressed data ends; skipped")
        return _decode(location, lambda data: decode_json_bytes(data, self.limits), line)

    def _whole_json(self, first: bytes, stream: io.BufferedReader[Any]) -> FileRecord:
        location = str(self.path)
        body = first + stream.read(self.max_record_bytes + 1 - len(first))
        if len(body) > self.max_record_bytes:
            return FileRecord(
                location,
                error=f"JSON document larger than {_size(self.max_record_bytes)} (the record size limit); "
                "split it into JSON lines or raise the limit",
            )
        return _decode(location, lambda data: decode_json_bytes(data, self.limits), body)

    def _whole_proto(self, stream: io.BufferedReader[Any]) -> FileRecord:
        location = str(self.path)
        body = stream.read(self.max_record_bytes + 1)
        if len(body) > self.max_record_bytes:
            message = f"protobuf message larger than {_size(self.max_record_bytes)} (the record size limit)"
            return FileRecord(location, error=message)
        return _decode(location, lambda data: decode_proto_request(data, self.limits), body)

    def _prefixed_records(self, stream: io.BufferedReader[Any]) -> Iterator[FileRecord]:
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
            if size == 0:
                # The Collector never writes an empty record: this is no length-prefixed trace file
                # (a file of zero bytes would otherwise read as a million empty records).
                yield FileRecord(location, error="record of length 0: not a length-prefixed OTLP file")
                return
            if size > self.max_record_bytes:
                message = f"record length {size} exceeds {self.max_record_bytes} (the record size limit)"
                yield FileRecord(location, error=f"{message}: not a length-prefixed OTLP file, or damaged")
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
            return decode_json_bytes(payload, self.limits)
        return decode_proto_request(payload, self.limits)


def _decode(location: str, decode: Callable[[bytes], DecodeResult], data: bytes) -> FileRecord:
    """Run one record's decoder, turning a structural failure into a refused record."""
    try:
        result = decode(data)
    except DecodeError as err:
        return FileRecord(location, error=str(err))
    except (zstandard.ZstdError, OSError, EOFError) as err:
        return FileRecord(location, error=f"unreadable data: {err}")
    return FileRecord(location, result=result)


def _size(count: int) -> str:
    return f"{count / 2**20:g} MiB" if count >= 2**20 else f"{count} bytes"


def _wide_encoding(head: bytes) -> str | None:
    """"UTF-16" or "UTF-32" when the first bytes are a byte-order mark or ASCII interleaved with
    zero bytes (UTF-16 without a mark), else None."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if head.startswith(_UTF16_BOMS):
        return "UTF-16"
    pairs = head[: len(head) // 2 * 2]
    if len(pairs) >= 4 and pairs[1::2].count(0) == len(pairs) // 2 and b"{" in pairs[0::2]:
        return "UTF-16"
    if len(pairs) >= 4 and pairs[0::2].count(0) == len(pairs) // 2 and b"{" in pairs[1::2]:
        return "UTF-16"
    return None


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


def _skip_line(stream: io.BufferedReader[Any]) -> None:
    """Consume the rest of an over-long line without holding it in memory."""
    while True:
        chunk = stream.readline(_READ_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return
