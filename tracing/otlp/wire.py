"""Counting the spans of an OTLP protobuf body from its wire format, without parsing it.

Parsing materializes every message: 16 MB of empty spans (2 bytes each) are 8 million Span
objects and 1.5 GB of memory before a single one is looked at. `count_spans` walks only the three
outer levels (`resource_spans` -> `scope_spans` -> `spans`), skipping each span by its length, and
stops as soon as the count passes the caller's limit, so a hostile body is refused in milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator

from janux.errors import JanuxError
from janux.tracing.otlp.errors import DecodeError

_VARINT, _FIXED64, _LEN, _START_GROUP, _END_GROUP, _FIXED32 = 0, 1, 2, 3, 4, 5
_MAX_GROUP_DEPTH = 32
# Field numbers walked into, per level (all length-delimited); every other field is skipped.
_RESOURCE_SPANS = 1  # ExportTraceServiceRequest / TracesData.resource_spans
_SCOPE_SPANS = 2  # ResourceSpans.scope_spans
_SPANS = 2  # ScopeSpans.spans


class _Malformed(JanuxError):
    """The bytes are not a valid protobuf encoding."""


def count_spans(body: bytes | bytearray, most: int) -> int:
    """The number of spans in an `ExportTraceServiceRequest` / `TracesData` body, or `most + 1` as
    soon as there are more than `most` (the rest is not read).

    Raises `DecodeError` when the body is not valid protobuf, as parsing it would.
    """
    view = body  # indexing bytes is faster than indexing a memoryview
    try:
        total = 0
        for start, end in _fields(view, 0, len(view), _RESOURCE_SPANS):
            for scope_start, scope_end in _fields(view, start, end, _SCOPE_SPANS):
                total = _count_spans(view, scope_start, scope_end, total, most)
                if total > most:
                    return total
        return total
    except (_Malformed, IndexError) as err:
        reason = str(err) if isinstance(err, _Malformed) else "truncated message"
        raise DecodeError("", f"invalid protobuf ExportTraceServiceRequest: {reason}") from None


def _varint(buf: bytes | bytearray, pos: int) -> tuple[int, int]:
    """The varint at `pos` and the position after it."""
    result = 0
    shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _Malformed("varint longer than 10 bytes")


_SPANS_TAG = _SPANS << 3 | _LEN


def _count_spans(buf: bytes | bytearray, pos: int, end: int, total: int, most: int) -> int:
    """`total` plus the spans of one ScopeSpans (`buf[pos:end]`), stopping past `most`.

    The loop every span goes through: its one-byte tag and a short length are read inline, with
    no generator or tuple per span (other fields take the general path)."""
    while pos < end:
        if buf[pos] != _SPANS_TAG:
            key, pos = _varint(buf, pos)
            if key >> 3 == 0:
                raise _Malformed("field number 0")
            pos = _skip(buf, pos, end, key >> 3, key & 7)
            continue
        length = buf[pos + 1]
        if length < 0x80:
            pos += 2 + length
        else:
            length, pos = _varint(buf, pos + 1)
            pos += length
        if pos > end:
            raise _Malformed("field runs past the end of its message")
        total += 1
        if total > most:
            return total
    return total


def _fields(buf: bytes | bytearray, pos: int, end: int, wanted: int) -> Iterator[tuple[int, int]]:
    """(start, end) of the payload of every length-delimited field number `wanted` in
    `buf[pos:end]`, checking that every other field is well formed and skipping it."""
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _Malformed("field number 0")
        if wire != _LEN:
            pos = _skip(buf, pos, end, number, wire)
            continue
        length, pos = _varint(buf, pos)
        stop = pos + length
        if stop > end:
            raise _Malformed("field runs past the end of its message")
        if number == wanted:
            yield pos, stop
        pos = stop


def _skip(buf: bytes | bytearray, pos: int, end: int, number: int, wire: int, depth: int = 0) -> int:
    """The position after the value of a field of `wire` type starting at `pos`."""
    if wire == _VARINT:
        return _varint(buf, pos)[1]
    if wire == _FIXED64:
        pos += 8
    elif wire == _FIXED32:
        pos += 4
    elif wire == _LEN:
        length, pos = _varint(buf, pos)
        pos += length
    elif wire == _START_GROUP:
        pos = _skip_group(buf, pos, end, number, depth)
    else:
        raise _Malformed(f"unexpected wire type {wire}")
    if pos > end:
        raise _Malformed("field runs past the end of its message")
    return pos


def _skip_group(buf: bytes | bytearray, pos: int, end: int, number: int, depth: int) -> int:
    """Skip a (deprecated, unknown-field) group up to its matching end tag."""
    if depth >= _MAX_GROUP_DEPTH:
        raise _Malformed("groups nested too deeply")
    while pos < end:
        key, pos = _varint(buf, pos)
        inner, wire = key >> 3, key & 7
        if wire == _END_GROUP:
            if inner != number:
                raise _Malformed("mismatched end group")
            return pos
        pos = _skip(buf, pos, end, inner, wire, depth + 1)
    raise _Malformed("unterminated group")
