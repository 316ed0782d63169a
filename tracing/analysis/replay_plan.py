"""What a trace recorded with content capture on holds to rebuild its run: `replay_plan(spans)`.

The plan is read from spans only (the runtime's `janux replay` builds agents from it):

- the agents, from `janux.agent.definitions` on the turn span (budgets, prices, policy, tools);
- every model round in start order: its agent, the input messages it was asked with
  (`gen_ai.input.messages`), what it answered (`gen_ai.output.messages`: text and tool calls with their
  ids), its usage, or how it failed (`error.type` and the status message; a round cut by a deadline);
- every tool call: its arguments and the result its caller read (`gen_ai.tool.call.*`), and for
  delegations and transfers their final status and reasons (for guardrail refusals: the refused task);
- the turn: its input (the last user message of the first round) and, for dispatch-and-synthesize,
  the tasks dispatched before the first round.

A trace without captured content has none of this: `ReplayUnavailable` says so.

A trace of the OpenAI Agents integration records its rounds as the SDK's models return them (output
items from the Responses model, one dumped Chat Completions message from the chat-completions model) and
no agent definitions (the agents are the user's SDK code): `replay_plan` refuses it with `NeedsSdkAgents`,
and
`item_plan` reads what `janux replay --agents module:ENTRY_AGENT` replays on the SDK (the rounds with
their raw output and recorded price, the tool results, the run's first input).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from janux.errors import JanuxError
from janux.tracing import conventions as c
from janux.tracing.analysis import spanread as sr
from janux.tracing.records import SpanRecord, attr_str

NO_CONTENT = "no recorded model outputs: record with content capture on to replay"
"""Why a trace without captured content cannot be replayed."""

NO_DEFINITIONS = (
    "the trace records no agent definitions (janux.agent.definitions): record it with this "
    "version of janux and content capture on to replay"
)
"""Why a trace whose rounds were captured by an older writer (or another runtime) cannot be replayed."""

NEEDS_SDK_AGENTS = (
    "the trace was recorded by the OpenAI Agents SDK (its rounds are in the SDK's output-item or "
    "chat-completions form) and records "
    "no agent definitions: pass --agents MODULE:ENTRY_AGENT naming your SDK entry agent to replay it on "
    "the SDK"
)
"""Why a trace of the OpenAI Agents integration is refused without `--agents`."""

DEADLINE_ERRORS = frozenset({c.ERROR_TIMEOUT, c.STOP_MAX_TIME, c.ERROR_CANCELLED})
"""`error.type` of a round that was cancelled by a deadline (or with its attempt), not answered."""


class ReplayUnavailable(JanuxError, ValueError):
    """The trace cannot be replayed; the message says why and what to do."""


class NeedsSdkAgents(ReplayUnavailable):
    """A trace of the OpenAI Agents integration, replayable only on the user's SDK agents (`--agents`)."""


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One tool call a round asked for."""

    id: str
    """The model's tool-call id, as recorded."""
    name: str
    """Tool name."""
    arguments: str
    """Raw JSON arguments."""


@dataclass(frozen=True, slots=True)
class RecordedRound:
    """One model round as the trace recorded it."""

    agent: str
    """Whose loop made it (`gen_ai.agent.name`)."""
    model: str
    """Requested model."""
    messages: str | None
    """The input messages as recorded (JSON, without the system prompt; maybe truncated)."""
    text: str = ""
    """Answered text."""
    tool_calls: tuple[RecordedCall, ...] = ()
    """Tool calls it asked for."""
    input_tokens: int = 0
    """Input tokens."""
    output_tokens: int = 0
    """Output tokens."""
    answered: bool = True
    """False when the round failed or was cancelled (then `error_type` says how)."""
    output_recorded: bool = True
    """False for an answered round whose output was not captured."""
    error_type: str | None = None
    """`error.type` of a failed or cancelled round."""
    error: str | None = None
    """The failed round's status message."""
    duration_ms: float = 0.0
    """How long the round took (for a cancelled round: how long the model stayed silent)."""
    output: str | None = None
    """The captured output as recorded (`gen_ai.output.messages`, JSON), None when not captured."""
    cost: float | None = None
    """`janux.round.cost`, None when the round was not priced exactly."""
    estimated: bool = False
    """True when the writer recorded a price-table estimate for the round (`janux.round.cost_estimate`)."""

    @property
    def cancelled(self) -> bool:
        """True when a deadline (or its attempt's end) cut the round before it answered."""
        return not self.answered and self.error_type in DEADLINE_ERRORS


@dataclass(frozen=True, slots=True)
class RecordedTool:
    """One tool call as the trace recorded it."""

    agent: str
    """The loop that called it."""
    tool: str
    """Tool name."""
    tool_type: str
    """`function`, `delegate` or `handoff`."""
    call_id: str
    """The model's tool-call id."""
    arguments: str | None
    """Raw JSON arguments (None when not captured)."""
    result: str | None
    """The result its caller read (None when not captured)."""
    status: str | None = None
    """Final handoff status of a delegation or transfer."""
    deny_reason: str | None = None
    """Rule that denied a delegation."""
    error: str | None = None
    """`janux.handoff.error` of a denied or failed delegation."""


@dataclass(slots=True)
class ReplayPlan:
    """Everything a trace holds to rebuild its run offline."""

    trace_id: str
    """The trace."""
    entry: str
    """The turn's entry agent."""
    input: str
    """The turn's user input."""
    definitions: dict[str, Any]
    """`janux.agent.definitions` parsed: `{"version", "entry", "agents": {name: definition}}`."""
    rounds: list[RecordedRound] = field(default_factory=list)
    """Every model round in start order."""
    tools: list[RecordedTool] = field(default_factory=list)
    """Every tool call in start order."""
    dispatch_tasks: list[str] | None = None
    """For dispatch-and-synthesize: the tasks dispatched before the first round."""
    history: list[tuple[str, str]] = field(default_factory=list)
    """(role, text) of the thread's earlier messages, for a turn that continued a conversation."""
    holder: str = ""
    """The agent holding the conversation when the turn began (a transfer target on a later turn)."""

    @property
    def agent_names(self) -> list[str]:
        """The agents the trace names: its definitions', then whoever made a round, first seen first."""
        names = [*self.definitions.get("agents", {}), *(r.agent for r in self.rounds)]
        return list(dict.fromkeys(names))

    def agent(self, name: str) -> dict[str, Any]:
        """The recorded definition of `name` (an empty one when the trace does not hold it)."""
        found = self.definitions.get("agents", {}).get(name)
        return found if isinstance(found, dict) else {}


def _recorded(spans: Iterable[SpanRecord]) -> tuple[list[SpanRecord], list[RecordedRound], SpanRecord]:
    """The trace's spans in start order, its model rounds and its root; `ReplayUnavailable` when it has
    no span, or no round whose output was captured (`NO_CONTENT`)."""
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    if not ordered:
        raise ReplayUnavailable("the trace has no spans")
    rounds = [_round(s) for s in ordered if sr.is_inference(sr.operation(s))]
    if not any(r.answered and r.output_recorded for r in rounds):
        raise ReplayUnavailable(NO_CONTENT)
    root = _root(ordered)
    return ordered, rounds, root


def replay_plan(spans: Iterable[SpanRecord]) -> ReplayPlan:
    """Read the replay plan of one trace; raise `ReplayUnavailable` naming what is missing."""
    ordered, rounds, root = _recorded(spans)
    definitions = _definitions(root)
    if definitions is None:
        sdk_run = in_sdk_form(rounds, root)
        raise NeedsSdkAgents(NEEDS_SDK_AGENTS) if sdk_run else ReplayUnavailable(NO_DEFINITIONS)
    loop_agent = {s.span_id: sr.agent_name(s) for s in ordered if sr.operation(s) == c.OP_INVOKE_AGENT}
    tools = [_tool(s, loop_agent) for s in ordered if sr.operation(s) == c.OP_EXECUTE_TOOL]
    root_rounds = [
        s for s in ordered if s.parent_span_id == root.span_id and sr.is_inference(sr.operation(s))
    ]
    if not root_rounds:
        raise ReplayUnavailable(NO_CONTENT)
    first = _round(root_rounds[0])
    return ReplayPlan(
        trace_id=root.trace_id,
        entry=str(definitions.get("entry") or sr.agent_name(root)),
        input=_last_user(first.messages),
        definitions=definitions,
        rounds=rounds,
        tools=tools,
        dispatch_tasks=_dispatched(ordered, root, root_rounds[0]),
        history=_history(first.messages),
        holder=first.agent,
    )


def _root(ordered: list[SpanRecord]) -> SpanRecord:
    ids = {s.span_id for s in ordered}
    for span in ordered:
        if sr.operation(span) == c.OP_INVOKE_AGENT and span.parent_span_id not in ids:
            return span
    raise ReplayUnavailable("the trace has no turn span (invoke_agent at its root)")


def _definitions(root: SpanRecord) -> dict[str, Any] | None:
    raw = attr_str(root.attributes, c.JANUX_AGENT_DEFINITIONS)
    if raw is None:
        return None
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        raise ReplayUnavailable(f"{c.JANUX_AGENT_DEFINITIONS}: not valid JSON ({exc})") from None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("agents"), dict):
        raise ReplayUnavailable(f"{c.JANUX_AGENT_DEFINITIONS}: expected an object with 'agents'")
    return parsed


def _round(span: SpanRecord) -> RecordedRound:
    attrs = span.attributes
    input_tokens, output_tokens = sr.round_tokens(span)
    common: dict[str, Any] = {
        "agent": sr.agent_name(span),
        "model": sr.round_model(span),
        "messages": attr_str(attrs, c.GEN_AI_INPUT_MESSAGES),
        "duration_ms": max(0.0, span.duration_ns / 1e6),
        "cost": sr.round_cost(span),
        "estimated": sr.round_estimate(span) is not None,
    }
    if sr.is_error(span):
        error_type = attr_str(attrs, c.ERROR_TYPE) or "error"
        return RecordedRound(
            **common, answered=False, error_type=error_type, error=span.status_message or None
        )
    output = _assistant(attr_str(attrs, c.GEN_AI_OUTPUT_MESSAGES))
    if output is None:
        return RecordedRound(
            **common, input_tokens=input_tokens, output_tokens=output_tokens, output_recorded=False
        )
    text, calls = output
    return RecordedRound(
        **common, text=text, tool_calls=calls, input_tokens=input_tokens, output_tokens=output_tokens,
        output=attr_str(attrs, c.GEN_AI_OUTPUT_MESSAGES),
    )  # fmt: skip


def _assistant(raw: str | None) -> tuple[str, tuple[RecordedCall, ...]] | None:
    """(text, tool calls) of a captured output (the GenAI JSON the runtime writes); None when absent
    or unreadable (a truncated capture)."""
    if raw is None:
        return None
    try:
        messages = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    message = messages[-1]
    calls = tuple(
        RecordedCall(str(call.get("id", "")), str(call.get("name", "")), str(call.get("arguments", "{}")))
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict)
    )
    content = message.get("content")
    return (content if isinstance(content, str) else "", calls)


def _tool(span: SpanRecord, loop_agent: dict[str, str]) -> RecordedTool:
    attrs = span.attributes
    end = next((e for e in span.events if e.name == c.EVENT_HANDOFF_END), None)
    source = end.attributes if end is not None else attrs
    return RecordedTool(
        agent=loop_agent.get(span.parent_span_id, ""),
        tool=sr.tool_name(span),
        tool_type=attr_str(attrs, c.GEN_AI_TOOL_TYPE) or c.TOOL_TYPE_FUNCTION,
        call_id=attr_str(attrs, c.GEN_AI_TOOL_CALL_ID) or "",
        arguments=attr_str(attrs, c.GEN_AI_TOOL_CALL_ARGUMENTS),
        result=attr_str(attrs, c.GEN_AI_TOOL_CALL_RESULT),
        status=attr_str(attrs, c.JANUX_HANDOFF_STATUS),
        deny_reason=attr_str(source, c.JANUX_HANDOFF_DENY_REASON),
        error=attr_str(source, c.JANUX_HANDOFF_ERROR),
    )


def _last_user(messages: str | None) -> str:
    if messages is None:
        raise ReplayUnavailable(NO_CONTENT)
    try:
        parsed = json.loads(messages)
    except ValueError:
        raise ReplayUnavailable(
            "the first round's input messages were truncated when recorded: raise "
            f"{c.CAPTURE_MAX_LENGTH_ENV} to replay"
        ) from None
    for message in reversed(parsed if isinstance(parsed, list) else []):
        if isinstance(message, dict) and message.get("role") == "user":
            return str(message.get("content", ""))
    raise ReplayUnavailable("the first round's input has no user message")


def _history(messages: str | None) -> list[tuple[str, str]]:
    """The user and assistant text before the turn's input (what the thread kept from earlier turns)."""
    try:
        parsed = json.loads(messages or "[]")
    except ValueError:
        return []
    if not isinstance(parsed, list):
        return []
    users = [i for i, m in enumerate(parsed) if isinstance(m, dict) and m.get("role") == "user"]
    earlier = parsed[: users[-1]] if users else []
    return [
        (str(m["role"]), str(m["content"]))
        for m in earlier
        if isinstance(m, dict) and m.get("role") in ("user", "assistant") and m.get("content")
    ]


def _dispatched(ordered: list[SpanRecord], root: SpanRecord, first_round: SpanRecord) -> list[str] | None:
    """Tasks of the delegate calls the turn made before its first round (dispatch-and-synthesize)."""
    early = [
        s for s in ordered
        if s.parent_span_id == root.span_id and sr.operation(s) == c.OP_EXECUTE_TOOL
        and s.start_ns < first_round.start_ns
    ]  # fmt: skip
    if not early:
        return None
    tasks = []
    for span in sorted(early, key=_call_order):
        try:
            arguments = json.loads(attr_str(span.attributes, c.GEN_AI_TOOL_CALL_ARGUMENTS) or "")
        except ValueError:
            raise ReplayUnavailable("a dispatched task was not captured") from None
        tasks.append(str(arguments.get("task", "")) if isinstance(arguments, dict) else "")
    return tasks


def _call_order(span: SpanRecord) -> tuple[int, str]:
    """`dispatch_2` before `dispatch_10`."""
    call_id = attr_str(span.attributes, c.GEN_AI_TOOL_CALL_ID) or ""
    return (len(call_id), call_id)


# -- traces of the OpenAI Agents SDK (through its Janux integration) ---------------------------------


def output_items(round_: RecordedRound) -> list[dict[str, Any]] | None:
    """The output of a round recorded in the OpenAI Responses item form (a list of objects, each with a
    `type`: `message`, `function_call`, ...), what the OpenAI Agents SDK's models return; None for any
    other form (the GenAI messages the runtime writes have roles, not types) or no capture."""
    if round_.output is None:
        return None
    try:
        parsed = json.loads(round_.output)
    except ValueError:
        return None
    if not isinstance(parsed, list) or not parsed:
        return None
    if not all(isinstance(item, dict) and isinstance(item.get("type"), str) for item in parsed):
        return None
    return parsed


def in_item_form(rounds: Iterable[RecordedRound]) -> bool:
    """True when the answered rounds' outputs are in the Responses item form (the SDK's rounds): the
    run was written by the OpenAI Agents integration, which records no Janux agent definitions."""
    answered = [r for r in rounds if r.answered and r.output is not None]
    return bool(answered) and all(output_items(r) is not None for r in answered)


_CHAT_MESSAGE_KEYS = frozenset({"role", "content", "refusal", "tool_calls"})
"""Keys a dumped Chat Completions message always has (`ChatCompletionMessage.model_dump()` writes every
field, null or not); the runtime's GenAI messages never write `refusal`, the OTel GenAI form has `parts`."""


def chat_message(round_: RecordedRound) -> dict[str, Any] | None:
    """The output of a round recorded as the OpenAI Agents SDK's chat-completions model traces it: a list
    of one dumped Chat Completions assistant message (tool calls in the wire form, `function` nested);
    None for any other form or no capture."""
    if round_.output is None:
        return None
    try:
        parsed = json.loads(round_.output)
    except ValueError:
        return None
    if not isinstance(parsed, list) or len(parsed) != 1 or not isinstance(parsed[0], dict):
        return None
    message: dict[str, Any] = parsed[0]
    if message.get("role") != "assistant" or not message.keys() >= _CHAT_MESSAGE_KEYS:
        return None
    calls = message["tool_calls"]
    if calls is not None and not (
        isinstance(calls, list)
        and all(isinstance(call, dict) and isinstance(call.get("function"), dict) for call in calls)
    ):
        return None
    return message


def in_sdk_form(rounds: Iterable[RecordedRound], root: SpanRecord) -> bool:
    """True when the run was written by the OpenAI Agents integration: every answered round's output is
    in the SDK's item form or its chat-completions message form. A chat-form trace must also have its
    turn span written to the Janux contract (`janux.turn.rounds`): a Chat Completions message is what
    any OpenAI instrumentation may record, and another runtime's trace keeps its own refusal."""
    answered = [r for r in rounds if r.answered and r.output is not None]
    if in_item_form(answered):
        return True
    chat = [r for r in answered if output_items(r) is None]
    return (
        bool(chat)
        and c.JANUX_TURN_ROUNDS in root.attributes
        and all(chat_message(r) is not None for r in chat)
    )


@dataclass(slots=True)
class ItemPlan:
    """What a trace recorded in the SDK's item form holds to replay it on the SDK with the user's agents."""

    trace_id: str
    """The trace."""
    entry: str
    """The agent the run started with (the root `invoke_agent`)."""
    input: str
    """The first round's input as recorded (JSON): the run's input (as items, or as the chat messages the
    chat-completions model sent: the agent's instructions first)."""
    rounds: list[RecordedRound] = field(default_factory=list)
    """Every model round in start order."""
    tools: list[RecordedTool] = field(default_factory=list)
    """Every tool call in start order."""
    chat_input: bool = False
    """True when `input` is in the chat-completions form (the entry agent ran on that model)."""


def item_plan(spans: Iterable[SpanRecord]) -> ItemPlan:
    """Read the plan of a trace whose rounds are in the SDK's item form; raise `ReplayUnavailable`
    with `NO_CONTENT` when the outputs or the first input were not captured."""
    ordered, rounds, root = _recorded(spans)
    if not in_sdk_form(rounds, root):
        raise ReplayUnavailable(
            "the trace's rounds are not in the OpenAI Agents SDK's item or chat-completions form: replay "
            "it without an SDK agent"
        )
    first = next(
        (s for s in ordered if s.parent_span_id == root.span_id and sr.is_inference(sr.operation(s))), None
    )
    first_input = attr_str(first.attributes, c.GEN_AI_INPUT_MESSAGES) if first is not None else None
    if first is None or first_input is None:
        raise ReplayUnavailable(NO_CONTENT)
    loop_agent = {s.span_id: sr.agent_name(s) for s in ordered if sr.operation(s) == c.OP_INVOKE_AGENT}
    tools = [_tool(s, loop_agent) for s in ordered if sr.operation(s) == c.OP_EXECUTE_TOOL]
    # A run that transferred names its last holder; `janux.handoff.from` keeps the agent it started with.
    entry = attr_str(root.attributes, c.JANUX_HANDOFF_FROM) or sr.agent_name(root)
    return ItemPlan(root.trace_id, entry, first_input, rounds, tools, _chat_first(rounds, _round(first)))


def _chat_first(rounds: list[RecordedRound], first: RecordedRound) -> bool:
    """True when the run's first round was asked in the chat-completions form: read from the form of its
    output, else (a first round that failed) from its agent's other rounds, else from any round."""
    answered = [r for r in rounds if r.answered and r.output is not None]
    mine = [r for r in answered if r.agent == first.agent]
    candidates = ([first] if first.output is not None else []) + mine + answered
    return next((chat_message(r) is not None for r in candidates), False)
