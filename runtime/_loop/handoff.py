"""Handoffs: transferring the conversation to a specialist for the rest of the turn.

A `handoff.<name>` call is accepted (only the turn's first one), checked against the surface and
the policy's allow/deny lists, and its model resolved (`handoff_model_unavailable` otherwise).
After the round's tool calls finish, `apply_transfer` keeps user and assistant text, drops tool
results and tool-call scaffolding, and swaps the system prompt (target instructions plus a
transfer note), the tool surface (the target's own filter) and the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from janux.runtime._loop.context import ActiveAgent, LoopContext, Transfer, current_depth
from janux.runtime._loop.events import emit_end, open_handoff
from janux.runtime.agent_core import AgentCore, core_of
from janux.runtime.catalog import Role, ToolEntry
from janux.runtime.errors import (
    CODE_HANDOFF_DENIED,
    CODE_HANDOFF_IGNORED,
    CODE_HANDOFF_MODEL_UNAVAILABLE,
    CODE_TOOL_FORBIDDEN,
)
from janux.runtime.messages import system, text_only, transfer_note
from janux.runtime.model import Model, ToolCall
from janux.runtime.model_registry import resolve_model
from janux.runtime.policy import HandoffDenied, check_policy
from janux.runtime.usage import UsageLimits
from janux.tracing.conventions import (
    DENY_TOOL_FORBIDDEN,
    KIND_TRANSFER,
    SESSION_REUSE,
    STATUS_COMPLETED,
    STATUS_DENIED,
    STATUS_FAILED,
    TOOL_TYPE_HANDOFF,
)


def _reason(arguments: str) -> str:
    """The `reason` argument; malformed arguments never fail a transfer, they become the reason."""
    try:
        data = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments.strip()
    if isinstance(data, dict):
        reason = data.get("reason")
        return reason if isinstance(reason, str) else ""
    return arguments.strip()


@dataclass(slots=True, frozen=True)
class _Decision:
    status: str
    error: str | None = None
    code: str | None = None
    deny_reason: str | None = None


async def run_transfer(loop: LoopContext, call: ToolCall, entry: ToolEntry, may_transfer: bool) -> str:
    """Run one handoff call inside its `execute_tool` span, HANDOFF events always paired."""
    assert entry.handoff is not None
    target = core_of(entry.handoff.agent)
    obs = loop.turn.obs
    # The target takes over this same loop (and its history), so it runs at the caller's depth.
    span, event = open_handoff(
        loop,
        call,
        tool_type=TOOL_TYPE_HANDOFF,
        kind=KIND_TRANSFER,
        target=target.name,
        depth=current_depth(),
        session_mode=SESSION_REUSE,
    )
    decision = _decide(loop, call, entry, event.depth, may_transfer)
    event.status = decision.status
    event.attempts = 1 if decision.status == STATUS_COMPLETED else 0
    event.error = decision.error
    event.deny_reason = decision.deny_reason
    emit_end(loop, span, event)
    if decision.code is None:
        result = json.dumps({"handoff": target.name, "status": "transferred"})
    else:
        result = json.dumps(
            {"handoff": target.name, "tool": call.name, "error": decision.code, "detail": decision.error}
        )
    obs.end_tool(span, result=result, error_type=decision.code, error_message=decision.error, handoff=event)
    return result


def _decide(loop: LoopContext, call: ToolCall, entry: ToolEntry, depth: int, may_transfer: bool) -> _Decision:
    """Whether this handoff call transfers; on success the transfer is queued on the loop."""
    assert entry.handoff is not None
    target = core_of(entry.handoff.agent)
    # A call this loop may not make at all (a subagent's or a target's, or one its filter hides) is
    # refused before the first-only rule, so it never uses up the turn's one transfer.
    if call.name not in loop.active.surface.names:
        detail = f"{call.name!r} is outside this agent's tool surface"
        return _Decision(STATUS_DENIED, detail, CODE_TOOL_FORBIDDEN, DENY_TOOL_FORBIDDEN)
    if not may_transfer:
        detail = "only the first handoff of a turn is taken; this one was ignored"
        return _Decision(STATUS_FAILED, detail, CODE_HANDOFF_IGNORED)
    loop.turn.transfer_taken = True
    try:
        policy = loop.active.agent.policy
        if policy.enabled:
            check_policy(policy, call.name, depth)
    except HandoffDenied as denial:
        return _Decision(STATUS_DENIED, denial.detail, CODE_HANDOFF_DENIED, denial.rule)
    model = resolve_model(target.model, loop.turn.models, loop.active.model)
    if model is None:
        detail = f"model {target.model!r} of {target.name!r} does not resolve"
        return _Decision(STATUS_FAILED, detail, CODE_HANDOFF_MODEL_UNAVAILABLE)
    loop.pending_transfer = Transfer(target, model, _reason(call.arguments))
    return _Decision(STATUS_COMPLETED)


def target_active(target: AgentCore, model: Model, system_prompt: str) -> ActiveAgent:
    """A transfer target as its loop runs it: own filter only, own price and turn limit."""
    limits = UsageLimits(max_turns=target.max_turns)
    return ActiveAgent.of(target, model, Role.TARGET, limits, system=system_prompt)


def apply_transfer(loop: LoopContext) -> None:
    """Swap prompt, surface and model; keep user/assistant text; drop tool scaffolding."""
    transfer = loop.pending_transfer
    assert transfer is not None
    loop.pending_transfer = None
    source = loop.active.agent.name
    target = transfer.target
    prompt = f"{target.instructions}\n\n{transfer_note(source, transfer.reason)}".strip()
    loop.active = target_active(target, transfer.model, prompt)
    loop.messages = [system(prompt), *text_only(loop.messages)]
    loop.agent_rounds = 0
    loop.transferred_from = source
    loop.turn.obs.set_transfer(loop.span, from_agent=source, to_agent=target.name)
