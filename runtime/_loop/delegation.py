"""Delegate tools: a subagent run as a tool call, governed by the caller's HandoffPolicy.

Order (as the policy documents): depth = current + 1 -> HANDOFF_START -> tool surface ->
deny checks (allowed, denied, depth) -> rate limit -> input filter -> guardrails -> attempts with
per-attempt timeout -> HANDOFF_END. Only the subagent's result comes back to the caller, as JSON:
`{subagent, tool, text, steps}`, `{subagent, tool, stopReason}` or `{subagent, tool, error, detail}`.
HANDOFF_END is emitted on every path, cancellation included.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass

from janux.runtime._loop.attempts import AttemptsResult, Delegation, run_attempts
from janux.runtime._loop.context import ActiveAgent, LoopContext, current_depth
from janux.runtime._loop.events import emit_end, open_handoff
from janux.runtime._loop.primary import invoke_tool
from janux.runtime.agent_core import core_of
from janux.runtime.catalog import Role, ToolEntry
from janux.runtime.deadline import cancel_reason
from janux.runtime.definitions import DelegationRequest, OnFailure, SessionMode
from janux.runtime.errors import (
    CODE_CANCELLED,
    CODE_FALLBACK_UNAVAILABLE,
    CODE_GUARDRAIL,
    CODE_HANDOFF_DENIED,
    CODE_RATE_LIMITED,
    CODE_SUBAGENT_MODEL_UNAVAILABLE,
    CODE_TOOL_FORBIDDEN,
    error_type_of,
)
from janux.runtime.messages import user
from janux.runtime.model import Message, ToolCall
from janux.runtime.model_registry import resolve_model
from janux.runtime.policy import (
    HandoffDenied,
    InputFilterError,
    apply_input_filter,
    check_policy,
    first_refusal,
    fold_input,
)
from janux.runtime.usage import UsageLimits
from janux.tracing.conventions import (
    DENY_GUARDRAIL,
    DENY_RATE_LIMITED,
    DENY_TOOL_FORBIDDEN,
    KIND_DELEGATE,
    STATUS_COMPLETED,
    STATUS_CUT,
    STATUS_DENIED,
    STATUS_FAILED,
    STATUS_FALLBACK,
    TOOL_TYPE_DELEGATE,
)

_log = logging.getLogger("janux.runtime")


@dataclass(slots=True, frozen=True, kw_only=True)
class Outcome:
    """The final word on one delegation."""

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


def _json(d: Delegation, **fields: object) -> str:
    return json.dumps({"subagent": d.subagent.agent.name, "tool": d.call.name, **fields}, ensure_ascii=False)


def _error(d: Delegation, status: str, code: str, detail: str, deny_reason: str | None = None) -> Outcome:
    return Outcome(
        status=status,
        result=_json(d, error=code, detail=detail),
        error_code=code,
        error=detail,
        deny_reason=deny_reason,
    )


async def run_delegation(loop: LoopContext, call: ToolCall, entry: ToolEntry) -> str:
    """Run one delegate tool call inside its `execute_tool` span, HANDOFF events always paired."""
    assert entry.subagent is not None
    sub = entry.subagent
    obs = loop.turn.obs
    span, event = open_handoff(
        loop,
        call,
        tool_type=TOOL_TYPE_DELEGATE,
        kind=KIND_DELEGATE,
        target=sub.agent.name,
        depth=current_depth() + 1,
        session_mode=sub.session.value,
    )
    d = Delegation(loop, call, sub, event, span)
    try:
        outcome = await govern(d)
    except asyncio.CancelledError:
        reason = cancel_reason()
        detail = CODE_CANCELLED if reason == CODE_CANCELLED else f"{CODE_CANCELLED} ({reason})"
        _finish(d, Outcome(status=STATUS_FAILED, result="", error_code=reason, error=detail))
        obs.end_tool(span, error_type=reason, error_message=detail, handoff=event)
        raise
    except Exception as exc:
        # Governance turns every expected failure into an outcome; anything else is a bug in a
        # user hook or here. It must neither crash the turn nor leave HANDOFF_START unpaired.
        _log.warning("delegation %s failed unexpectedly: %r", call.name, exc)
        outcome = _error(d, STATUS_FAILED, error_type_of(exc), f"{type(exc).__name__}: {exc}")
    _finish(d, outcome)
    failing = outcome.status in (STATUS_FAILED, STATUS_DENIED)
    obs.end_tool(
        span,
        result=outcome.result,
        error_type=outcome.error_code if failing else None,
        error_message=outcome.error if failing else None,
        handoff=event,
    )
    return outcome.result


def _finish(d: Delegation, outcome: Outcome) -> None:
    event = d.event
    event.status = outcome.status
    event.attempts = d.attempts
    event.error = outcome.error
    event.deny_reason = outcome.deny_reason
    event.stop_reason = outcome.stop_reason
    event.output = outcome.output
    emit_end(d.caller, d.span, event)


async def govern(d: Delegation) -> Outcome:
    """Apply surface, policy, rate limit, filter and guardrails; then run the attempts."""
    try:
        task = await _admit(d)
    except HandoffDenied as denial:
        return await _denied(d, denial)
    except InputFilterError as exc:
        return await _after_failure(d, _error(d, STATUS_FAILED, exc.error_type, str(exc)))
    active = subagent_active(d)
    if active is None:
        failure = _error(
            d,
            STATUS_FAILED,
            CODE_SUBAGENT_MODEL_UNAVAILABLE,
            f"model {core_of(d.subagent.agent).model!r} does not resolve",
        )
        return await _after_failure(d, failure)
    outcome = await _run_in_session(d, active, task)
    return await _after_failure(d, outcome) if outcome.status == STATUS_FAILED else outcome


async def _admit(d: Delegation) -> str:
    """Every check before the attempts; returns the (filtered) task or raises `HandoffDenied`."""
    caller = d.caller.active
    policy = d.policy
    if d.call.name not in caller.surface.names:
        raise HandoffDenied(
            DENY_TOOL_FORBIDDEN, f"{d.call.name!r} is outside this agent's tool surface", policy_rule=False
        )
    if policy.enabled:
        check_policy(policy, d.call.name, d.event.depth)
    limiter = caller.agent.rate_window
    if limiter is not None and not limiter.try_spend():
        limit = limiter.limit
        detail = f"rate limit of {limit.max_calls} delegations per {limit.per_seconds:g} s reached"
        raise HandoffDenied(DENY_RATE_LIMITED, detail, policy_rule=False)
    task = fold_input(d.call.arguments)
    if policy.enabled and policy.input_filter is not None:
        request = DelegationRequest(d.call.name, d.subagent.agent.name, task, d.event.depth)
        task = apply_input_filter(policy, request)
    refusal = await first_refusal(caller.agent.input_guardrails, task)
    if refusal is not None:
        raise HandoffDenied(DENY_GUARDRAIL, f"refused by guardrail: {refusal}", policy_rule=False)
    return task


_DENIAL_CODES = {DENY_TOOL_FORBIDDEN: CODE_TOOL_FORBIDDEN, DENY_RATE_LIMITED: CODE_RATE_LIMITED}


async def _denied(d: Delegation, denial: HandoffDenied) -> Outcome:
    code = CODE_HANDOFF_DENIED if denial.policy_rule else _DENIAL_CODES.get(denial.rule, CODE_GUARDRAIL)
    outcome = _error(d, STATUS_DENIED, code, denial.detail, deny_reason=denial.rule)
    if denial.policy_rule and d.policy.on_denied is OnFailure.FALLBACK_TO_PRIMARY:
        return await _fallback(d, outcome)
    return outcome


async def _after_failure(d: Delegation, failure: Outcome) -> Outcome:
    if d.policy.on_error is OnFailure.FALLBACK_TO_PRIMARY:
        return await _fallback(d, failure)
    return failure


async def _fallback(d: Delegation, refused: Outcome) -> Outcome:
    """FALLBACK_TO_PRIMARY: the same call to the primary executor, or a clear 'cannot serve'."""
    tool = d.caller.active.agent.fallback_tools.get(d.call.name)
    if tool is None:
        detail = (
            f"{refused.error}; FALLBACK_TO_PRIMARY: the primary executor has no tool named {d.call.name!r}"
        )
        return _error(d, refused.status, CODE_FALLBACK_UNAVAILABLE, detail, deny_reason=refused.deny_reason)
    result, error_type, _ = await invoke_tool(tool, d.call)
    if error_type is not None:
        detail = f"{refused.error}; the primary executor's {d.call.name!r} failed too ({error_type})"
        return _error(d, refused.status, error_type, detail, deny_reason=refused.deny_reason)
    return Outcome(
        status=STATUS_FALLBACK,
        result=result,
        error=refused.error,
        deny_reason=refused.deny_reason,
        output=result,
    )


def subagent_active(d: Delegation) -> ActiveAgent | None:
    """The subagent as its loop runs it: own instructions and price, caller's filters plus its own."""
    caller = d.caller.active
    agent = core_of(d.subagent.agent)
    model = resolve_model(agent.model, d.caller.turn.models, caller.model)
    if model is None:
        return None
    limits = UsageLimits(max_turns=d.subagent.max_turns, max_tokens=d.subagent.max_tokens)
    return ActiveAgent.of(agent, model, Role.SUBAGENT, limits, inherited=caller.filters)


async def _run_in_session(d: Delegation, active: ActiveAgent, task: str) -> Outcome:
    if d.subagent.session is SessionMode.NEW_SESSION:
        return _outcome(d, await run_attempts(d, active, [], task))
    turn = d.caller.turn
    memory = turn.entry.sessions.memory(turn.thread_id, d.caller.active.agent.name, d.call.name)
    async with memory.lock:
        outcome = _outcome(d, await run_attempts(d, active, list(memory.messages), task))
        if outcome.status == STATUS_COMPLETED and outcome.output is not None:
            memory.messages += [user(task), Message("assistant", outcome.output, name=active.agent.name)]
    return outcome


def _outcome(d: Delegation, result: AttemptsResult) -> Outcome:
    if result.stop_reason is not None:
        return Outcome(
            status=STATUS_CUT, result=_json(d, stopReason=result.stop_reason), stop_reason=result.stop_reason
        )
    if result.end is not None:
        text = result.end.text
        return Outcome(
            status=STATUS_COMPLETED, result=_json(d, text=text, steps=result.end.rounds), output=text
        )
    code = result.error_code or STATUS_FAILED
    return _error(d, STATUS_FAILED, code, "; ".join(result.errors) or code)
