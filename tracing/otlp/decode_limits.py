"""Limits on one decoded payload, and what it will cost in memory, told from its bytes before parsing.

A small body can describe a lot: 16 MB of empty protobuf spans are 8 million spans (1.5 GB once
parsed), 16 MB of JSON `{}` are 5 million dicts. So before a payload is parsed, `check_proto` /
`check_json` count what parsing would build (spans, messages, objects, strings) with C-speed byte
counts and a walk of the outer protobuf levels, and refuse a payload over `DecodeLimits` at once
(`LimitExceeded`). The per-span limits (attributes, events, links, nesting) are checked while
decoding: a span over them is refused and counted like any malformed span.

The returned estimate is what the receiver reserves from its per-process memory budget; its
weights were measured on the shapes that cost the most per byte (empty spans, events, nested
values) and on real GenAI spans, where it is about 1.5-2x the real peak.
"""

from __future__ import annotations

from dataclasses import dataclass

from janux.tracing.otlp.errors import DecodeError
from janux.tracing.otlp.wire import count_spans

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    """What one payload (request, file record) may hold. Defaults are far above what OpenTelemetry
    SDKs send (their own limits are 128 attributes, events and links per span; a batch is 512 spans)."""

    max_spans: int = 100_000
    """Spans in one payload; more refuses the whole payload."""
    max_attributes: int = 4_096
    """Attributes of one span, event, link or resource; more refuses that span (or resource)."""
    max_events: int = 4_096
    """Events of one span; more refuses that span."""
    max_links: int = 4_096
    """Links of one span; more refuses that span."""
    max_depth: int = 32
    """Nesting of array and kvlist values inside one attribute value; deeper refuses the span."""
    max_decoded_bytes: int = 256 * MIB
    """Estimated memory of the decoded payload; more refuses the whole payload."""


RECEIVER_LIMITS = DecodeLimits()
"""The receiver's defaults (`janux collect`)."""
FILE_LIMITS = DecodeLimits(max_spans=1_000_000, max_decoded_bytes=1024 * MIB)
"""Defaults for one record of a trace file (`janux import`, uploads): a whole trace exported from
Tempo or Jaeger can be one large document."""


class LimitExceeded(DecodeError):
    """The payload as a whole is over one of the `DecodeLimits` (HTTP 413 / RESOURCE_EXHAUSTED)."""

    def __init__(self, reason: str, limit: str) -> None:
        super().__init__("", reason)
        self.limit = limit
        """Name of the `DecodeLimits` field that was exceeded."""


# Bytes of memory per item found in the payload (parse + decoded records), see the module doc.
_PER_BODY_BYTE = 2
_PER_SPAN = 640
_PER_MESSAGE = 80
_PER_EVENT_OR_LINK = 256
_PER_JSON_OBJECT = 200
_PER_JSON_ARRAY = 72
_PER_JSON_STRING = 48
_PER_JSON_VALUE = 32

# Protobuf tag bytes of the OTLP trace fields that are messages (fields 1-15, wire type 2), except
# events (0x5a) and links (0x6a), which cost more and are counted apart. A byte with one of these
# values inside a string is counted too: the estimate errs on the safe side.
_MESSAGE_TAGS = (0x0A, 0x12, 0x1A, 0x22, 0x2A, 0x32, 0x4A, 0x7A)
_EVENT_LINK_TAGS = (0x5A, 0x6A)
_TAG_CLASSES = bytes(
    1 if byte in _MESSAGE_TAGS else 2 if byte in _EVENT_LINK_TAGS else 0 for byte in range(256)
)


def check_proto(body: bytes | bytearray, limits: DecodeLimits) -> int:
    """The estimated decoded size of a protobuf payload; raises `LimitExceeded` when it has too many
    spans or would decode to more than `max_decoded_bytes`, `DecodeError` when it is not protobuf."""
    spans = count_spans(body, limits.max_spans)
    check_span_count(spans, limits, exact=False)
    classes = body.translate(_TAG_CLASSES)
    estimate = (
        _PER_BODY_BYTE * len(body)
        + _PER_SPAN * spans
        + _PER_MESSAGE * classes.count(1)
        + _PER_EVENT_OR_LINK * classes.count(2)
    )
    return _checked(estimate, limits)


def check_json(body: bytes | bytearray | str, limits: DecodeLimits) -> int:
    """The estimated decoded size of a JSON payload; raises `LimitExceeded` when it would decode to
    more than `max_decoded_bytes` (spans are counted after parsing: see the decoders)."""
    data = body.encode() if isinstance(body, str) else body
    estimate = (
        _PER_BODY_BYTE * len(data)
        + _PER_JSON_OBJECT * data.count(b"{")
        + _PER_JSON_ARRAY * data.count(b"[")
        + _PER_JSON_STRING * (data.count(b'"') // 2)
        + _PER_JSON_VALUE * data.count(b",")
    )
    return _checked(estimate, limits)


def _checked(estimate: int, limits: DecodeLimits) -> int:
    if estimate > limits.max_decoded_bytes:
        raise LimitExceeded(
            f"would decode to about {estimate / MIB:,.0f} MiB, more than the limit of "
            f"{limits.max_decoded_bytes / MIB:,.0f} MiB (max_decoded_bytes)",
            "max_decoded_bytes",
        )
    return estimate


def check_span_count(spans: int, limits: DecodeLimits, *, exact: bool = True) -> None:
    """Raise `LimitExceeded` when `spans` is over `max_spans` (`exact`: the count is complete)."""
    if spans > limits.max_spans:
        count = f"{spans:,}" if exact else f"more than {limits.max_spans:,}"
        raise LimitExceeded(
            f"{count} spans in one payload, over the limit of {limits.max_spans:,} (max_spans)", "max_spans"
        )


def too_many(count: int, most: int, what: str, limit: str) -> DecodeError:
    """The error for a span (or resource) with more `what` than `most`."""
    return DecodeError(what, f"{count:,} {what} exceed the limit of {most:,} ({limit})")
