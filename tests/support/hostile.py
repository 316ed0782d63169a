"""Hostile OTLP bodies, built at the wire level: a few bytes each that describe a great deal."""

from __future__ import annotations

import gzip

from tests.support.otlp_build import pb_request, pb_span

BOMB_BYTES = 16 * 1024 * 1024 - 64
"""Decompressed size of the bombs: just under the receiver's default 16 MiB body limit."""
TRACE = "0af7651916cd43dd8448eb211c80319c"


def field(tag: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (tag byte, varint length, payload)."""
    out = bytearray([tag])
    size = len(payload)
    while True:
        low, size = size & 0x7F, size >> 7
        out.append(low | (0x80 if size else 0))
        if not size:
            return bytes(out) + payload


def empty_spans(total_bytes: int = BOMB_BYTES) -> bytes:
    """An ExportTraceServiceRequest of empty spans (2 bytes each): 8 million in 16 MiB."""
    return field(0x0A, field(0x12, b"\x12\x00" * ((total_bytes - 12) // 2)))


def gzip_bomb(total_bytes: int = BOMB_BYTES) -> bytes:
    """`empty_spans` gzip-compressed: about 16 KB that expand to 16 MiB."""
    return gzip.compress(empty_spans(total_bytes), 9)


def json_empty_spans(total_bytes: int = BOMB_BYTES) -> bytes:
    """An OTLP/JSON request whose spans are all `{}`: 5 million in 16 MiB."""
    head, tail = b'{"resourceSpans":[{"scopeSpans":[{"spans":[', b"]}]}]}"
    count = (total_bytes - len(head) - len(tail)) // 3
    return head + b",".join([b"{}"] * count) + tail


def events_span(events: int, spans: int = 1) -> bytes:
    """Valid spans, each with `events` empty events (the costliest per byte after empty spans)."""
    trace_id = field(0x0A, bytes.fromhex(TRACE))
    body = b"".join(
        field(0x12, trace_id + field(0x12, (n + 1).to_bytes(8, "big")) + b"\x5a\x00" * events)
        for n in range(spans)
    )
    return field(0x0A, field(0x12, body))


def valid_request(spans: int = 10, first: int = 1) -> bytes:
    """An ordinary request of one trace, span ids numbered from `first`."""
    return pb_request([pb_span(TRACE, f"{n:016x}") for n in range(first, first + spans)]).SerializeToString()
