"""`HandoffRecord`: what is known about one delegation or transfer, frozen at one moment.

A fallback handler receives one (the refusal it serves), `HandoffError` carries one (the handoff
that stopped the turn), and `as_event` gives the listener form that `RunResult.handoff_events` and
`exc.handoff_events` list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(slots=True, frozen=True, kw_only=True)
class HandoffRecord:
    """One delegation (`kind="delegate"`) or transfer (`kind="transfer"`)."""

    id: str
    """Unique id shared by the HANDOFF events and the attempt spans."""
    call_id: str
    """The model's tool-call id."""
    kind: str
    """`delegate` or `transfer`."""
    tool: str
    """Tool name (`delegate.researcher`, `handoff.billing`)."""
    target: str
    """Subagent or transfer target name."""
    status: str
    """`starting`, `completed`, `failed`, `fallback`, `denied` or `cut`."""
    depth: int
    """Depth the delegated agent runs (or would have run) at."""
    session_mode: str
    """`new_session` or `reuse_session`."""
    attempts: int = 0
    """Attempts run."""
    duration_ms: float = 0.0
    """Wall clock of the whole handoff (0 until it ended)."""
    error: str | None = None
    """Human-readable error when failed or denied."""
    deny_reason: str | None = None
    """The rule that denied it (`allowed_tools`, `denied_tools`, `max_depth`, `tool_forbidden`,
    `rate_limited`, `guardrail`)."""
    stop_reason: str | None = None
    """Budget line that cut it."""
    output: str | None = None
    """Output text of the subagent (or of a fallback)."""

    def as_event(self, event: str) -> dict[str, Any]:
        """The listener form of HANDOFF_START / HANDOFF_END (camelCase keys, as documented)."""
        return listener_form(event, self)


class HandoffFields(Protocol):
    """The fields of a handoff (read-only here), on a record or on the run's own mutable event;
    each means what the `HandoffRecord` field of the same name means."""

    @property
    def id(self) -> str: ...

    @property
    def call_id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def tool(self) -> str: ...

    @property
    def target(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def depth(self) -> int: ...

    @property
    def session_mode(self) -> str: ...

    @property
    def attempts(self) -> int: ...

    @property
    def duration_ms(self) -> float: ...

    @property
    def error(self) -> str | None: ...

    @property
    def deny_reason(self) -> str | None: ...

    @property
    def stop_reason(self) -> str | None: ...

    @property
    def output(self) -> str | None: ...


def listener_form(event: str, handoff: HandoffFields) -> dict[str, Any]:
    """HANDOFF_START / HANDOFF_END as listeners and `handoff_events` see it (camelCase keys)."""
    return {
        "event": event,
        "handoffId": handoff.id,
        "callId": handoff.call_id,
        "kind": handoff.kind,
        "tool": handoff.tool,
        "subagent": handoff.target,
        "status": handoff.status,
        "depth": handoff.depth,
        "sessionMode": handoff.session_mode,
        "attempts": handoff.attempts,
        "durationMillis": handoff.duration_ms,
        "output": handoff.output,
        "error": handoff.error,
        "denyReason": handoff.deny_reason,
        "stopReason": handoff.stop_reason,
    }
