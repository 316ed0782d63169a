"""Issue 20, item 7: `instrument()` is idempotent and `uninstrument()` exists; a loop whose model
traced no round gets its usage from the SDK's turn, and where nothing is known it is unknown, never 0."""

from __future__ import annotations

from typing import Any

from agents import Agent, set_trace_processors
from agents.testing import ScriptedModel
from agents.tracing import get_trace_provider

from janux.integrations.openai_agents import instrument, uninstrument
from janux.integrations.openai_agents.install import forwarder
from janux.tracing import conventions as c
from tests.integrations.openai_agents.scripts import calls, reply, run
from tests.integrations.openai_agents.verify import attr, spans_named
from tests.support.contract_checker import Traced, invariant_problems


def _registered() -> tuple[Any, ...]:
    return get_trace_provider()._multi_processor._processors  # type: ignore[attr-defined,no-any-return]


def _untraced_agent() -> Agent[None]:
    """A front desk on the SDK's ScriptedModel without emit_traces: no generation span at all."""
    model = ScriptedModel([reply("Refunds take 5 days.", 1300, 20)], emit_traces=False)
    return Agent(name="triage", instructions="Front desk.", model=model)


async def test_instrument_twice_registers_once_and_writes_each_run_once() -> None:
    traced = Traced()
    first = instrument(tracer_provider=traced.provider)
    again = instrument(tracer_provider=traced.provider)
    assert again is first and len(_registered()) == 1
    outcome = await run(_untraced_agent(), "Refund?")
    roots = spans_named(traced.records(), "invoke_agent triage")
    assert len(roots) == 1  # written once
    assert attr(roots[0], c.JANUX_BILL_INPUT_TOKENS) == outcome.usage.input_tokens == 1300


async def test_uninstrument_stops_new_runs_and_instrument_works_again() -> None:
    traced = Traced()
    instrument(tracer_provider=traced.provider)
    uninstrument()
    assert forwarder() is None
    await run(_untraced_agent(), "Refund?")
    assert traced.records() == []
    instrument(tracer_provider=traced.provider)
    await run(_untraced_agent(), "Refund?")
    assert len(spans_named(traced.records(), "invoke_agent triage")) == 1


async def test_a_model_that_traces_no_round_gets_the_usage_the_sdk_knows() -> None:
    traced = Traced()
    instrument(tracer_provider=traced.provider)
    researcher = Agent(
        name="researcher",
        instructions="Research.",
        model=ScriptedModel([reply("30 days.", 300, 8)], emit_traces=False),
    )
    parent_model = ScriptedModel(
        [
            calls(("researcher", {"input": "rules"}), input_tokens=400, output_tokens=30),
            reply("Yes.", 600, 12),
        ],
        emit_traces=False,
    )
    parent = Agent(
        name="triage",
        instructions="Front desk.",
        model=parent_model,
        tools=[researcher.as_tool(tool_name="researcher", tool_description="Research.")],
    )
    outcome = await run(parent, "Refund?")
    records = traced.records()
    root = spans_named(records, "invoke_agent triage")[0]
    assert attr(root, c.JANUX_BILL_INPUT_TOKENS) == outcome.usage.input_tokens == 1300
    assert attr(root, c.JANUX_BILL_OUTPUT_TOKENS) == outcome.usage.output_tokens == 50
    assert attr(root, c.JANUX_TURN_INPUT_TOKENS) == 1000
    assert invariant_problems(records) == []


async def test_where_the_sdk_knows_no_usage_the_round_is_recorded_without_usage_never_as_zero() -> None:
    traced = Traced()
    instrument(tracer_provider=traced.provider)
    model = ScriptedModel([reply("Refunds take 5 days.", 0, 0)], emit_traces=False)  # reports nothing
    await run(Agent(name="triage", instructions="Front desk.", model=model), "Refund?")
    records = traced.records()
    chats = [s for s in records if s.attributes.get(c.GEN_AI_OPERATION_NAME) == c.OP_CHAT]
    assert len(chats) == 1 and c.GEN_AI_USAGE_INPUT_TOKENS not in chats[0].attributes
    root = spans_named(records, "invoke_agent triage")[0]
    assert attr(root, c.JANUX_TURN_ROUNDS) == 1  # a round ran; its usage is unknown, not zero


async def test_unknown_usage_is_reported_unknown_by_janux_trace_json() -> None:
    from janux.tracing.analysis.report import render_tree, trace_report
    from janux.tracing.analysis.trace_view import reconstruct

    traced = Traced()
    instrument(tracer_provider=traced.provider)
    model = ScriptedModel([reply("Refunds take 5 days.", 0, 0)], emit_traces=False)
    await run(Agent(name="triage", instructions="Front desk.", model=model), "Refund?")
    report = trace_report(reconstruct(traced.records()))
    assert report["input_tokens"] is None and report["cost_kind"] == "unknown"  # never 0
    assert report["usage_read"] == "0/1"
    assert "usage unknown" in render_tree(report)


async def test_instrument_again_registers_the_processor_that_set_trace_processors_removed() -> None:
    traced = Traced()
    first = instrument(tracer_provider=traced.provider)
    set_trace_processors([])  # a library or the app replaces the SDK's processors: Janux's is gone
    await run(_untraced_agent(), "Refund?")
    assert traced.records() == []  # untraced while removed
    again = instrument(tracer_provider=traced.provider)
    assert again is first and _registered() == (forwarder(),)
    instrument(tracer_provider=traced.provider)  # still idempotent once registered again
    assert len(_registered()) == 1
    await run(_untraced_agent(), "Refund?")
    assert len(spans_named(traced.records(), "invoke_agent triage")) == 1
