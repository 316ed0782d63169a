"""Delegate tools: a subagent run as a tool call, governed by the deny rules of the caller's path.

Order (as the policy documents): depth = current + 1 -> HANDOFF_START -> tool surface ->
arguments -> deny checks (allowed, denied, depth) -> rate limit -> input filter -> guardrails ->
attempts with per-attempt timeout -> HANDOFF_END. Only the subagent's result comes back to the
caller, as JSON: `{subagent, tool, text, steps}`, `{subagent, tool, stopReason}` or
`{subagent, tool, error, detail}`. HANDOFF_END is emitted on every path, cancellation, a
`BaseException` and a stop of the turn (`OnFailure.RAISE`, raised only after it) included: the
delegation is opened and closed by `events.HandoffScope`.
"""

from __future__ import annotations

import functools

from janux.runtime._loop.attempts import Delegation, run_attempts
from janux.runtime._loop.context import ActiveAgent, LoopContext, current_depth
from janux.runtime._loop.events import start_handoff
from janux.runtime._loop.outcome import (
    Outcome,
    attempts_outcome,
    denial_outcome,
    error_outcome,
    fallback_outcome,
)
from janux.runtime.agent_core import core_of
from janux.runtime.catalog import Role, ToolEntry
from janux.runtime.definitions import DelegationRequest, OnFailure, SessionMode
from janux.runtime.errors import CODE_INVALID_ARGUMENTS, CODE_SUBAGENT_MODEL_UNAVAILABLE, HandoffError
from janux.runtime.messages import user
from janux.runtime.model import Message, ToolCall
from janux.runtime.model_registry import resolve_model
from janux.runtime.policy import HandoffDenied, InputFilterError, apply_input_filter, first_refusal
from janux.runtime.tool_arguments import ToolArgumentsError, parse_delegate_arguments
from janux.runtime.usage import UsageLimits
from janux.tracing.conventions import (
    DENY_GUARDRAIL,
    DENY_RATE_LIMITED,
    DENY_TOOL_FORBIDDEN,
    KIND_DELEGATE,
    STATUS_COMPLETED,
    STATUS_FAILED,
    TOOL_TYPE_DELEGATE,
)


async def run_delegation(loop: LoopContext, call: ToolCall, entry: ToolEntry) -> str:
    """Run one delegate tool call inside its `execute_tool` span, HANDOFF events always paired."""
    assert entry.subagent is not None
    sub = entry.subagent
    scope = start_handoff(
        loop,
        call,
        tool_type=TOOL_TYPE_DELEGATE,
        kind=KIND_DELEGATE,
        target=sub.agent.name,
        depth=current_depth() + 1,
        session_mode=sub.session.value,
    )
    d = Delegation(loop, call, sub, scope.event, scope.span)
    outcome = await scope.run(
        functools.partial(govern, d), lambda why: error_outcome(d, STATUS_FAILED, why.code, why.detail)
    )
    if outcome.stops:
        raise HandoffError(scope.event.record())
    return outcome.result


async def govern(d: Delegation) -> Outcome:
    """Apply surface, arguments, deny rules, rate limit, filter and guardrails; then run the attempts."""
    try:
        task = await _admit(d)
    except ToolArgumentsError as exc:
        # The model's own slip, as with a function tool: it reads the problem and can call again.
        return error_outcome(d, STATUS_FAILED, CODE_INVALID_ARGUMENTS, str(exc))
    except HandoffDenied as denial:
        return await _after_denial(d, denial)
    except InputFilterError as exc:
        return await _after_failure(d, error_outcome(d, STATUS_FAILED, exc.error_type, str(exc)))
    active = subagent_active(d)
    if active is None:
        detail = f"model {core_of(d.subagent.agent).model!r} does not resolve"
        failure = error_outcome(d, STATUS_FAILED, CODE_SUBAGENT_MODEL_UNAVAILABLE, detail)
        return await _after_failure(d, failure)
    outcome = await _run_in_session(d, active, task)
    return await _after_failure(d, outcome) if outcome.status == STATUS_FAILED else outcome


async def _admit(d: Delegation) -> str:
    """Every check before the attempts; returns the (filtered) task or raises why not."""
    caller = d.caller.active
    if d.call.name not in caller.surface.names:
        raise HandoffDenied(
            DENY_TOOL_FORBIDDEN, f"{d.call.name!r} is outside this agent's tool surface", policy_rule=False
        )
    d.arguments = parse_delegate_arguments(d.call.arguments)
    caller.rules.check(d.call.name, d.event.depth)
    limiter = caller.agent.rate_window
    if limiter is not None and not limiter.try_spend():
        limit = limiter.limit
        detail = f"rate limit of {limit.max_calls} delegations per {limit.per_seconds:g} s reached"
        raise HandoffDenied(DENY_RATE_LIMITED, detail, policy_rule=False)
    task = d.arguments.text()
    policy = d.policy
    if policy.enabled and policy.input_filter is not None:
        request = DelegationRequest(
            d.call.name, d.subagent.agent.name, task, d.event.depth, d.call.id, dict(d.arguments.raw)
        )
        task = apply_input_filter(policy, request)
    refusal = await first_refusal(caller.agent.input_guardrails, task)
    if refusal is not None:
        raise HandoffDenied(DENY_GUARDRAIL, f"refused by guardrail: {refusal}", policy_rule=False)
    return task


async def _after_denial(d: Delegation, denial: HandoffDenied) -> Outcome:
    """A denial: the caller reads it, the primary executor serves the call, or the turn stops.

    Only the policy's own rules fall back, so a fallback cannot get around the surface, the rate
    limit or a guardrail; a stop applies to every denial.
    """
    outcome = denial_outcome(d, denial)
    on_denied = d.policy.on_denied
    if denial.policy_rule and on_denied is OnFailure.FALLBACK_TO_PRIMARY:
        return await fallback_outcome(d, outcome)
    return outcome.stopping() if on_denied is OnFailure.RAISE else outcome


async def _after_failure(d: Delegation, failure: Outcome) -> Outcome:
    on_error = d.policy.on_error
    if on_error is OnFailure.FALLBACK_TO_PRIMARY:
        return await fallback_outcome(d, failure)
    return failure.stopping() if on_error is OnFailure.RAISE else failure


def subagent_active(d: Delegation) -> ActiveAgent | None:
    """The subagent as its loop runs it: own instructions and price, its callers' filters and deny
    rules plus its own."""
    caller = d.caller.active
    agent = core_of(d.subagent.agent)
    model = resolve_model(agent.model, d.caller.turn.models, caller.model)
    if model is None:
        return None
    limits = UsageLimits(max_turns=d.subagent.max_turns, max_tokens=d.subagent.max_tokens)
    return ActiveAgent.of(
        agent, model, Role.SUBAGENT, limits, depth=d.event.depth, price=agent.price, inherited=caller
    )


async def _run_in_session(d: Delegation, active: ActiveAgent, task: str) -> Outcome:
    if d.subagent.session is SessionMode.NEW_SESSION:
        return attempts_outcome(d, await run_attempts(d, active, [], task))
    turn = d.caller.turn
    memory = turn.entry.sessions.memory(turn.thread_id, d.caller.active.agent.name, d.call.name)
    async with memory.lock:
        outcome = attempts_outcome(d, await run_attempts(d, active, list(memory.messages), task))
        if outcome.status == STATUS_COMPLETED and outcome.output is not None:
            memory.messages += [user(task), Message("assistant", outcome.output, name=active.agent.name)]
    return outcome
