"""HANDOFF_START / HANDOFF_END: one event pair per delegation or transfer, always paired.

The same `HandoffEvent` feeds three places: the span events of the tool span (through
`janux.tracing.instrument.run`), the turn's event list (`RunResult.handoff_events`) and the listeners
registered on the calling agent (and on the turn's entry agent, which hears every delegation of
the turn, nested ones included). An async listener is awaited; listener exceptions are logged and
never reach the run.
"""

from __future__ import annotations

import inspect
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import Span

from janux.runtime._loop.context import LoopContext
from janux.runtime.handoff_record import HandoffRecord, listener_form
from janux.runtime.model import ToolCall
from janux.tracing.conventions import EVENT_HANDOFF_END, EVENT_HANDOFF_START, STATUS_STARTING

_log = logging.getLogger("janux.runtime")


@dataclass(slots=True, eq=False)
class HandoffEvent:
    """What is known about one delegation or transfer; completed in place at the end."""

    call_id: str
    """The model's tool-call id."""
    kind: str
    """`delegate` or `transfer`."""
    tool: str
    """Tool name."""
    target: str
    """Subagent or transfer target name."""
    depth: int
    """Depth the delegated agent runs at."""
    session_mode: str
    """`new_session` or `reuse_session`."""
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Unique id shared by the events and the attempt spans."""
    status: str = STATUS_STARTING
    """`starting`, then the final status."""
    attempts: int = 0
    """Attempts run."""
    duration_ms: float = 0.0
    """Wall clock of the whole delegation."""
    error: str | None = None
    """Human-readable error when failed or denied."""
    deny_reason: str | None = None
    """Rule that denied it."""
    stop_reason: str | None = None
    """Budget line that cut it."""
    output: str | None = None
    """Output text (spans record it only with content capture on)."""
    started: float = field(default_factory=time.perf_counter)
    """Monotonic start, for `duration_ms`."""

    def record(self) -> HandoffRecord:
        """What is known now, frozen."""
        return HandoffRecord(
            id=self.id,
            call_id=self.call_id,
            kind=self.kind,
            tool=self.tool,
            target=self.target,
            status=self.status,
            depth=self.depth,
            session_mode=self.session_mode,
            attempts=self.attempts,
            duration_ms=self.duration_ms,
            error=self.error,
            deny_reason=self.deny_reason,
            stop_reason=self.stop_reason,
            output=self.output,
        )


def start_tool_span(loop: LoopContext, call: ToolCall, tool_type: str) -> Span:
    """The `execute_tool` span of one tool call, under the loop's agent span."""
    return loop.turn.obs.start_tool(
        loop.span, tool=call.name, call_id=call.id, tool_type=tool_type, arguments=call.arguments
    )


async def open_handoff(
    loop: LoopContext,
    call: ToolCall,
    *,
    tool_type: str,
    kind: str,
    target: str,
    depth: int,
    session_mode: str,
) -> tuple[Span, HandoffEvent]:
    """Start the tool span of a delegate or handoff call and emit its HANDOFF_START."""
    span = start_tool_span(loop, call, tool_type)
    event = HandoffEvent(
        call_id=call.id, kind=kind, tool=call.name, target=target, depth=depth, session_mode=session_mode
    )
    loop.turn.obs.handoff_start(span, event)
    await _deliver(loop, listener_form(EVENT_HANDOFF_START, event))
    return span, event


async def emit_end(loop: LoopContext, span: Span, event: HandoffEvent) -> None:
    """HANDOFF_END (duration filled in here) everywhere HANDOFF_START went.

    The span event comes first: if a listener is still being awaited when the work is cancelled,
    the trace already holds the pair.
    """
    event.duration_ms = round((time.perf_counter() - event.started) * 1000, 3)
    loop.turn.obs.handoff_end(span, event)
    await _deliver(loop, listener_form(EVENT_HANDOFF_END, event))


async def _deliver(loop: LoopContext, payload: dict[str, Any]) -> None:
    loop.turn.events.append(payload)
    caller = loop.active.agent
    entry = loop.turn.entry
    listeners = caller.listeners if entry is caller else (*caller.listeners, *entry.listeners)
    for listener in listeners:
        try:
            outcome = listener(payload)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception as exc:  # a listener must never break the run
            _log.warning("handoff listener %r raised %r; ignored", listener, exc)
