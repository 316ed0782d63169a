"""Handoffs: transferring the conversation to a specialist for the rest of the turn.

A `handoff.<name>` call is checked in this order: the tool surface, its arguments, whether this
round already transferred, the deny rules of the caller's path, the path's `max_transfers`, the
target's model, the target's input guardrails (on the turn's input, which the target will answer).
Only a transfer that happens counts towards `max_transfers`; a refused call counts nothing. After
the round's tool calls finish, `apply_transfer` keeps user and assistant text, drops tool results
and tool-call scaffolding, and swaps the system prompt (target instructions plus a transfer note),
the tool surface (the target's own filter), the model and the price. A target may transfer again
(triage -> billing -> refunds): its deny rules are the caller's tightened by its own policy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from janux.runtime._loop.context import ActiveAgent, LoopContext, Transfer, current_depth
from janux.runtime._loop.events import Ending, start_handoff
from janux.runtime.agent_core import AgentCore, core_of
from janux.runtime.catalog import Role, ToolEntry
from janux.runtime.definitions import OnFailure
from janux.runtime.errors import (
    CODE_GUARDRAIL,
    CODE_HANDOFF_DENIED,
    CODE_HANDOFF_IGNORED,
    CODE_HANDOFF_MODEL_UNAVAILABLE,
    CODE_INVALID_ARGUMENTS,
    CODE_TOOL_FORBIDDEN,
    HandoffError,
)
from janux.runtime.messages import system, text_only, transfer_note
from janux.runtime.model import Model, ToolCall
from janux.runtime.model_registry import resolve_model
from janux.runtime.policy import HandoffDenied, first_refusal
from janux.runtime.tool_arguments import ToolArgumentsError, parse_handoff_reason
from janux.runtime.usage import Price, UsageLimits
from janux.tracing.conventions import (
    DENY_GUARDRAIL,
    DENY_TOOL_FORBIDDEN,
    KIND_TRANSFER,
    SESSION_REUSE,
    STATUS_COMPLETED,
    STATUS_DENIED,
    STATUS_FAILED,
    TOOL_TYPE_HANDOFF,
)


@dataclass(slots=True, frozen=True)
class _Decision:
    status: str
    error: str | None = None
    code: str | None = None
    deny_reason: str | None = None


async def run_transfer(loop: LoopContext, call: ToolCall, entry: ToolEntry) -> str:
    """Run one handoff call inside its `execute_tool` span, HANDOFF events always paired."""
    assert entry.handoff is not None
    target = core_of(entry.handoff.agent)
    # The target takes over this same loop (and its history), so it runs at the caller's depth.
    scope = start_handoff(
        loop,
        call,
        tool_type=TOOL_TYPE_HANDOFF,
        kind=KIND_TRANSFER,
        target=target.name,
        depth=current_depth(),
        session_mode=SESSION_REUSE,
    )

    async def decide() -> Ending:
        return _ending(target.name, call, await _decide(loop, call, entry, scope.event.depth))

    ending = await scope.run(
        decide, lambda why: _ending(target.name, call, _Decision(STATUS_FAILED, why.detail, why.code))
    )
    if _stops(loop, ending):
        raise HandoffError(scope.event.record())
    return ending.result


def _ending(target: str, call: ToolCall, decision: _Decision) -> Ending:
    """The tool result and HANDOFF_END of a decision."""
    if decision.code is None:
        result = json.dumps({"handoff": target, "status": "transferred"})
    else:
        result = json.dumps(
            {"handoff": target, "tool": call.name, "error": decision.code, "detail": decision.error},
            ensure_ascii=False,
        )
    return Ending(
        status=decision.status,
        result=result,
        error_code=decision.code,
        error=decision.error,
        deny_reason=decision.deny_reason,
        attempts=1 if decision.status == STATUS_COMPLETED else 0,
    )


def _stops(loop: LoopContext, ending: Ending) -> bool:
    """Whether the caller's policy stops the turn on this refusal (`OnFailure.RAISE`).

    Malformed arguments and a handoff ignored after the turn's transfer are the model's slips it can
    read and correct, never a stop.
    """
    policy = loop.active.agent.policy
    if ending.status == STATUS_DENIED:
        return policy.on_denied is OnFailure.RAISE
    if ending.error_code in (CODE_INVALID_ARGUMENTS, CODE_HANDOFF_IGNORED):
        return False
    return ending.status == STATUS_FAILED and policy.on_error is OnFailure.RAISE


async def _decide(loop: LoopContext, call: ToolCall, entry: ToolEntry, depth: int) -> _Decision:
    """Whether this handoff call transfers; on success the transfer is queued on the loop."""
    assert entry.handoff is not None
    target = core_of(entry.handoff.agent)
    # A call this loop may not make at all (a subagent's or a target's, or one its filter hides).
    if call.name not in loop.active.surface.names:
        detail = f"{call.name!r} is outside this agent's tool surface"
        return _Decision(STATUS_DENIED, detail, CODE_TOOL_FORBIDDEN, DENY_TOOL_FORBIDDEN)
    try:
        reason = parse_handoff_reason(call.arguments)
    except ToolArgumentsError as exc:
        return _Decision(STATUS_FAILED, str(exc), CODE_INVALID_ARGUMENTS)
    if loop.pending_transfer is not None:
        detail = "ignored: this round already transferred the conversation (one transfer per round)"
        return _Decision(STATUS_FAILED, detail, CODE_HANDOFF_IGNORED)
    try:
        loop.active.rules.check(call.name, depth)
        loop.active.rules.check_transfer(loop.turn.transfers)
    except HandoffDenied as denial:
        return _Decision(STATUS_DENIED, denial.detail, CODE_HANDOFF_DENIED, denial.rule)
    model = resolve_model(target.model, loop.turn.models, loop.active.model)
    if model is None:
        detail = f"model {target.model!r} of {target.name!r} does not resolve"
        return _Decision(STATUS_FAILED, detail, CODE_HANDOFF_MODEL_UNAVAILABLE)
    refusal = await first_refusal(target.input_guardrails, loop.turn.input)
    if refusal is not None:
        detail = f"refused by {target.name!r}'s guardrail: {refusal}"
        return _Decision(STATUS_DENIED, detail, CODE_GUARDRAIL, DENY_GUARDRAIL)
    loop.turn.transfers += 1
    loop.pending_transfer = Transfer(target, model, reason)
    return _Decision(STATUS_COMPLETED)


def transfer_price(target: AgentCore, source_price: Price | None) -> Price | None:
    """What a target's rounds cost: its own price; when it has neither a model nor a price of its
    own it answers on the model of the agent it took over from, and at that agent's price."""
    if target.price is None and target.model is None:
        return source_price
    return target.price


def target_active(
    target: AgentCore, model: Model, system_prompt: str, price: Price | None, source: ActiveAgent, depth: int
) -> ActiveAgent:
    """A transfer target as its loop runs it: own filter only, its turn limit, `price`, and the deny
    rules of the path so far (`source`'s) tightened by its own policy."""
    limits = UsageLimits(max_turns=target.max_turns)
    rules = source.rules.tightened_by(target.policy)
    return ActiveAgent.of(
        target, model, Role.TARGET, limits, depth=depth, price=price, system=system_prompt, rules=rules
    )


def apply_transfer(loop: LoopContext) -> None:
    """Swap prompt, surface, model and price; keep user/assistant text; drop tool scaffolding."""
    transfer = loop.pending_transfer
    assert transfer is not None
    loop.pending_transfer = None
    source = loop.active
    target = transfer.target
    prompt = f"{target.instructions}\n\n{transfer_note(source.agent.name, transfer.reason)}".strip()
    price = transfer_price(target, source.price)
    loop.active = target_active(target, transfer.model, prompt, price, source, loop.depth)
    loop.messages = [system(prompt), *text_only(loop.messages)]
    loop.agent_rounds = 0
    loop.holders = [*(loop.holders or [source.agent.name]), target.name]
    loop.turn.obs.set_transfer(loop.span, loop.holders)
