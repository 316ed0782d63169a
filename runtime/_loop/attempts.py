"""Delegation attempts: each one an `invoke_agent` span under the tool span, with retries and deadlines.

An attempt runs the subagent's loop from a fresh history (or its REUSE_SESSION memory) at depth
caller + 1. A per-attempt timeout and the delegation's `max_ms` budget both cancel the attempt for
real (`janux.runtime.deadline`); the first is a failure (`timeout`, retried when retries are left), the
second a budget cut (`max_time`). A `max_turns` / `max_tokens` cut ends the delegation, not retried;
`max_tokens` counts the attempt's rounds and those of every delegation below it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import Span

from janux.runtime._loop.context import ActiveAgent, BudgetCrossed, LoopContext, enter_depth, leave_depth
from janux.runtime._loop.events import HandoffEvent
from janux.runtime.deadline import being_cancelled, cancel_reason, forgive_cancellation, run_with_deadline
from janux.runtime.definitions import HandoffPolicy, Subagent
from janux.runtime.errors import CODE_CANCELLED, CODE_TIMEOUT, DeadlineExceeded, HandoffError, error_type_of
from janux.runtime.messages import system, user
from janux.runtime.model import Message, ToolCall
from janux.runtime.tool_arguments import DelegateArguments
from janux.tracing.conventions import ERROR_TIMEOUT, STOP_MAX_TIME, STOP_MAX_TOKENS


@dataclass(slots=True, eq=False)
class Delegation:
    """One delegate tool call on its way through governance and attempts."""

    caller: LoopContext
    """The calling loop."""
    call: ToolCall
    """The model's tool call."""
    subagent: Subagent
    """The subagent definition (budget, session mode)."""
    event: HandoffEvent
    """Its HANDOFF events (depth, id, outcome)."""
    span: Span
    """The `execute_tool` span, parent of every attempt span."""
    arguments: DelegateArguments | None = None
    """The call's checked arguments (`None` until checked)."""
    started: float = field(default_factory=time.perf_counter)
    """Monotonic start, for the `max_ms` budget."""

    @property
    def attempts(self) -> int:
        """Attempts started so far (kept on the event, which reports them)."""
        return self.event.attempts

    @property
    def policy(self) -> HandoffPolicy:
        """The caller's own HandoffPolicy (retries, timeout, filter, what to do on a refusal)."""
        return self.caller.active.agent.policy

    def remaining_ms(self) -> float | None:
        """What is left of `max_ms`, or `None` when the delegation has no wall-clock budget."""
        if self.subagent.max_ms is None:
            return None
        return self.subagent.max_ms - (time.perf_counter() - self.started) * 1000


@dataclass(slots=True, frozen=True)
class AttemptEnd:
    """A finished attempt: the answer, or the budget line that cut it."""

    text: str
    """Final text of the subagent."""
    stop_reason: str | None
    """`max_turns` / `max_tokens` when cut."""
    rounds: int
    """Model rounds the attempt made."""


@dataclass(slots=True, frozen=True)
class AttemptsResult:
    """How the attempts of one delegation ended."""

    end: AttemptEnd | None = None
    """The attempt that answered or was cut by `max_turns` / `max_tokens`."""
    stop_reason: str | None = None
    """A budget cut (`max_time` included)."""
    error_code: str | None = None
    """When every attempt failed: `error.type` of the last failure."""
    errors: tuple[str, ...] = ()
    """One line per failed attempt."""


def attempt_deadline(policy_timeout_ms: float, remaining_ms: float | None) -> tuple[float | None, str]:
    """(deadline in ms or None, reason) for the next attempt: the sooner of timeout and budget."""
    timeout = policy_timeout_ms if policy_timeout_ms > 0 else None
    if remaining_ms is not None and (timeout is None or remaining_ms <= timeout):
        return remaining_ms, STOP_MAX_TIME
    return timeout, ERROR_TIMEOUT


async def run_attempts(
    d: Delegation, active: ActiveAgent, history: list[Message], task: str
) -> AttemptsResult:
    """Run attempts until one answers or is cut, or retries run out (retries only when enabled)."""
    policy = d.policy
    total = policy.max_retries + 1 if policy.enabled else 1
    errors: list[str] = []
    code = CODE_TIMEOUT
    for number in range(1, total + 1):
        deadline_ms, reason = attempt_deadline(policy.timeout_ms, d.remaining_ms())
        if reason == STOP_MAX_TIME and deadline_ms is not None and deadline_ms <= 0:
            return AttemptsResult(stop_reason=STOP_MAX_TIME)
        d.event.attempts = number
        try:
            outcome = await run_with_deadline(
                functools.partial(run_attempt, d, active, history, task, number), deadline_ms, reason
            )
        except DeadlineExceeded as exc:
            if exc.error_type == STOP_MAX_TIME:
                return AttemptsResult(stop_reason=STOP_MAX_TIME)
            errors.append(f"attempt {number}: timeout after {exc.after_ms:g} ms")
            code = CODE_TIMEOUT
            continue
        if isinstance(outcome, AttemptEnd):
            return AttemptsResult(end=outcome, stop_reason=outcome.stop_reason)
        code = error_type_of(outcome)
        errors.append(f"attempt {number}: {code}: {outcome}")
    return AttemptsResult(error_code=code, errors=tuple(errors))


async def run_attempt(
    d: Delegation, active: ActiveAgent, history: list[Message], task: str, number: int
) -> AttemptEnd | BaseException:
    """One attempt in its own `invoke_agent` span, ended on every way out; a failure is returned,
    a cancellation, a stop or a `BaseException` re-raised.

    A `CancelledError` while the attempt is not being cancelled came from something the subagent
    awaited (a model client, a tool's dependency): the attempt failed, the turn goes on.
    """
    obs = d.caller.turn.obs
    sub = d.subagent
    depth = d.event.depth
    messages = [system(active.system), *history, user(task)]
    span = obs.start_attempt(
        d.span,
        agent=active.agent.name,
        depth=depth,
        attempt=number,
        handoff_id=d.event.id,
        budget=(sub.max_turns, sub.max_tokens, int(sub.max_ms) if sub.max_ms is not None else None),
    )
    loop = LoopContext(
        turn=d.caller.turn, active=active, messages=messages, span=span, depth=depth, parent=d.caller
    )
    token = enter_depth(depth)
    closing: dict[str, Any] = {"error_type": CODE_CANCELLED}  # until the way out says otherwise
    try:
        end = await loop.turn.run_loop(loop)
        closing = {"stop_reason": end.stop_reason}
        return AttemptEnd(end.text, end.stop_reason, loop.usage.rounds)
    except BudgetCrossed as crossed:
        if crossed.owner is not loop:
            closing = {"error_type": CODE_CANCELLED, "error_message": f"{CODE_CANCELLED} ({crossed})"}
            raise
        closing = {"stop_reason": STOP_MAX_TOKENS}  # this subagent's line, crossed below it
        return AttemptEnd("", STOP_MAX_TOKENS, loop.usage.rounds)
    except BaseException as exc:
        closing, absorbed = _attempt_exit(exc)
        if absorbed:
            return exc
        raise
    finally:
        leave_depth(token)
        obs.end_agent(span, loop.usage, **closing)


def _attempt_exit(exc: BaseException) -> tuple[dict[str, Any], bool]:
    """How an attempt's span ends on `exc`, and whether the attempt absorbs it as its failure."""
    if isinstance(exc, asyncio.CancelledError):
        if not being_cancelled():
            forgive_cancellation()
            return {"error_type": error_type_of(exc), "error_message": "CancelledError"}, True
        reason = cancel_reason()
        if reason == STOP_MAX_TIME:  # a budget cut, not a failure of the attempt itself
            return {"stop_reason": STOP_MAX_TIME}, False
        return {"error_type": reason, "error_message": f"attempt cancelled: {reason}"}, False
    message = str(exc) or type(exc).__name__
    # A stop of the whole turn is never a failed (retried) attempt; nor is a BaseException.
    absorbed = isinstance(exc, Exception) and not isinstance(exc, HandoffError)
    return {"error_type": error_type_of(exc), "error_message": message}, absorbed
