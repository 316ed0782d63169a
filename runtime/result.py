"""The result of one user turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from janux.runtime.usage import Usage


@dataclass(slots=True, frozen=True, kw_only=True)
class RunResult:
    """What a turn produced: the answer, who gave it, the bill and the handoff events."""

    text: str
    """Final text of the turn."""
    agent: str
    """Name of the agent that answered (after a transfer: the target)."""
    thread_id: str
    """Thread the turn belongs to (pass it to continue the conversation). A turn run without a
    `thread_id` gets a fresh id, which the default in-memory store does not keep: to continue a
    conversation there, name the thread from its first turn."""
    bill: Usage
    """The whole turn: parent rounds plus every delegation, each priced by its own agent's cost.
    `bill.cost` is `None` when no round was priced; `bill.unpriced_tokens` counts the rest."""
    handoff_events: list[dict[str, Any]] = field(default_factory=list)
    """HANDOFF_START / HANDOFF_END dicts of the turn, nested delegations included, in order."""
    stop_reason: str | None = None
    """`max_turns` / `max_tokens` when the turn's own loop was cut by its budget."""
    trace_id: str | None = None
    """Hex trace id of the turn's root span (None when tracing is off)."""
    rounds: int = 0
    """Model rounds of the turn's own loop (delegations not included)."""
