"""HANDOFF_START / HANDOFF_END: one event pair per delegation or transfer, always paired.

The same `HandoffEvent` feeds three places: the span events of the tool span (through
`janux.tracing.instrument.run`), the turn's event list (`RunResult.handoff_events`) and the listeners
registered on the calling agent (and on the turn's entry agent, which hears every delegation of
the turn, nested ones included). An async listener is awaited; listener exceptions are logged and
never reach the run. `HandoffScope` is the one place a handoff is opened and closed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import Span

from janux.runtime._loop.context import BudgetCrossed, LoopContext
from janux.runtime.deadline import being_cancelled, cancel_reason, forgive_cancellation
from janux.runtime.errors import CODE_CANCELLED, HandoffError, error_type_of
from janux.runtime.handoff_record import HandoffRecord, listener_form
from janux.runtime.model import ToolCall
from janux.tracing.conventions import (
    EVENT_HANDOFF_END,
    EVENT_HANDOFF_START,
    STATUS_DENIED,
    STATUS_FAILED,
    STATUS_STARTING,
)

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


@dataclass(slots=True, frozen=True, kw_only=True)
class Ending:
    """How one delegation or transfer ends: its HANDOFF_END and its tool span."""

    status: str
    """Final `janux.handoff.status`."""
    result: str
    """Tool result text the calling model reads."""
    error_code: str | None = None
    """`error.type` of the tool span when failed or denied."""
    error: str | None = None
    """Human-readable error (failed, denied, or what a fallback recovered from)."""
    deny_reason: str | None = None
    """Rule that denied it."""
    stop_reason: str | None = None
    """Budget line that cut it."""
    output: str | None = None
    """The subagent's (or fallback's) output text."""
    attempts: int | None = None
    """Attempts to report; `None` keeps the count the event holds (a delegation counts its own)."""
    stops: bool = False
    """Whether it stops the turn (`OnFailure.RAISE`), once its HANDOFF_END is out."""

    def stopping(self) -> Ending:
        """This ending, stopping the turn."""
        return dataclasses.replace(self, stops=True)


@dataclass(slots=True, frozen=True)
class Interruption:
    """An exception that left a delegation's or transfer's work: what to report, and whether it
    goes on up once the handoff is closed."""

    code: str
    """`error.type` to report."""
    detail: str
    """Human-readable error."""
    passes: bool
    """Re-raised after the close (a cancellation of the work, a stop, a `BaseException`)."""


def interruption(exc: BaseException) -> Interruption:
    """How a handoff reports `exc` and whether it passes on.

    A cancellation of the work, a stop of the turn, a budget crossed above and any `BaseException`
    that is not an `Exception` pass on; an `Exception` (a bug in a hook) or a stray `CancelledError`
    (something awaited was cancelled elsewhere) fails this handoff only.
    """
    if isinstance(exc, asyncio.CancelledError) and being_cancelled():
        reason = cancel_reason()
        detail = CODE_CANCELLED if reason == CODE_CANCELLED else f"{CODE_CANCELLED} ({reason})"
        return Interruption(reason, detail, passes=True)
    if isinstance(exc, HandoffError):
        return Interruption(error_type_of(exc), f"stopped: {exc}", passes=True)
    if isinstance(exc, BudgetCrossed):
        return Interruption(CODE_CANCELLED, f"{CODE_CANCELLED} ({exc})", passes=True)
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, Exception | asyncio.CancelledError):
        _log.warning("handoff failed unexpectedly: %r", exc)
        forgive_cancellation()
        return Interruption(error_type_of(exc), detail, passes=False)
    return Interruption(error_type_of(exc), detail, passes=True)


class HandoffScope:
    """One delegation or transfer, from HANDOFF_START to HANDOFF_END and the end of its tool span.

    `start_handoff` opens the span and puts HANDOFF_START on it without awaiting anything; `run`
    does the rest, and closes on every way out: the work's ending, a failure it absorbs, or an
    exception it lets pass (closed first). The span event and the span's end come before the
    HANDOFF_END listeners are awaited, so a cancellation while one is awaited loses nothing.
    """

    __slots__ = ("event", "loop", "span")

    def __init__(self, loop: LoopContext, span: Span, event: HandoffEvent) -> None:
        self.loop = loop
        """The calling loop."""
        self.span = span
        """The `execute_tool` span."""
        self.event = event
        """The handoff's events (completed in place at the end)."""

    async def run(
        self, work: Callable[[], Awaitable[Ending]], failed: Callable[[Interruption], Ending]
    ) -> Ending:
        """Deliver HANDOFF_START to the listeners, do `work`, close; `failed` says how an
        interruption ends the handoff."""
        try:
            await _deliver(self.loop, listener_form(EVENT_HANDOFF_START, self.event))
            ending = await work()
        except BaseException as exc:
            stopped = interruption(exc)
            ending = failed(stopped)
            if stopped.passes:
                await self._close(ending)
                raise
        await self._close(ending)
        return ending

    async def _close(self, ending: Ending) -> None:
        event = self.event
        event.status = ending.status
        if ending.attempts is not None:
            event.attempts = ending.attempts
        event.error = ending.error
        event.deny_reason = ending.deny_reason
        event.stop_reason = ending.stop_reason
        event.output = ending.output
        event.duration_ms = round((time.perf_counter() - event.started) * 1000, 3)
        obs = self.loop.turn.obs
        obs.handoff_end(self.span, event)
        failing = ending.status in (STATUS_FAILED, STATUS_DENIED)
        obs.end_tool(
            self.span,
            result=ending.result or None,
            error_type=ending.error_code if failing else None,
            error_message=ending.error if failing else None,
            handoff=event,
        )
        await _deliver(self.loop, listener_form(EVENT_HANDOFF_END, event))


def start_handoff(
    loop: LoopContext,
    call: ToolCall,
    *,
    tool_type: str,
    kind: str,
    target: str,
    depth: int,
    session_mode: str,
) -> HandoffScope:
    """Start the tool span of a delegate or handoff call with its HANDOFF_START; `run` the rest."""
    span = start_tool_span(loop, call, tool_type)
    event = HandoffEvent(
        call_id=call.id, kind=kind, tool=call.name, target=target, depth=depth, session_mode=session_mode
    )
    loop.turn.obs.handoff_start(span, event)
    return HandoffScope(loop, span, event)


async def _deliver(loop: LoopContext, payload: dict[str, Any]) -> None:
    """Record the event on the turn, then hand it to every listener; a listener's failure (its own
    `CancelledError` included) is logged and ignored unless the work is really being cancelled."""
    loop.turn.events.append(payload)
    caller = loop.active.agent
    entry = loop.turn.entry
    listeners = caller.listeners if entry is caller else (*caller.listeners, *entry.listeners)
    for listener in listeners:
        try:
            outcome = listener(payload)
            if inspect.isawaitable(outcome):
                await outcome
        except asyncio.CancelledError as exc:
            if being_cancelled():
                raise
            forgive_cancellation()
            _log.warning("handoff listener %r raised %r; ignored", listener, exc)
        except Exception as exc:  # a listener must never break the run
            _log.warning("handoff listener %r raised %r; ignored", listener, exc)
