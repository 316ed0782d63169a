"""Decode errors that name the offending field, and the result of decoding one payload."""

from __future__ import annotations

from dataclasses import dataclass, field

from janux.errors import JanuxError
from janux.tracing.records import SpanRecord

MAX_ERROR_MESSAGES = 20
"""How many rejection messages one result keeps; the count keeps growing past it."""


class DecodeError(JanuxError, ValueError):
    """A payload or one of its fields cannot be decoded.

    `path` is the dotted field path from the payload root (`resourceSpans[0].scopeSpans[1]
    .spans[3].traceId`); `reason` says what is wrong. `str(err)` is `"{path}: {reason}"`.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason

    def under(self, prefix: str) -> DecodeError:
        """The same error with `prefix` put in front of its path (used while unwinding)."""
        if not prefix:
            return self
        if not self.path:
            return DecodeError(prefix, self.reason)
        joiner = "" if self.path.startswith("[") else "."
        return DecodeError(f"{prefix}{joiner}{self.path}", self.reason)


@dataclass(slots=True)
class DecodeResult:
    """Spans decoded from one payload and the spans refused in it."""

    spans: list[SpanRecord] = field(default_factory=list)
    """Spans that decoded cleanly, in payload order."""
    rejected: int = 0
    """Spans (or records) refused as malformed."""
    errors: list[str] = field(default_factory=list)
    """The first `MAX_ERROR_MESSAGES` rejection messages, each naming its field."""

    def reject(self, message: str, count: int = 1) -> None:
        """Count `count` refused spans and keep `message` while there is room."""
        self.rejected += count
        if len(self.errors) < MAX_ERROR_MESSAGES:
            self.errors.append(message)

    def merge(self, other: DecodeResult) -> None:
        """Add the spans, rejections and messages of `other` to this result."""
        self.spans.extend(other.spans)
        self.rejected += other.rejected
        room = MAX_ERROR_MESSAGES - len(self.errors)
        if room > 0:
            self.errors.extend(other.errors[:room])

    @property
    def first_error(self) -> str:
        """The first rejection message, or "" when nothing was refused."""
        return self.errors[0] if self.errors else ""
