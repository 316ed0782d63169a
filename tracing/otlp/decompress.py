"""Whole-file zstd and gzip decompression as streams: bounded memory, linear time, honest endings.

Each read hands out at most what one small piece of compressed input produced, so a 24 KB file
that expands to 256 MiB never sits in memory at once; consumed output is tracked by an offset
(slicing off the front of a buffer on every read is quadratic). All zstd frames and gzip members
are read in turn. A file that is cut off, or that continues with bytes that are not compressed
data, ends the stream after everything before the damage was delivered, and `problem` says what
happened, so a reader keeps the complete lines before a cut.
"""

from __future__ import annotations

import io
import zlib
from typing import IO, Any

import zstandard

from janux.errors import JanuxError

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""First bytes of a zstd frame."""
GZIP_MAGIC = b"\x1f\x8b"
"""First bytes of a gzip member."""
_ZSTD_FEED_MAX = 512
# A zstd block of up to 128 KiB can be described in 4 bytes: feeding at most 512 bytes at a time
# bounds one step's output at about 16 MiB, whatever the file. Within that, the feed shrinks so a
# step yields about `_ZSTD_STEP` (small pieces reuse freed memory; 16 MiB ones fault in new pages).
_ZSTD_FEED_MIN = 16
_ZSTD_STEP = 1024 * 1024
_GZIP_FEED = 64 * 1024
_GZIP_STEP = 1024 * 1024


class DecompressedTooLarge(JanuxError, ValueError):
    """The decompressed data is larger than the reader's limit."""


class Inflating(io.RawIOBase):
    """A readable stream of decompressed bytes; subclasses produce them piece by piece (`_more`)."""

    def __init__(self, source: IO[bytes], max_total: int | None) -> None:
        super().__init__()
        self._source = source
        self._max_total = max_total
        self._pending: bytes = b""
        self._offset = 0
        self._done = False
        self.total = 0
        """Decompressed bytes handed out so far."""
        self.problem: str | None = None
        """Why the stream ended early (cut off, or followed by other data); None for a clean end."""

    def readable(self) -> bool:
        """Always readable."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Fill `buffer` with decompressed bytes; 0 at the end (clean or not: see `problem`)."""
        while self._offset >= len(self._pending):
            if self._done:
                return 0
            self._pending, self._offset = self._more(), 0
        size = min(len(buffer), len(self._pending) - self._offset)
        buffer[:size] = memoryview(self._pending)[self._offset : self._offset + size]
        self._offset += size
        self.total += size
        if self._max_total is not None and self.total > self._max_total:
            raise DecompressedTooLarge(
                f"the decompressed data exceeds the limit of {self._max_total / 2**20:,.0f} MiB"
            )
        return size

    def _more(self) -> bytes:
        raise NotImplementedError

    def _stop(self, problem: str | None = None) -> bytes:
        self._done = True
        self.problem = problem
        return b""


class ZstdStream(Inflating):
    """Every zstd frame of `source`, decompressed."""

    def __init__(self, source: IO[bytes], max_total: int | None = None) -> None:
        super().__init__(source, max_total)
        self._inflater = zstandard.ZstdDecompressor().decompressobj()
        self._in_frame = False
        self._feed = _ZSTD_FEED_MAX

    def _more(self) -> bytes:
        chunk = self._source.read(self._feed)
        fed = len(chunk)
        if not chunk:
            return self._stop("truncated zstd data: the file ends inside a frame" if self._in_frame else None)
        out = []
        try:
            while chunk:
                self._in_frame = True
                out.append(self._inflater.decompress(chunk))
                if not self._inflater.eof:
                    break
                # Frame finished: whatever follows starts a new frame.
                self._in_frame = False
                chunk = self._inflater.unused_data
                self._inflater = zstandard.ZstdDecompressor().decompressobj()
        except zstandard.ZstdError as err:
            out.append(self._stop(f"invalid zstd data after {self.total} decompressed bytes: {err}"))
        produced = b"".join(out)
        ratio = len(produced) // max(1, fed) + 1
        self._feed = max(_ZSTD_FEED_MIN, min(_ZSTD_FEED_MAX, _ZSTD_STEP // ratio))
        return produced


class GzipStream(Inflating):
    """Every gzip member of `source`, decompressed."""

    def __init__(self, source: IO[bytes], max_total: int | None = None) -> None:
        super().__init__(source, max_total)
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._started = False
        self._members = 0

    def _more(self) -> bytes:
        if self._inflater.eof:
            data = self._inflater.unused_data or self._source.read(_GZIP_FEED)
            if not data:
                return self._stop()
            self._members += 1
            self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            self._started = False
        else:
            data = self._inflater.unconsumed_tail or self._source.read(_GZIP_FEED)
        try:
            out = self._inflater.decompress(data, _GZIP_STEP)
        except zlib.error as err:
            if self._members and not self._started:
                return self._stop("the data after the last gzip member is not gzip; it was not read")
            return self._stop(f"invalid gzip data after {self.total} decompressed bytes: {err}")
        self._started = True
        if not out and not data and not self._inflater.eof:
            return self._stop("truncated gzip data: the file ends inside a member")
        return out


def decompressing(buffered: io.BufferedReader[Any], max_total: int | None) -> Inflating | None:
    """A decompressing stream over `buffered` when it starts with zstd or gzip, else None."""
    head = buffered.peek(4)[:4]
    if head.startswith(ZSTD_MAGIC):
        return ZstdStream(buffered, max_total)
    if head.startswith(GZIP_MAGIC):
        return GzipStream(buffered, max_total)
    return None
