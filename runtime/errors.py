"""Errors of the runtime, and the error codes a delegation tool result can carry.

Every runtime error has an `error_type`: the short machine-readable class recorded as `error.type`
on the span that failed. Tool-result error codes are what the calling model reads in
`{"subagent", "tool", "error", "detail"}`.
"""

from __future__ import annotations

from typing import Any, Final

from janux.errors import JanuxError
from janux.runtime.handoff_record import HandoffRecord
from janux.runtime.model import ModelError
from janux.tracing.conventions import (
    DENY_GUARDRAIL,
    DENY_RATE_LIMITED,
    DENY_TOOL_FORBIDDEN,
    ERROR_CANCELLED,
    ERROR_INVALID_ARGUMENTS,
    ERROR_TIMEOUT,
    ERROR_TOOL,
    ERROR_UNKNOWN_TOOL,
    STATUS_DENIED,
)

# Error codes of delegation tool results (read by the calling model, not trace-contract names).
CODE_TOOL_FORBIDDEN: Final = DENY_TOOL_FORBIDDEN
"""The tool is outside the caller's tool surface; it was never executed."""
CODE_RATE_LIMITED: Final = DENY_RATE_LIMITED
"""The caller's delegation rate limit is exhausted."""
CODE_GUARDRAIL: Final = DENY_GUARDRAIL
"""An input guardrail of the caller refused the delegated task."""
CODE_HANDOFF_DENIED: Final = "handoff_denied"
"""A HandoffPolicy rule denied the delegation (the detail names the rule)."""
CODE_SUBAGENT_MODEL_UNAVAILABLE: Final = "subagent_model_unavailable"
"""The subagent names a model that no registry entry resolves."""
CODE_HANDOFF_MODEL_UNAVAILABLE: Final = "handoff_model_unavailable"
"""The transfer target names a model that no registry entry resolves."""
CODE_HANDOFF_IGNORED: Final = "handoff_ignored"
"""A handoff call after the turn's transfer happened (same round); only one transfer is taken."""
CODE_HANDOFF_FAILED: Final = "handoff_failed"
"""`error.type` of a turn stopped by a failed delegation or transfer (`OnFailure.RAISE`)."""
CODE_TIMEOUT: Final = ERROR_TIMEOUT
"""Every attempt timed out."""
CODE_FALLBACK_UNAVAILABLE: Final = "fallback_unavailable"
"""FALLBACK_TO_PRIMARY, but the caller has neither a fallback tool of that name nor a handler."""
CODE_CANCELLED: Final = ERROR_CANCELLED
"""The delegation was cancelled from outside (its caller timed out or was cut)."""
CODE_UNKNOWN_TOOL: Final = ERROR_UNKNOWN_TOOL
"""The model called a tool name the agent does not have."""
CODE_INVALID_ARGUMENTS: Final = ERROR_INVALID_ARGUMENTS
"""The tool arguments were not valid JSON or did not match the tool's schema."""
CODE_TOOL_ERROR: Final = ERROR_TOOL
"""The tool function raised."""


class DefinitionError(JanuxError, ValueError):
    """An agent, subagent, handoff or policy definition is invalid; the message names the field."""

    error_type = "definition_error"


class UnknownAgentError(JanuxError, LookupError):
    """A turn was asked to start as an agent that the entry agent does not know."""

    error_type = "unknown_agent"


class ModelUnavailableError(JanuxError):
    """An agent's model is a name that no registry entry resolves (or the entry agent has none)."""

    error_type = "model_unavailable"


class GuardrailRefused(JanuxError):
    """An input guardrail refused the turn's input."""

    error_type = DENY_GUARDRAIL


class HandoffError(JanuxError):
    """A delegation or transfer stopped the turn (`OnFailure.RAISE`): `run()` raises this.

    `record` is the handoff as it ended (`status`, `deny_reason` for the rule, `target`,
    `attempts`, `error`); its HANDOFF_END was emitted and its spans ended before this was raised.
    """

    def __init__(self, record: HandoffRecord) -> None:
        rule = f" by {record.deny_reason}" if record.deny_reason else ""
        super().__init__(f"{record.tool} -> {record.target}: {record.status}{rule}: {record.error}")
        self.record = record
        """The handoff that stopped the turn."""
        self.error_type = CODE_HANDOFF_DENIED if record.status == STATUS_DENIED else CODE_HANDOFF_FAILED


class DeadlineExceeded(JanuxError):
    """A deadline (per-attempt timeout or the delegation's `max_ms`) cancelled the work."""

    def __init__(self, reason: str, after_ms: float) -> None:
        super().__init__(f"{reason} after {after_ms:g} ms")
        self.error_type = reason
        self.after_ms = after_ms
        """The deadline that expired, in ms."""


def handoff_events_of(exc: BaseException) -> list[dict[str, Any]]:
    """The HANDOFF_START / HANDOFF_END dicts of the turn `exc` ended (`[]` when it carries none).

    `run()` attaches them as `exc.handoff_events` to whatever it raises, so a failed turn's
    delegations stay reachable.
    """
    events = getattr(exc, "handoff_events", None)
    return list(events) if isinstance(events, list) else []


def error_type_of(exc: BaseException) -> str:
    """`error.type` for an exception: its declared type, or its class name."""
    declared = getattr(exc, "error_type", None)
    if isinstance(declared, str) and declared:
        return declared
    return type(exc).__name__


__all__ = [
    "CODE_CANCELLED",
    "CODE_FALLBACK_UNAVAILABLE",
    "CODE_GUARDRAIL",
    "CODE_HANDOFF_DENIED",
    "CODE_HANDOFF_FAILED",
    "CODE_HANDOFF_IGNORED",
    "CODE_HANDOFF_MODEL_UNAVAILABLE",
    "CODE_INVALID_ARGUMENTS",
    "CODE_RATE_LIMITED",
    "CODE_SUBAGENT_MODEL_UNAVAILABLE",
    "CODE_TIMEOUT",
    "CODE_TOOL_ERROR",
    "CODE_TOOL_FORBIDDEN",
    "CODE_UNKNOWN_TOOL",
    "DeadlineExceeded",
    "DefinitionError",
    "GuardrailRefused",
    "HandoffError",
    "JanuxError",
    "ModelError",
    "ModelUnavailableError",
    "UnknownAgentError",
    "error_type_of",
    "handoff_events_of",
]
