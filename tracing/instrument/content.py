"""Content capture: whether prompt, task, argument and output text may reach a span, and how much.

Off by default. Switched on by the GenAI instrumentation convention
(`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`) or an explicit setting. When on, a
user-supplied redaction hook runs first and the result is truncated to `max_length` characters
(`JANUX_CAPTURE_MAX_LENGTH`). With capture off, `ContentCapture.capture` returns `None` for every
value, so no text ever reaches a span or an event.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from janux.tracing.conventions import CAPTURE_CONTENT_ENV, CAPTURE_MAX_LENGTH_ENV

_log = logging.getLogger("janux.tracing")

DEFAULT_MAX_LENGTH = 4096
"""Truncation length (characters) when capture is on and no length is configured."""

TRUNCATION_MARK = "…"
"""Appended to a truncated value; the whole result still fits in `max_length`."""

Redactor = Callable[[str], str]
"""A redaction hook: receives the raw text, returns what may be recorded."""

_TRUE_WORDS = frozenset({"true", "1", "yes", "on"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentCapture:
    """Whether and how content text is recorded on spans and events."""

    enabled: bool = False
    """Record content at all. Off unless switched on explicitly or by the environment."""
    max_length: int = DEFAULT_MAX_LENGTH
    """Longest recorded value in characters (after redaction), including the truncation mark."""
    redact: Redactor | None = None
    """Runs on every value before truncation; an exception drops the value (never records it raw)."""

    def __post_init__(self) -> None:
        if self.max_length < 1:
            raise ValueError(f"max_length: must be >= 1, got {self.max_length}")

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, redact: Redactor | None = None
    ) -> ContentCapture:
        """Capture settings from the environment (the GenAI convention plus JANUX_CAPTURE_MAX_LENGTH)."""
        env = os.environ if environ is None else environ
        enabled = env.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _TRUE_WORDS
        return cls(enabled=enabled, max_length=_max_length_from(env), redact=redact)

    def capture(self, value: str | None) -> str | None:
        """The text to record for `value`, or `None` when nothing may be recorded."""
        if not self.enabled or value is None:
            return None
        if self.redact is not None:
            try:
                value = self.redact(value)
            except Exception as exc:  # a broken hook must never leak the raw text
                _warn_once(f"raised {type(exc).__name__}", f"content redaction hook raised {exc!r}")
                return None
            if not isinstance(value, str):  # nothing but text may reach a span, and never the raw value
                _warn_once("type", f"content redaction hook returned {type(value).__name__}, not str")
                return None
        if len(value) <= self.max_length:
            return value
        return value[: self.max_length - len(TRUNCATION_MARK)] + TRUNCATION_MARK


CAPTURE_OFF = ContentCapture()
"""The default: nothing recorded."""

_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    """Log a broken redaction hook once per kind of failure, not once per value."""
    if key not in _warned:
        _warned.add(key)
        _log.warning("%s; value dropped (logged once)", message)


def _max_length_from(env: Mapping[str, str]) -> int:
    raw = env.get(CAPTURE_MAX_LENGTH_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_MAX_LENGTH
    try:
        length = int(raw)
    except ValueError:
        length = 0
    if length < 1:
        _log.warning(
            "%s=%r is not a positive integer; using %d", CAPTURE_MAX_LENGTH_ENV, raw, DEFAULT_MAX_LENGTH
        )
        return DEFAULT_MAX_LENGTH
    return length


def resolve_capture(setting: ContentCapture | bool | None) -> ContentCapture:
    """Capture settings of one run: an explicit setting wins, otherwise the environment decides."""
    if isinstance(setting, ContentCapture):
        return setting
    if setting is None:
        # Read once per run: capture off (the common case) costs one variable lookup, no object.
        if os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() not in _TRUE_WORDS:
            return CAPTURE_OFF
        return ContentCapture.from_env()
    return ContentCapture(enabled=setting, max_length=_max_length_from(os.environ))
