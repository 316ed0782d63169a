"""How loops, delegations and transfers of an SDK run ended: pure functions over the mapping's state.

A loop's outcome is read from the exception that propagated out of its run (the SDK raises
`InputGuardrailTripwireTriggered`, `MaxTurnsExceeded`, or whatever failed) and from the error the
SDK put on its agent span; a delegation's final status is the outcome of its last attempt.
"""

from __future__ import annotations

import time

from agents.exceptions import InputGuardrailTripwireTriggered, MaxTurnsExceeded

from janux.integrations.openai_agents.state import Entry, Loop, Mark
from janux.tracing.conventions import (
    DENY_GUARDRAIL,
    ERROR_CANCELLED,
    ERROR_TOOL,
    KIND_DELEGATE,
    KIND_TRANSFER,
    SESSION_NEW,
    SESSION_REUSE,
    STATUS_COMPLETED,
    STATUS_CUT,
    STATUS_DENIED,
    STATUS_FAILED,
    STATUS_STARTING,
    STOP_MAX_TURNS,
)

AGENT_ERROR = "agent_error"
"""`error.type` of a loop the SDK marked failed when no exception reached the processor."""

MAX_TURNS_MESSAGE = "Max turns exceeded"
"""The SDK's span error message when a run hits `max_turns`."""

Outcome = tuple[str | None, str | None, str | None]
"""(error.type, status message, deny reason) of a loop; all None when it ended well."""


def loop_outcome(loop: Loop, failure: BaseException | None, cancelled: bool) -> Outcome:
    """How a loop ended; a `MaxTurnsExceeded` also sets its stop reason."""
    if cancelled:
        return ERROR_CANCELLED, "the trace ended before this run", None
    if failure is None:
        if loop.error_text is not None and loop.stop_reason is None:
            return AGENT_ERROR, loop.error_text, None
        return None, None, None
    error_type = type(failure).__name__
    if isinstance(failure, InputGuardrailTripwireTriggered):
        tripped = f"input guardrail {loop.guardrail!r}" if loop.guardrail else "an input guardrail"
        return error_type, f"{tripped} tripped", DENY_GUARDRAIL
    if isinstance(failure, MaxTurnsExceeded):
        loop.stop_reason = STOP_MAX_TURNS
    return error_type, loop.error_text or error_type, None


def record_attempt(loop: Loop, outcome: Outcome) -> None:
    """Record how a delegation attempt ended on its delegation (the last attempt decides)."""
    mark = loop.func.delegation if loop.func is not None else None
    if mark is None:
        return
    error_type, message, deny = outcome
    mark.error, mark.error_type, mark.deny_reason, mark.stop_reason = None, None, None, None
    if deny is not None:
        mark.status, mark.deny_reason, mark.error, mark.error_type = STATUS_DENIED, deny, message, deny
    elif loop.stop_reason is not None:
        mark.status, mark.stop_reason, mark.error = STATUS_CUT, loop.stop_reason, message
    elif error_type is not None:
        mark.status, mark.error, mark.error_type = STATUS_FAILED, message, error_type
    else:
        mark.status = STATUS_COMPLETED


def delegation_mark(func: Entry, target: str, depth: int) -> Mark:
    """A delegation through the function tool `func`, to `target` running at `depth`."""
    return Mark(
        id=func.sdk_id,
        call_id=func.sdk_id,
        kind=KIND_DELEGATE,
        tool=func.name,
        target=target,
        depth=depth,
        session_mode=SESSION_NEW,
        started=time.perf_counter(),
    )


def finish_delegation(mark: Mark, tool_error: str | None, output: str | None) -> None:
    """Final status, duration and output of a delegation when its tool span ends.

    A tool that failed after its attempt completed (its output extractor raised, say) failed.
    """
    if tool_error is not None and mark.status in (STATUS_STARTING, STATUS_COMPLETED):
        mark.status, mark.error, mark.error_type = STATUS_FAILED, tool_error, ERROR_TOOL
    mark.duration_ms = (time.perf_counter() - mark.started) * 1000
    mark.output = output


def transfer_mark(
    entry: Entry,
    depth: int,
    target: str | None,
    failure: BaseException | None,
    error: str | None,
    end_ns: int,
) -> Mark:
    """A transfer (SDK handoff) as it ended: completed when it named its target and nothing raised."""
    completed = target is not None and failure is None
    mark = Mark(
        id=entry.sdk_id,
        call_id=entry.sdk_id,
        kind=KIND_TRANSFER,
        tool=f"handoff.{target or 'unknown'}",
        target=target or "unknown",
        depth=depth,
        session_mode=SESSION_REUSE,
        started=0.0,
        status=STATUS_COMPLETED if completed else STATUS_FAILED,
        attempts=1 if completed else 0,
        duration_ms=max(0.0, (end_ns - entry.start_ns) / 1e6),
    )
    if not completed:
        mark.error_type = type(failure).__name__ if failure is not None else ERROR_TOOL
        mark.error = error or mark.error_type
    return mark
