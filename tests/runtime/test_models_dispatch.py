"""ScriptedModel and FunctionModel behaviour, run_sync, dispatch-and-synthesize, and the demo scenarios."""

from __future__ import annotations

import asyncio
import json

import pytest

from janux.demo.scenarios import SCENARIO_NAMES, run_scenarios
from janux.runtime import Agent, ModelError, ModelResponse, ModelSettings, Subagent, dispatch_and_synthesize
from janux.runtime.model import Message
from janux.runtime.testing import (
    FunctionModel,
    ScriptedModel,
    UnconsumedSteps,
    UnexpectedModelCall,
    call_tools,
    delegate,
    fail,
    reply,
    system_contains,
    tool_call,
)

from .helpers import end_events


async def test_scripted_model_steps_usage_errors_and_records() -> None:
    model = ScriptedModel(
        [
            reply("one", input_tokens=3, output_tokens=1),
            call_tools(tool_call("t", {"a": 1})),
            fail("nope", status_code=500),
        ],
        model_name="m",
    )
    settings = ModelSettings()
    first = await model.request([Message("user", "hi")], [], settings)
    assert (first.text, first.usage.input_tokens, first.usage.output_tokens, first.finish_reason) == (
        "one",
        3,
        1,
        "stop",
    )
    second = await model.request([Message("user", "again")], [], settings)
    assert second.tool_calls[0].id == "call_1" and json.loads(second.tool_calls[0].arguments) == {"a": 1}
    assert second.finish_reason == "tool_calls"
    with pytest.raises(ModelError) as raised:
        await model.request([], [], settings)
    assert raised.value.status_code == 500 and raised.value.error_type == "model_error"
    with pytest.raises(UnexpectedModelCall):
        await model.request([Message("user", "extra")], [], settings)
    assert [call.last_user for call in model.calls] == ["hi", "again", "", "extra"]
    assert model.remaining == 0
    with pytest.raises(UnexpectedModelCall, match=r"1 request\(s\) matched no scripted step.*'extra'"):
        model.assert_complete()


async def test_assert_complete_reports_an_unexpected_call_a_delegation_swallowed() -> None:
    sub_model = ScriptedModel([])  # the script forgot the subagent's answer
    parent_model = ScriptedModel([call_tools(delegate("worker", "look it up", id="c")), reply("done")])
    parent = Agent(
        "p", model=parent_model, subagents=[Subagent(agent=Agent("worker", model=sub_model), max_turns=1)]
    )
    result = await parent.run("go")
    # The runtime turned the script error into a failed delegation the parent's model read ...
    assert result.text == "done" and end_events(result)[0]["status"] == "failed"
    assert json.loads(parent_model.calls[1].messages[-1].content)["error"] == "UnexpectedModelCall"
    parent_model.assert_complete()
    # ... but the test still learns about it.
    with pytest.raises(UnexpectedModelCall, match="last user message: 'look it up'"):
        sub_model.assert_complete()


def test_unconsumed_steps_are_reported() -> None:
    model = ScriptedModel(["left over"])
    with pytest.raises(UnconsumedSteps, match="1 scripted step"):
        model.assert_complete()


async def test_when_predicates_route_a_shared_model() -> None:
    model = ScriptedModel([reply("for b", when=system_contains("agent b")), reply("for a")])
    answer_b = await model.request([Message("system", "agent b"), Message("user", "?")], [], ModelSettings())
    answer_a = await model.request([Message("system", "agent a"), Message("user", "?")], [], ModelSettings())
    assert (answer_a.text, answer_b.text) == ("for a", "for b")


async def test_function_model_sync_and_async() -> None:
    def answer(messages: list[Message], tools: object, settings: ModelSettings) -> str:
        return f"echo {messages[-1].content}"

    async def answer_async(messages: list[Message], tools: object, settings: ModelSettings) -> ModelResponse:
        return ModelResponse(text="async")

    assert (await Agent("a", model=FunctionModel(answer)).run("ping")).text == "echo ping"
    model = FunctionModel(answer_async)
    assert (await Agent("a", model=model).run("ping")).text == "async"
    assert model.calls[0].last_user == "ping"


def test_run_sync_works_outside_a_loop_and_refuses_inside_one() -> None:
    agent = Agent("a", model=ScriptedModel(["hello", "again"]))
    assert agent.run_sync("hi").text == "hello"

    async def inside() -> None:
        with pytest.raises(RuntimeError, match="running event loop"):
            agent.run_sync("hi")

    asyncio.run(inside())


async def test_dispatch_fans_out_in_parallel_and_synthesizes() -> None:
    worker_model = ScriptedModel([reply("c1", delay=0.02), reply("c2", delay=0.02), reply("c3", delay=0.02)])
    worker = Agent("worker", model=worker_model)
    synth_model = ScriptedModel([reply("synthesis")])
    synthesizer = Agent("lead", model=synth_model, subagents=[Subagent(agent=worker, max_turns=1)])
    result = await dispatch_and_synthesize(synthesizer, ["t1", "t2", "t3"], question="What did we learn?")
    assert result.text == "synthesis"
    assert worker_model.peak_concurrency == 3
    assert sorted(call.last_user for call in worker_model.calls) == ["t1", "t2", "t3"]
    seen = synth_model.calls[0].messages
    assert seen[1].content == "What did we learn?"
    conclusions = [json.loads(m.content)["text"] for m in seen if m.role == "tool"]
    assert sorted(conclusions) == ["c1", "c2", "c3"]
    assert len(end_events(result)) == 3


async def test_dispatch_rejects_unknown_workers() -> None:
    synthesizer = Agent("lead", model=ScriptedModel([]))
    with pytest.raises(ValueError, match="no subagent"):
        await dispatch_and_synthesize(synthesizer, ["t"])


async def test_every_demo_scenario_runs_and_shows_what_it_is_named_after() -> None:
    outcomes = await run_scenarios(latency_scale=0)
    assert [o.name for o in outcomes] == list(SCENARIO_NAMES)
    assert all(o.error is None and o.result is not None for o in outcomes), [o.error for o in outcomes]
    by_name = {o.name: o.result for o in outcomes if o.result is not None}
    statuses = {
        name: [(e["status"], e["denyReason"] or e["stopReason"]) for e in end_events(r)]
        for name, r in by_name.items()
    }
    assert statuses["retry_then_success"] == [("completed", None)]
    assert end_events(by_name["retry_then_success"])[0]["attempts"] == 2
    assert statuses["timeout_then_fallback"] == [("fallback", None)]
    assert statuses["failed_delegation"] == [("failed", None)]
    for rule in ("allowed_tools", "denied_tools", "tool_forbidden", "guardrail"):
        assert statuses[f"denied_{rule}"] == [("denied", rule)]
    assert statuses["denied_max_depth"] == [("denied", "max_depth"), ("completed", None)]
    assert statuses["denied_rate_limited"] == [("completed", None), ("denied", "rate_limited")]
    for line in ("max_turns", "max_tokens", "max_time"):
        assert statuses[f"cut_{line}"] == [("cut", line)]
    assert by_name["transfer_to_specialist"].agent == "billing"
    assert statuses["nested_delegation"] == [("completed", None), ("completed", None)]
    assert (
        by_name["unpriced_subagent"].bill.unpriced_tokens > 0
        and by_name["unpriced_subagent"].bill.cost is not None
    )
    assert len({o.result.thread_id for o in outcomes if o.result}) == len(outcomes)


async def test_unknown_scenario_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown scenario"):
        await run_scenarios(["nope"])


async def test_dispatch_round_robins_several_workers_and_keeps_governance() -> None:
    shared = ScriptedModel([reply(f"r{i}", delay=0.02) for i in range(4)])
    alpha = Agent("alpha", instructions="You are alpha.", model=shared)
    beta = Agent("beta", instructions="You are beta.", model=shared)
    gamma = Agent("gamma", instructions="You are gamma.", model=ScriptedModel([]))
    synth_model = ScriptedModel([reply("merged")])
    synthesizer = Agent(
        "lead",
        model=synth_model,
        subagents=[Subagent(agent=a, max_turns=1) for a in (alpha, beta, gamma)],
    )
    result = await dispatch_and_synthesize(
        synthesizer, ["t1", "t2", "t3", "t4"], workers=["alpha", "delegate.beta"]
    )
    assert result.text == "merged" and shared.peak_concurrency == 4
    by_worker = sorted((call.system, call.last_user) for call in shared.calls)
    assert by_worker == [
        ("You are alpha.", "t1"),
        ("You are alpha.", "t3"),
        ("You are beta.", "t2"),
        ("You are beta.", "t4"),
    ]
    assert [e["depth"] for e in end_events(result)] == [1, 1, 1, 1]
    with pytest.raises(ValueError, match="'nobody' is not a subagent"):
        await dispatch_and_synthesize(synthesizer, ["t"], workers="nobody")
