"""`Content-Encoding: gzip` request bodies: every member decompressed, never more than a limit.

HTTP clients and the Collector may send a body of several gzip members (RFC 1952 allows it, and
`cat a.gz b.gz` makes one); each is decompressed in turn. Bytes after the last member that are not
another member make the body invalid: acknowledging it would drop what they meant.
"""

from __future__ import annotations

import zlib

from janux.errors import JanuxError

GZIP_MAGIC = b"\x1f\x8b"
"""First bytes of a gzip member."""
_CHUNK = 1024 * 1024


class GzipError(JanuxError, ValueError):
    """The body is not valid gzip (message says why)."""


class GzipTooLarge(JanuxError, ValueError):
    """The decompressed body is larger than the limit."""


def gunzip(body: bytes | bytearray, limit: int) -> bytearray:
    """Decompress every gzip member of `body`, at most `limit` bytes in all (never holding more).

    Raises `GzipError` for invalid, truncated or trailing data and `GzipTooLarge` past `limit`.
    """
    out = bytearray()
    data = memoryview(body)
    while True:
        data = _member(data, out, limit)
        if not data:
            return out
        if bytes(data[:2]) != GZIP_MAGIC:
            raise GzipError(f"invalid gzip data: {len(data)} byte(s) of trailing data after the last member")


def _member(data: memoryview, out: bytearray, limit: int) -> memoryview:
    """Decompress one member into `out`; return the bytes after it."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending: bytes | memoryview = data
    try:
        while not inflater.eof:
            chunk = inflater.decompress(pending, _CHUNK)
            pending = inflater.unconsumed_tail
            if not chunk and not pending and not inflater.eof:
                raise GzipError("invalid gzip data: truncated stream")
            if len(out) + len(chunk) > limit:
                raise GzipTooLarge(f"decompressed body exceeds {limit} bytes")
            out += chunk
    except zlib.error as err:
        raise GzipError(f"invalid gzip data: {err}") from None
    return memoryview(inflater.unused_data)
