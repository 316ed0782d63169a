"""`HandoffRecord`: what is known about one delegation or transfer, frozen at one moment.

A fallback handler receives one (the refusal it serves), `HandoffError` carries one (the handoff
that stopped the turn), and `as_event` gives the listener form that `RunResult.handoff_events` and
`exc.handoff_events` list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
        return {
            "event": event,
            "handoffId": self.id,
            "callId": self.call_id,
            "kind": self.kind,
            "tool": self.tool,
            "subagent": self.target,
            "status": self.status,
            "depth": self.depth,
            "sessionMode": self.session_mode,
            "attempts": self.attempts,
            "durationMillis": self.duration_ms,
            "output": self.output,
            "error": self.error,
            "denyReason": self.deny_reason,
            "stopReason": self.stop_reason,
        }
