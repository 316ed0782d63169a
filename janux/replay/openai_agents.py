"""Replay a trace of the OpenAI Agents integration on the SDK itself, with the user's own agents.

    report = replay_sdk_trace(spans, "myapp.agents:triage")
    report.differences   # [] when the replay ended as the recording did

The reference names the user's SDK `agents.Agent` the run started with; its handoffs and its
agent-as-tool subagents are reached from it. For the replay each reachable agent's model is an SDK
`Model` answering that agent's recorded rounds in recorded order (`RecordedSdkModel`, which reports
each round's usage like the SDK's OpenAI models; a round recorded through the chat-completions model, as
a Chat Completions message, is turned into the output items that model returned by the SDK's own
converter), and each function tool answers with the result
recorded for the same arguments (the real tools run with `live_tools`). The run is traced through
`JanuxProcessor` into memory, with each round priced as its recording was, and both traces are read
by the same rules (`janux.tracing.analysis.replay_outcome`). Where an agent asks for a round it never
recorded, the recording ends there (`recording ends at round N: ...`).

The agents are the user's objects: the replay swaps their models and tools in place for the run and
puts them back afterwards. Needs the `openai-agents` extra; `janux.replay.runner.replay_sdk_trace`
imports this module only when such a trace is replayed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import pprint
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agents import Agent, FunctionTool, RunConfig, Runner, set_trace_processors, set_tracing_disabled
from agents.handoffs import Handoff
from agents.items import TResponseOutputItem
from agents.models.chatcmpl_converter import Converter
from agents.testing import ModelStep
from agents.tracing import TracingProcessor, get_trace_provider
from agents.usage import Usage as SdkUsage
from openai.types.chat import ChatCompletionMessage
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import TypeAdapter, ValidationError

from janux.errors import JanuxError
from janux.integrations.openai_agents import JanuxProcessor
from janux.integrations.openai_agents.accounting import UNPRICED, Pricing, RoundPrice
from janux.integrations.openai_agents.testing import ScriptedTracedModel
from janux.replay.source import expectation
from janux.replay.support import canonical_arguments
from janux.replay.user_agents import RegistryError, factory_result, import_reference, split_reference
from janux.runtime.definitions import Cost
from janux.tracing.analysis.replay_outcome import RunOutcome, differences, run_outcome
from janux.tracing.analysis.replay_plan import (
    ItemPlan,
    RecordedRound,
    ReplayUnavailable,
    chat_message,
    item_plan,
    output_items,
)
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sdk.convert import span_records_from_readable

REPLAY_TIMEOUT_S = 300.0
"""A replay that runs longer than this is stopped."""

_OUTPUT_ITEM: TypeAdapter[TResponseOutputItem] = TypeAdapter(TResponseOutputItem)


class RecordingEnded(JanuxError, RuntimeError):
    """The replayed run asked for a model round or a tool result the recording does not hold."""


@dataclass(slots=True)
class SdkReplayReport:
    """The recorded and the replayed outcome of one SDK run, and how they differ."""

    plan: ItemPlan
    """What the trace recorded."""
    recorded: RunOutcome
    """The recorded outcome."""
    replayed: RunOutcome
    """The replayed outcome."""
    reference: str
    """The user's entry agent (`module:name`)."""
    ended: str | None = None
    """`recording ends at round N: ...` when the replay needed something never recorded."""
    only: int | None = None
    """The one delegation compared (its number), None for the whole run."""
    differences: list[str] = field(default_factory=list)
    """What the replay did differently (empty when it matched)."""
    live_rounds: int = 0
    """Rounds answered by a live model (never, for an SDK replay)."""
    prices: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    """The what-if prices the replay ran with (`AgentPrices`), empty for none."""


class SdkRecording:
    """One SDK trace's recorded answers: each agent's rounds in order, each tool's results by arguments,
    and where the replay ran past them."""

    def __init__(self, plan: ItemPlan) -> None:
        self._rounds: dict[str, list[RecordedRound]] = {}
        for round_ in plan.rounds:
            self._rounds.setdefault(round_.agent, []).append(round_)
        self._results: dict[tuple[str, str], list[str]] = {}
        for tool in plan.tools:
            if tool.tool_type == "function" and tool.result is not None and tool.arguments is not None:
                key = (tool.tool, canonical_arguments(tool.arguments))
                self._results.setdefault(key, []).append(tool.result)
        self.rounds = 0
        """Model requests made so far."""
        self.ended: str | None = None
        """`recording ends at round N: ...` once the run needed something never recorded."""
        # An unreadable output is refused here, before the run: raised inside it, in a model's request,
        # it would be read as the run's failure.
        for round_ in plan.rounds:
            if round_.answered:
                _recorded_output(round_)

    def end(self, why: str) -> RecordingEnded:
        """Note the first place the run went past the recording; the error to raise there."""
        if self.ended is None:
            self.ended = f"recording ends at round {max(self.rounds, 1)}: {why}"
        return RecordingEnded(why)

    def next_step(self, agent: str, asked: Any) -> ModelStep:
        """The scripted SDK step (output items and usage, or the error) of `agent`'s first remaining
        recorded round that was asked with the input `asked` (a round whose recorded input cannot be
        compared is taken in order); the recording ends where there is none."""
        self.rounds += 1
        queue = self._rounds.get(agent) or []
        request = _comparable(_sdk_json(asked))
        found = next((r for r in queue if _asked_alike(r.messages, request)), None)
        if found is None:  # raised inside the round's span: a failed request, not a round of unknown usage
            return ModelStep.raise_error(
                self.end(f"{agent}'s model output for this request was never recorded")
            )
        queue.remove(found)
        return self._step(found, agent)

    def _step(self, round_: RecordedRound, agent: str) -> ModelStep:
        if not round_.answered:
            # An exception class named as the recorded one: the replayed round's `error.type` (the
            # class name, as the integration records it) is then the recorded one.
            failure = type(round_.error_type or "ModelError", (Exception,), {})
            return ModelStep.raise_error(failure(round_.error or round_.error_type or "model error"))
        output = _recorded_output(round_)
        if output is None:
            return ModelStep.raise_error(
                self.end(f"{agent}'s model output for this request was not captured")
            )
        usage = SdkUsage(
            requests=1, input_tokens=round_.input_tokens, output_tokens=round_.output_tokens,
            total_tokens=round_.input_tokens + round_.output_tokens,
        )  # fmt: skip
        return ModelStep(output=output, usage=usage)

    def tool_result(self, name: str, arguments: str) -> str:
        """The result recorded for the next call of `name` with these arguments."""
        key = (name, canonical_arguments(arguments))
        queue = self._results.get(key)
        if not queue:
            raise self.end(f"no recorded tool result for {name} {key[1]}")
        return queue.pop(0)


def _sdk_json(value: Any) -> str:
    """An SDK model input as JSON text, serialized as the integration records it (models dumped)."""
    if isinstance(value, str):
        return json.dumps(value)

    def fallback(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        return dump() if callable(dump) else str(obj)

    return json.dumps(value, default=fallback, ensure_ascii=False)


def _without_nulls(value: Any) -> Any:
    """`value` with null fields dropped at every level (an unset field and a null one read alike)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


_CHAT_ROLES = frozenset({"system", "developer", "tool"})
"""Roles found only in the chat-completions form a model may record its input in (not the SDK's items)."""


def _comparable(recorded: str | None) -> Any:
    """A recorded (or replayed) input in a form two inputs compare in; None when it cannot be compared:
    not captured, truncated, or in the chat-completions form (a system message, tool messages)."""
    if recorded is None:
        return None
    try:
        parsed = json.loads(recorded)
    except ValueError:
        return None
    if isinstance(parsed, str):
        parsed = [{"content": parsed, "role": "user"}]
    if not isinstance(parsed, list):
        return None
    if any(isinstance(m, dict) and (m.get("role") in _CHAT_ROLES or "tool_calls" in m) for m in parsed):
        return None
    return _without_nulls(parsed)


def _asked_alike(recorded: str | None, request: Any) -> bool:
    """True when a recorded round was asked with `request` (or its input cannot be compared)."""
    expected = _comparable(recorded)
    return expected is None or request is None or expected == request


def _item(item: dict[str, Any], agent: str) -> TResponseOutputItem:
    """A recorded output item as the SDK's own type (fields recorded as null left unset)."""
    try:
        return _OUTPUT_ITEM.validate_python({k: v for k, v in item.items() if v is not None})
    except ValidationError as exc:
        kind = item.get("type")
        raise ReplayUnavailable(f"a recorded output item ({kind}) of {agent} is unreadable: {exc}") from None


def _recorded_output(round_: RecordedRound) -> list[TResponseOutputItem] | None:
    """An answered round's output as the SDK's output items (from the Responses items it recorded, or
    from its Chat Completions message); None when not captured, `ReplayUnavailable` when unreadable."""
    items = output_items(round_)
    if items is not None:
        return [_item(item, round_.agent) for item in items]
    message = chat_message(round_)
    return None if message is None else _chat_items(message, round_.agent, round_.model)


def _chat_items(message: dict[str, Any], agent: str, model: str) -> list[TResponseOutputItem]:
    """The output items the SDK's chat-completions model made of a recorded Chat Completions message
    (its own converter, with the provider data that model attaches)."""
    try:
        parsed = ChatCompletionMessage.model_validate(message)
    except ValidationError as exc:
        raise ReplayUnavailable(f"a recorded chat message of {agent} is unreadable: {exc}") from None
    return Converter.message_to_output_items(parsed, provider_data={"model": model})


def run_input(plan: ItemPlan, entry: Agent[Any]) -> Any:
    """The run's input as the SDK takes it: the recorded items, or the recorded chat messages without the
    system message the chat-completions model puts first for the entry agent's instructions."""
    try:
        items = json.loads(plan.input)
    except ValueError:
        raise ReplayUnavailable("the first round's input was truncated when recorded") from None
    if not plan.chat_input or not isinstance(items, list):
        return items
    if items and entry.instructions and isinstance(items[0], dict) and items[0].get("role") == "system":
        items = items[1:]
    # User and assistant text messages read alike in both forms; tool calls and results do not (the SDK
    # has no converter back to items), so a run that began with them cannot be replayed.
    if any(not isinstance(m, dict) or m.get("role") == "tool" or m.get("tool_calls") for m in items):
        raise ReplayUnavailable(
            "the run began with tool calls in the chat-completions form (a continued conversation): "
            "its input cannot be given back to the SDK"
        )
    return items


class RecordedSdkModel(ScriptedTracedModel):
    """An SDK `Model` answering one agent's requests with its recorded rounds, in order; each round's
    span carries its usage like the SDK's OpenAI (Responses) model."""

    def __init__(self, recording: SdkRecording, agent: str, model_name: str) -> None:
        super().__init__(model=model_name, api="responses")
        self._recording = recording
        self._agent = agent

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        """The agent's next recorded round (the recording ends when it has none)."""
        self.enqueue(self._recording.next_step(self._agent, _input_of(args, kwargs)))
        return await super().get_response(*args, **kwargs)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        """The agent's next recorded round, streamed."""
        self.enqueue(self._recording.next_step(self._agent, _input_of(args, kwargs)))
        async for event in super().stream_response(*args, **kwargs):
            yield event


def _input_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The `input` argument of `Model.get_response` / `stream_response` (the second, after the system
    instructions)."""
    return kwargs["input"] if "input" in kwargs else args[1]


AgentPrices = Mapping[str, tuple[float, float] | None]
"""What-if prices by agent name: USD per million input and output tokens, or None for unpriced
(`--cost AGENT=IN/OUT|none`, `--model AGENT=MODEL` through the price table)."""


class RecordedPricing(Pricing):
    """Prices each replayed round as the recording priced the round with the same agent and tokens:
    its `janux.round.cost`, else a price-table estimate where one was recorded, else unpriced. An agent
    in `what_if` is priced at its what-if rates instead (the integration's one per-agent rule), or left
    unpriced for None."""

    __slots__ = ("_prices", "_unpriced")

    def __init__(self, plan: ItemPlan, provider: str, what_if: AgentPrices | None = None) -> None:
        rates = {agent: Cost(input=p[0], output=p[1]) for agent, p in (what_if or {}).items() if p}
        super().__init__(rates, estimate=True, provider=provider)
        self._unpriced = {agent for agent, p in (what_if or {}).items() if p is None}
        self._prices: dict[tuple[str, int, int], list[tuple[float | None, bool]]] = {}
        for round_ in plan.rounds:
            if round_.answered:
                key = (round_.agent, round_.input_tokens, round_.output_tokens)
                self._prices.setdefault(key, []).append((round_.cost, round_.estimated))

    def price(self, agent: str, model: str | None, input_tokens: int, output_tokens: int) -> RoundPrice:
        """The recorded round's price (the first unused one with these tokens), or its what-if price."""
        queue = self._prices.get((agent, input_tokens, output_tokens))
        recorded = queue.pop(0) if queue else None
        if agent in self._unpriced:
            return UNPRICED
        if agent in self._rates:
            return super().price(agent, model, input_tokens, output_tokens)
        if recorded is None:
            return UNPRICED
        cost, estimated = recorded
        if cost is not None:
            return cost, None
        return super().price(agent, model, input_tokens, output_tokens) if estimated else UNPRICED


def load_entry_agent(reference: str) -> Agent[Any]:
    """Import `module:name` (the working directory importable) and return the SDK agent it names
    (or a callable's result); every problem is one `RegistryError` line."""
    value: Any = import_reference(reference)
    if callable(value) and not isinstance(value, Agent):
        value = factory_result(value, reference)
    if not isinstance(value, Agent):
        raise RegistryError(
            f"--agents {reference}: the trace was recorded by the OpenAI Agents SDK, so this must name "
            f"its entry agents.Agent (or a callable returning it), got {type(value).__name__}"
        )
    return value


def reachable(entry: Agent[Any]) -> list[Agent[Any]]:
    """`entry` and every agent it reaches through handoffs and agent-as-tool tools."""
    found: dict[int, Agent[Any]] = {}
    pending: list[Any] = [entry]
    while pending:
        agent = pending.pop()
        if not isinstance(agent, Agent) or id(agent) in found:
            continue
        found[id(agent)] = agent
        for tool in agent.tools:
            pending.append(getattr(tool, "_agent_instance", None))
        for target in agent.handoffs:
            if isinstance(target, Handoff):
                ref = getattr(target, "_agent_ref", None)
                pending.append(ref() if callable(ref) else None)
            else:
                pending.append(target)
    return list(found.values())


def _recorded_tool(tool: FunctionTool, recording: SdkRecording) -> FunctionTool:
    async def answer(context: Any, arguments: str) -> str:
        return recording.tool_result(tool.name, arguments)

    return dataclasses.replace(tool, on_invoke_tool=answer)


@contextmanager
def _replaying(
    agents: Sequence[Agent[Any]], plan: ItemPlan, recording: SdkRecording, live_tools: bool
) -> Iterator[None]:
    """Each agent's model answering from the recording (and, unless `live_tools`, each function tool),
    put back as it was afterwards."""
    models = {r.agent: r.model for r in plan.rounds}
    saved = [(agent, agent.model, agent.tools) for agent in agents]
    try:
        for agent in agents:
            agent.model = RecordedSdkModel(recording, agent.name, models.get(agent.name, "unknown"))
            if not live_tools:
                agent.tools = [
                    _recorded_tool(tool, recording)
                    if isinstance(tool, FunctionTool) and getattr(tool, "_agent_instance", None) is None
                    else tool
                    for tool in agent.tools
                ]
        yield
    finally:
        for agent, model, tools in saved:
            agent.model, agent.tools = model, tools


@contextmanager
def _traced_by(processor: TracingProcessor) -> Iterator[None]:
    """The SDK's traces go to `processor` alone for the replay (never to the SDK's default exporter)."""
    # The SDK offers no getter for its processors: read them defensively to put them back afterwards
    # (none found: the list is left empty, which never uploads anything).
    multi = getattr(get_trace_provider(), "_multi_processor", None)
    before = list(getattr(multi, "_processors", ()))
    set_tracing_disabled(False)
    set_trace_processors([processor])
    try:
        yield
    finally:
        set_trace_processors(before)


async def _run(entry: Agent[Any], items: Any) -> None:
    try:
        await Runner.run(entry, items, run_config=RunConfig(trace_include_sensitive_data=True))
    except Exception:  # the run's failure is in its trace, which is what is compared
        return


def replay_sdk_trace(
    spans: Sequence[SpanRecord],
    reference: str,
    *,
    live_tools: bool = False,
    only: int | None = None,
    prices: AgentPrices | None = None,
) -> SdkReplayReport:
    """Replay one SDK trace on the agent `reference` names; compare every delegation, or only `only`.
    An agent in `prices` is billed at its what-if price (`RecordedPricing`)."""
    plan = item_plan(spans)
    recorded = run_outcome(reconstruct(spans))
    entry = load_entry_agent(reference)
    if entry.name != plan.entry:
        raise RegistryError(
            f"--agents {reference}: that agent is {entry.name!r}, the recorded run started with "
            f"{plan.entry!r}"
        )
    what_if = dict(prices or {})
    unknown = sorted(set(what_if) - {r.agent for r in plan.rounds})
    if unknown:
        raise RegistryError(f"no recorded rounds of agent {unknown[0]!r} to price: check --cost/--model")
    replayed, ended = replay_on(entry, plan, live_tools=live_tools, prices=what_if)
    report = SdkReplayReport(plan, recorded, replayed, reference, ended, only, prices=what_if)
    report.differences = differences(recorded, replayed, only)
    return report


def replay_on(
    entry: Agent[Any], plan: ItemPlan, *, live_tools: bool = False, prices: AgentPrices | None = None
) -> tuple[RunOutcome, str | None]:
    """Run `plan` offline on the SDK agent `entry` (what a written test calls): the replayed outcome, and
    `recording ends at round N: ...` when the run needed something never recorded (else None). Agents
    in `prices` are billed at those what-if prices."""
    recording = SdkRecording(plan)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    processor = JanuxProcessor(
        tracer_provider=provider, capture=True, pricing=RecordedPricing(plan, "openai", prices)
    )
    items = run_input(plan, entry)
    try:
        with _traced_by(processor), _replaying(reachable(entry), plan, recording, live_tools):
            asyncio.run(asyncio.wait_for(_run(entry, items), REPLAY_TIMEOUT_S))
    except TimeoutError:
        raise ReplayUnavailable(f"the replay did not finish within {REPLAY_TIMEOUT_S:g} s") from None
    finally:
        provider.shutdown()
    replayed = run_outcome(reconstruct(span_records_from_readable(exporter.get_finished_spans())))
    return replayed, recording.ended


_PLAN_NAMES = ("ItemPlan", "RecordedCall", "RecordedRound", "RecordedTool")
"""What a written test's plan may be made of (imported only when used, so the file lints clean)."""


def test_source(report: SdkReplayReport, command: str, live_tools: bool = False) -> str:
    """A pytest module that imports the user's entry agent by its reference, replays the recorded plan
    on it, and asserts the recorded outcome (each delegation's tool, target, status, attempts and deny
    or stop reason; the turn's error; the bill)."""
    module, attr = split_reference(report.reference)
    expected = expectation(report.recorded)
    cost = "None" if expected.bill[3] is None else f"pytest.approx({expected.bill[3]!r}, rel=1e-9)"
    plan = pprint.pformat(report.plan, width=110, sort_dicts=False)
    lines = [
        f'"""Replay of trace {report.plan.trace_id}, written by `{command}`.',
        "",
        f"The agents are yours (`{report.reference}`, an OpenAI Agents SDK agent and every agent it",
        "reaches); each model answers from its recorded rounds (a round is taken only by a request asked",
        "with its recorded input) and the function tools "
        + ("run for real." if live_tools else "answer with their recorded results."),
        "Fix an agent in your code and edit the assertion to the outcome you expect: a run that needs a",
        "model output the trace never recorded fails with `recording ends at round N`.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import pytest",
        "from agents import Agent",
        f"from {module} import {attr} as entry_agent",
        "",
        "from janux.replay.openai_agents import replay_on",
        "from janux.tracing.analysis.replay_plan import "
        + ", ".join(name for name in _PLAN_NAMES if re.search(rf"\b{name}\(", plan)),
        "",
        f"PLAN = {plan}",
        "",
        f"PRICES = {report.prices!r}",
        f"EXPECTED_ERROR = {expected.error!r}",
        f"EXPECTED_DELEGATIONS = {pprint.pformat(expected.delegations, width=110)}",
        f"EXPECTED_BILL = {expected.bill[:3]!r}",
        "",
        "",
        "def test_recorded_outcome() -> None:",
        '    """The run ends as the trace recorded it: each delegation and the bill."""',
        "    agent = entry_agent if isinstance(entry_agent, Agent) else entry_agent()",
        f"    outcome, ended = replay_on(agent, PLAN, live_tools={live_tools!r}, prices=PRICES)",
        "    assert ended is None, ended",
        "    assert (outcome.error_type if outcome.status == 'error' else None) == EXPECTED_ERROR",
        "    delegations = sorted(",
        "        ((d.tool, d.target, d.status, d.attempts, d.ruling) for d in outcome.delegations),",
        "        key=lambda row: tuple(str(part) for part in row),",
        "    )",
        "    assert delegations == EXPECTED_DELEGATIONS",
        "    bill = outcome.bill",
        "    assert (bill.input_tokens, bill.output_tokens, bill.unpriced_tokens) == EXPECTED_BILL",
        f"    assert bill.cost == {cost}",
    ]
    return "\n".join(lines) + "\n"
