"""The mapping from the OpenAI Agents SDK's spans to spans of the Janux trace contract.

- task (one `Runner.run`) at the top: the root `invoke_agent {first agent}`, with `janux.turn.*`
  and `janux.bill.*`;
- agent: names the loop's agent; a later agent span of the same run took it over by a transfer;
- task (or agent) inside a function span (`agent.as_tool`): a delegation; the function's
  `execute_tool` becomes `gen_ai.tool.type=delegate` with HANDOFF_START/END, and each nested run
  is one attempt `invoke_agent`;
- generation / response: `chat {model}` with `gen_ai.usage.*` and `janux.round.cost` (or a
  labelled estimate);
- function: `execute_tool {name}`;
- handoff: `execute_tool handoff.{target}` with `gen_ai.tool.type=handoff` and
  `janux.handoff.kind=transfer`;
- turn, guardrail, custom and other spans: no span of their own (usage fallback, deny reasons);
  their children attach to the nearest span above.

Rounds are recorded (and priced) by `rounds.RoundRecorder`; how loops, delegations and transfers
ended is decided in `outcomes`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from agents.tracing import span_data

from janux.integrations.openai_agents import sdk_data as sdk
from janux.integrations.openai_agents.accounting import Pricing
from janux.integrations.openai_agents.outcomes import (
    MAX_TURNS_MESSAGE,
    delegation_mark,
    finish_delegation,
    loop_outcome,
    record_attempt,
    transfer_mark,
)
from janux.integrations.openai_agents.rounds import RoundRecorder, warn_once
from janux.integrations.openai_agents.state import Entry, Kind, Loop, TraceState, Turn
from janux.tracing.conventions import (
    ERROR_CANCELLED,
    ERROR_TOOL,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_TYPE,
    JANUX_BILL_COST_ESTIMATE,
    JANUX_DENY_REASON,
    JANUX_TURN_COST_ESTIMATE,
    STATUS_COMPLETED,
    STATUS_DENIED,
    STATUS_FAILED,
    STOP_MAX_TURNS,
    TOOL_TYPE_DELEGATE,
    TOOL_TYPE_FUNCTION,
    TOOL_TYPE_HANDOFF,
)
from janux.tracing.instrument import RunInstrumentation
from janux.tracing.instrument.run import context_of

MAX_OPEN_TRACES = 10_000
"""Traces kept open at most; beyond it the oldest is dropped (a trace whose end never came)."""

_KINDS = {
    "task": Kind.TASK,
    "agent": Kind.AGENT,
    "turn": Kind.TURN,
    "generation": Kind.CHAT,
    "response": Kind.CHAT,
    "function": Kind.FUNCTION,
    "handoff": Kind.HANDOFF,
    "guardrail": Kind.GUARDRAIL,
}

_KINDS_BY_CLASS: dict[type, Kind] = {
    span_data.TaskSpanData: Kind.TASK,
    span_data.AgentSpanData: Kind.AGENT,
    span_data.TurnSpanData: Kind.TURN,
    span_data.GenerationSpanData: Kind.CHAT,
    span_data.ResponseSpanData: Kind.CHAT,
    span_data.FunctionSpanData: Kind.FUNCTION,
    span_data.HandoffSpanData: Kind.HANDOFF,
    span_data.GuardrailSpanData: Kind.GUARDRAIL,
}
"""The same by the SDK's span data classes: one dictionary lookup instead of a property call."""


_DELEGATE_TOOL = {GEN_AI_TOOL_TYPE: TOOL_TYPE_DELEGATE}
"""Set on a function tool's span when it ends, once an agent ran inside it (it is then a delegation)."""


def _failure(outer: BaseException | None) -> BaseException | None:
    """The exception propagating through the SDK span ending now, unless it was already there at its start."""
    exc = sys.exc_info()[1]
    return exc if exc is not None and exc is not outer else None


Opener = Callable[[Any, "Entry | None", TraceState], "Entry | None"]
"""What maps an SDK span start: (SDK span, parent entry, trace state) -> the span's entry, if kept."""


def _open_plain(kind: Kind, span: Any, parent: Entry | None, state: TraceState) -> Entry | None:
    """A span without a Janux span of its own: its children attach to its parent's span."""
    if parent is None:
        return None
    return Entry(kind, parent.loop, parent.turn, parent.tool, parent.func)


def _track(state: TraceState, loop: Loop) -> None:
    """Remember an open loop of a trace; ended ones are forgotten as new ones come (a long trace
    with many runs keeps only the open ones)."""
    if len(state.loops) >= 64:
        state.loops = [known for known in state.loops if not known.closed]
    state.loops.append(loop)


class SpanMapper:
    """Turns SDK span starts and ends into Janux spans. Not thread-safe per run (the SDK runs a
    run on one event loop); distinct runs may run on distinct threads."""

    __slots__ = ("_end", "_obs", "_openers", "_rounds", "_traces")

    def __init__(self, obs: RunInstrumentation, pricing: Pricing, provider: str) -> None:
        self._obs = obs
        self._rounds = RoundRecorder(obs, pricing, provider)
        self._traces: dict[str, TraceState] = {}
        self._openers: dict[type, Opener] = {cls: self._opener(kind) for cls, kind in _KINDS_BY_CLASS.items()}
        """The start handler of each span data class (filled as new classes come)."""
        ends: dict[Kind, Callable[[Any, Entry], None]] = {
            Kind.TASK: self._end_task,
            Kind.AGENT: self._end_agent,
            Kind.TURN: self._end_turn,
            Kind.CHAT: self._end_chat,
            Kind.FUNCTION: self._end_function,
            Kind.HANDOFF: self._end_handoff,
            Kind.GUARDRAIL: self._end_guardrail,
        }
        self._end: list[Callable[[Any, Entry], None] | None] = [None] * (max(Kind) + 1)
        """The end handler of each kind, indexed by the kind (callbacks are the hot path)."""
        for kind, handler in ends.items():
            self._end[kind] = handler

    def _opener(self, kind: Kind) -> Opener:
        """The start handler of `kind`: its own, or a plain entry under the parent (no span)."""
        own: dict[Kind, Opener] = {
            Kind.TASK: self._open_task,
            Kind.AGENT: self._open_agent,
            Kind.TURN: self._open_turn,
            Kind.CHAT: self._open_chat,
            Kind.FUNCTION: self._open_function,
            Kind.HANDOFF: self._open_handoff,
        }
        return own.get(kind) or partial(_open_plain, kind)

    # -- traces ------------------------------------------------------------------------------

    def trace_started(self, trace_id: str, group_id: str | None) -> None:
        """Remember a trace; its group id (else its id) is the conversation id of its runs."""
        self._state(trace_id, group_id)

    def trace_ended(self, trace_id: str) -> None:
        """Close whatever the trace left open and forget it."""
        state = self._traces.pop(trace_id, None)
        if state is None:
            return
        if state.loop is not None:
            self._close_loop(state.loop, _failure(state.outer_exc))
        self._abandon(state)

    def _state(self, trace_id: str, group_id: str | None = None) -> TraceState:
        state = self._traces.get(trace_id)
        if state is None:
            if len(self._traces) >= MAX_OPEN_TRACES:
                oldest = next(iter(self._traces))
                warn_once("traces", "more than %d open traces: dropping the oldest", MAX_OPEN_TRACES)
                self._abandon(self._traces.pop(oldest))
            state = TraceState(group_id or trace_id, outer_exc=sys.exc_info()[1])
            self._traces[trace_id] = state
        return state

    def _abandon(self, state: TraceState) -> None:
        """End every span a trace left open (an unended span is never exported)."""
        for entry in list(state.entries.values()):
            if entry.kind is Kind.FUNCTION and entry.tool is not None:
                if entry.delegation is not None:
                    entry.delegation.status = STATUS_FAILED
                    entry.delegation.error = ERROR_CANCELLED
                    self._obs.handoff_end(entry.tool, entry.delegation)
                self._obs.end_tool(
                    entry.tool,
                    error_type=ERROR_CANCELLED,
                    handoff=entry.delegation,
                    extra=None if entry.delegation is None else _DELEGATE_TOOL,
                )
        state.entries.clear()
        for loop in reversed(state.loops):
            if not loop.closed:
                self._close_loop(loop, None, cancelled=True)

    # -- spans -------------------------------------------------------------------------------

    def span_started(self, span: Any) -> None:
        """Map one SDK span start."""
        trace_id = span.trace_id
        state = self._traces.get(trace_id) or self._state(trace_id)
        parent_id = span.parent_id
        parent = state.entries.get(parent_id) if parent_id else None
        data = span.span_data
        opener = self._openers.get(type(data))
        if opener is None:
            opener = self._openers[type(data)] = self._opener(_KINDS.get(data.type, Kind.OTHER))
        entry = opener(span, parent, state)
        if entry is not None:
            state.entries[span.span_id] = entry

    def span_ended(self, span: Any) -> None:
        """Map one SDK span end."""
        state = self._traces.get(span.trace_id)
        entry = state.entries.pop(span.span_id, None) if state is not None else None
        if entry is None or entry.loop is None:
            return
        handler = self._end[entry.kind]
        if handler is not None:
            handler(span, entry)

    # -- loops -------------------------------------------------------------------------------

    def _open_task(self, span: Any, parent: Entry | None, state: TraceState) -> Entry:
        if parent is None or parent.loop is None:
            loop = Loop(0, state.conversation_id, outer_exc=sys.exc_info()[1])
        else:
            loop = self._nested_loop(parent)
        _track(state, loop)
        return Entry(Kind.TASK, loop, outer_exc=loop.outer_exc)

    @staticmethod
    def _nested_loop(parent: Entry) -> Loop:
        caller = parent.loop
        assert caller is not None
        return Loop(
            caller.depth + 1,
            caller.conversation_id,
            parent=caller,
            parent_turn=parent.turn,
            func=parent.func,
            outer_exc=sys.exc_info()[1],
        )

    def _open_agent(self, span: Any, parent: Entry | None, state: TraceState) -> Entry:
        name = getattr(span.span_data, "name", None) or "agent"
        closes: Loop | None = None
        if parent is not None and parent.kind is Kind.TASK and parent.loop is not None:
            loop = parent.loop
        elif parent is None or parent.loop is None:
            # An SDK without task spans: the trace's top-level agents form one run.
            if state.loop is None:
                state.loop = Loop(0, state.conversation_id, outer_exc=state.outer_exc)
                _track(state, state.loop)
            loop = state.loop
        else:
            loop, closes = self._nested_without_task(parent, state)
        loop.agent = name
        if loop.span is None:
            self._open_loop_span(loop, name)
        return Entry(Kind.AGENT, loop, nested=closes, outer_exc=sys.exc_info()[1])

    def _nested_without_task(self, parent: Entry, state: TraceState) -> tuple[Loop, Loop | None]:
        """The loop of an agent run inside a tool (or other span) by an SDK without task spans."""
        func = parent.func
        if func is not None and func.nested is not None and not func.nested.closed:
            return func.nested, None
        loop = self._nested_loop(parent)
        _track(state, loop)
        if func is not None:
            func.nested = loop  # the function's end closes it
            return loop, None
        return loop, loop  # nothing above will close it: the agent's end does

    def _open_loop_span(self, loop: Loop, agent: str) -> None:
        """Open the `invoke_agent` span: a run's root, or one attempt of a delegation."""
        if loop.parent is None:
            loop.span = span = self._obs.start_turn(agent, loop.conversation_id)
            loop.ctx = context_of(span)
            return
        func = loop.func
        if func is not None and func.tool is not None:
            mark = func.delegation
            if mark is None:
                # The tool span is a delegation now: its type is set when it ends (`_DELEGATE_TOOL`).
                mark = func.delegation = delegation_mark(func, agent, loop.depth)
                self._obs.handoff_start(func.tool, mark)
            mark.attempts += 1
            loop.attempt, loop.handoff_id = mark.attempts, mark.id
            parent = func.tool_ctx
        else:
            loop.attempt = 1
            parent = loop.parent.ctx
        if parent is None:
            return
        loop.span = span = self._obs.start_attempt(
            parent,
            agent=agent,
            depth=loop.depth,
            attempt=loop.attempt,
            handoff_id=loop.handoff_id,
            budget=(None, None, None),
        )
        loop.ctx = context_of(span)

    def _end_task(self, span: Any, entry: Entry) -> None:
        assert entry.loop is not None
        self._close_loop(entry.loop, _failure(entry.outer_exc))

    def _end_agent(self, span: Any, entry: Entry) -> None:
        loop = entry.loop
        assert loop is not None
        error = span.error
        if error is not None:
            if sdk.error_message(error) == MAX_TURNS_MESSAGE:
                loop.stop_reason = STOP_MAX_TURNS
            loop.error_text = sdk.error_text(error)
        if entry.nested is not None:
            self._close_loop(entry.nested, _failure(entry.outer_exc))

    def _close_loop(self, loop: Loop, failure: BaseException | None, *, cancelled: bool = False) -> None:
        """End a loop's span with its own usage (and the bill on a run); pass its usage up."""
        if loop.closed:
            return
        loop.closed = True
        outcome = loop_outcome(loop, failure, cancelled)
        error_type, message, deny = outcome
        span = loop.span
        if span is not None:
            extra: dict[str, Any] = {}
            if deny is not None:
                extra[JANUX_DENY_REASON] = deny
            if loop.own.estimated_cost is not None:
                extra[JANUX_TURN_COST_ESTIMATE] = loop.own.estimated_cost
            bill = None
            if loop.parent is None:
                bill = loop.inclusive
                if bill.estimated_cost is not None:
                    extra[JANUX_BILL_COST_ESTIMATE] = bill.estimated_cost
            self._obs.end_agent(
                span,
                loop.own,
                stop_reason=loop.stop_reason,
                error_type=error_type,
                error_message=message,
                bill=bill,
                extra=extra,
            )
        caller = loop.parent
        if caller is None:
            return
        caller.inclusive.add(loop.inclusive)
        if loop.parent_turn is not None:
            loop.parent_turn.known_input += loop.inclusive.input_tokens
            loop.parent_turn.known_output += loop.inclusive.output_tokens
        record_attempt(loop, outcome)

    # -- turns and rounds --------------------------------------------------------------------

    def _open_turn(self, span: Any, parent: Entry | None, state: TraceState) -> Entry | None:
        if parent is None or parent.loop is None:
            return None
        loop = parent.loop
        run = loop.run
        turn = Turn(run.overlaps)
        # Each enclosing loop has exactly one turn open (the one running its tool), so more open
        # turns than this loop's depth means another branch of the run is running right now.
        if run.open_turns > loop.depth:
            run.overlaps += 1
            turn.mark = -1
        run.open_turns += 1
        return Entry(
            Kind.TURN,
            loop,
            turn,
            parent.tool,
            parent.func,
            start_ns=time.time_ns(),
            name=loop.agent or "agent",
        )

    def _end_turn(self, span: Any, entry: Entry) -> None:
        loop, turn = entry.loop, entry.turn
        assert loop is not None and turn is not None
        run = loop.run
        run.open_turns -= 1
        self._rounds.turn_ended(
            entry, span.span_data, turn, ambiguous=turn.mark != run.overlaps, failed=span.error is not None
        )

    def _open_chat(self, span: Any, parent: Entry | None, state: TraceState) -> Entry | None:
        if parent is None or parent.loop is None or parent.anchor is None:
            return None
        if parent.turn is not None:
            parent.turn.saw_round = True
        return Entry(
            Kind.CHAT,
            parent.loop,
            parent.turn,
            parent.tool,
            parent.func,
            start_ns=time.time_ns(),
            name=parent.loop.agent or "agent",
            outer_exc=sys.exc_info()[1],
        )

    def _end_chat(self, span: Any, entry: Entry) -> None:
        self._rounds.round_ended(span, entry, _failure(entry.outer_exc))

    # -- tools, delegations and transfers ----------------------------------------------------

    def _open_function(self, span: Any, parent: Entry | None, state: TraceState) -> Entry | None:
        if parent is None or parent.loop is None or parent.anchor is None:
            return None
        name = getattr(span.span_data, "name", None) or "tool"
        if parent.turn is not None:
            parent.turn.used_tools = True
        tool = self._obs.start_tool(
            parent.anchor, tool=name, call_id=span.span_id, tool_type=TOOL_TYPE_FUNCTION, arguments=None
        )
        entry = Entry(Kind.FUNCTION, parent.loop, parent.turn, tool, name=name, sdk_id=span.span_id)
        entry.func = entry
        entry.tool_ctx = context_of(tool)
        return entry

    def _end_function(self, span: Any, entry: Entry) -> None:
        data, tool = span.span_data, entry.tool
        assert tool is not None
        if entry.nested is not None:
            self._close_loop(entry.nested, None)
        extra: dict[str, Any] = {}
        output = None  # content is read (and serialized) only when it may be recorded
        capture = self._obs.capture
        if capture.enabled:
            arguments = capture.capture(sdk.content_text(getattr(data, "input", None)))
            if arguments is not None:
                extra[GEN_AI_TOOL_CALL_ARGUMENTS] = arguments
            output = sdk.content_text(getattr(data, "output", None))
        error = span.error
        mark = entry.delegation
        if mark is None:
            failed = error is not None
            self._obs.end_tool(
                tool,
                result=output,
                error_type=ERROR_TOOL if failed else None,
                error_message=sdk.error_text(error) if failed else None,
                extra=extra,
            )
            return
        finish_delegation(mark, sdk.error_text(error) if error is not None else None, output)
        self._obs.handoff_end(tool, mark)
        failing = mark.status in (STATUS_FAILED, STATUS_DENIED)
        extra.update(_DELEGATE_TOOL)
        self._obs.end_tool(
            tool,
            result=output,
            error_type=(mark.error_type or ERROR_TOOL) if failing else None,
            error_message=mark.error if failing else None,
            handoff=mark,
            extra=extra,
        )

    def _open_handoff(self, span: Any, parent: Entry | None, state: TraceState) -> Entry | None:
        if parent is None or parent.loop is None or parent.anchor is None:
            return None
        if parent.turn is not None:
            parent.turn.used_tools = True
        return Entry(
            Kind.HANDOFF,
            parent.loop,
            parent.turn,
            parent.tool,
            parent.func,
            start_ns=time.time_ns(),
            sdk_id=span.span_id,
            outer_exc=sys.exc_info()[1],
        )

    def _end_handoff(self, span: Any, entry: Entry) -> None:
        """A transfer: its `execute_tool` span with both events, recorded now that the target is known."""
        loop, data, end_ns = entry.loop, span.span_data, time.time_ns()
        assert loop is not None
        to_agent = getattr(data, "to_agent", None)
        target = to_agent if isinstance(to_agent, str) and to_agent else None
        mark = transfer_mark(
            entry, loop.depth, target, _failure(entry.outer_exc), sdk.error_text(span.error), end_ns
        )
        tool = self._obs.start_tool(
            entry.anchor,  # type: ignore[arg-type]  # checked when the handoff started
            tool=mark.tool,
            call_id=mark.call_id,
            tool_type=TOOL_TYPE_HANDOFF,
            arguments=None,
            start_time=entry.start_ns,
        )
        self._obs.handoff_start(tool, mark, timestamp=entry.start_ns)
        self._obs.handoff_end(tool, mark)
        self._obs.end_tool(
            tool, error_type=mark.error_type, error_message=mark.error, handoff=mark, end_time=end_ns
        )
        if mark.status == STATUS_COMPLETED and target is not None and loop.span is not None:
            from_agent = getattr(data, "from_agent", None) or loop.agent or ""
            loop.holders = [*(loop.holders or [from_agent]), target]
            self._obs.set_transfer(loop.span, loop.holders)

    def _end_guardrail(self, span: Any, entry: Entry) -> None:
        data = span.span_data
        if getattr(data, "triggered", False) and entry.loop is not None:
            entry.loop.guardrail = getattr(data, "name", None) or "guardrail"
