"""One user turn: load the thread, run the holder's loop under the turn span, bill it, save the thread.

The turn span is the root `invoke_agent {agent}` span: `janux.turn.*` for its own loop (the entry
agent's rounds, and the transfer target's after a handoff), `janux.bill.*` for the whole turn. It
ends in a `finally`, bill included, however the turn ends. A turn without a `thread_id` is not
kept by a store that keeps only named threads (the default one), and its session memories are
released when it ends.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Span

from janux.runtime._loop.context import (
    ActiveAgent,
    End,
    LoopContext,
    TurnContext,
    enter_depth,
    leave_depth,
)
from janux.runtime._loop.handoff import transfer_price
from janux.runtime._loop.loop import Step, run_loop
from janux.runtime.agent_core import AgentCore
from janux.runtime.agent_record import definitions_json
from janux.runtime.catalog import Role
from janux.runtime.deadline import cancel_reason
from janux.runtime.errors import GuardrailRefused, ModelUnavailableError, error_type_of
from janux.runtime.messages import system, text_only, user
from janux.runtime.model import Model
from janux.runtime.model_registry import resolve_model
from janux.runtime.policy import first_refusal
from janux.runtime.result import RunResult
from janux.runtime.threads import ThreadState, keeps_unnamed_threads
from janux.runtime.usage import Usage, UsageLimits
from janux.tracing.conventions import ERROR_CANCELLED
from janux.tracing.instrument.run import RunInstrumentation, trace_id_hex


async def run_turn(
    entry: AgentCore,
    input: str,
    *,
    thread_id: str | None,
    start_as: str | None,
    models: Mapping[str, Model],
    obs: RunInstrumentation,
    first_step: Step | None = None,
) -> RunResult:
    """Run one turn entered through `entry`; `first_step` lets helpers start with prepared tool calls."""
    thread = thread_id or uuid.uuid4().hex
    state = await entry.threads.load(thread)
    holder_name = start_as or (state.agent if state is not None else None) or entry.name
    span = obs.start_turn(holder_name, thread, lambda: definitions_json(entry))
    turn = TurnContext(obs=obs, run_loop=run_loop, entry=entry, thread_id=thread, input=input, models=models)
    depth_token = enter_depth(0)
    loop: LoopContext | None = None
    closing: dict[str, Any] = {"error_type": ERROR_CANCELLED}  # until the way out says otherwise
    try:
        loop = await _open_loop(turn, holder_name, state, input, span)
        end = await run_loop(loop, first_step)
        closing = {"stop_reason": end.stop_reason}
        if thread_id is not None or keeps_unnamed_threads(entry.threads):
            await entry.threads.save(thread, ThreadState(loop.active.agent.name, text_only(loop.messages)))
    except BaseException as exc:
        closing = _failure(exc)
        # A failed turn's delegations stay reachable: `errors.handoff_events_of(exc)`.
        exc.handoff_events = list(turn.events)  # type: ignore[attr-defined]
        raise
    finally:
        leave_depth(depth_token)
        if thread_id is None and not keeps_unnamed_threads(entry.threads):
            entry.sessions.forget(thread)  # nobody can name this thread again
        # The bill goes on the root whatever happened, so the exported trace always reconciles.
        obs.end_agent(span, loop.usage if loop is not None else Usage(), bill=turn.bill, **closing)
    return _result(turn, loop, end, span)


async def _open_loop(
    turn: TurnContext, holder_name: str, state: ThreadState | None, input: str, span: Span
) -> LoopContext:
    holder = turn.entry.resolve_holder(holder_name)
    refusal = await first_refusal(holder.input_guardrails, input)
    if refusal is not None:
        raise GuardrailRefused(f"input refused by guardrail: {refusal}")
    active = holder_active(turn, holder)
    history = state.messages if state is not None else []
    messages = [system(active.system), *history, user(input)]
    return LoopContext(turn=turn, active=active, messages=messages, span=span, depth=0)


def holder_active(turn: TurnContext, holder: AgentCore) -> ActiveAgent:
    """The agent that starts the turn: the entry agent, or (on a later turn) a transfer target."""
    entry = turn.entry
    entry_model = resolve_model(entry.model, turn.models, None)
    model = entry_model if holder is entry else resolve_model(holder.model, turn.models, entry_model)
    if model is None:
        declared = holder.model if holder.model is not None else entry.model
        raise ModelUnavailableError(f"agent {holder.name!r}: model {declared!r} does not resolve")
    limits = UsageLimits(max_turns=holder.max_turns)
    if holder is entry:
        return ActiveAgent.of(holder, model, Role.ENTRY, limits, depth=0, price=holder.price)
    # A target holding the thread answers as it did after the transfer: on the entry agent's model
    # and price when it has neither of its own.
    price = transfer_price(holder, entry.price)
    rules = entry.rules.tightened_by(holder.policy)  # the path from the entry agent to the holder
    return ActiveAgent.of(holder, model, Role.TARGET, limits, depth=0, price=price, rules=rules)


def _failure(exc: BaseException) -> dict[str, Any]:
    """How the turn span ends when `exc` ends the turn."""
    error_type = cancel_reason() if isinstance(exc, asyncio.CancelledError) else error_type_of(exc)
    return {"error_type": error_type, "error_message": str(exc) or error_type}


def _result(turn: TurnContext, loop: LoopContext, end: End, span: Span) -> RunResult:
    return RunResult(
        text=end.text,
        agent=loop.active.agent.name,
        thread_id=turn.thread_id,
        bill=turn.bill.copy(),
        handoff_events=turn.events,
        stop_reason=end.stop_reason,
        trace_id=trace_id_hex(span),
        rounds=loop.usage.rounds,
    )
