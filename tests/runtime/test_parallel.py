"""Fork-join tool calls: concurrency, call order, fallback beside success, depth under parallel nesting."""

from __future__ import annotations

import asyncio
import json

from janux.runtime import Agent, HandoffPolicy, OnFailure, Subagent, function_tool
from janux.runtime._loop.context import current_depth
from janux.runtime.testing import ScriptedModel, call_tools, delegate, fail, reply, tool_call, user_contains

from .helpers import end_events, leaf, tool_results


async def test_two_delegations_in_one_round_run_concurrently() -> None:
    shared = ScriptedModel([reply("A", delay=0.05), reply("B", delay=0.05)])
    parent_model = ScriptedModel(
        [call_tools(delegate("alpha", "task a", id="a"), delegate("beta", "task b", id="b")), reply("both")]
    )
    parent = Agent(
        "p",
        model=parent_model,
        subagents=[
            Subagent(agent=leaf("alpha", shared), max_turns=1),
            Subagent(agent=leaf("beta", shared), max_turns=1),
        ],
    )
    result = await parent.run("go")
    assert shared.peak_concurrency == 2
    assert result.text == "both"
    results = tool_results(parent_model, 1)
    assert {results["a"]["subagent"], results["b"]["subagent"]} == {"alpha", "beta"}


async def test_parallel_tool_calls_off_runs_them_one_by_one() -> None:
    shared = ScriptedModel([reply("A", delay=0.02), reply("B", delay=0.02)])
    parent_model = ScriptedModel([call_tools(delegate("alpha", "a"), delegate("beta", "b")), reply("done")])
    parent = Agent(
        "p",
        model=parent_model,
        parallel_tool_calls=False,
        subagents=[
            Subagent(agent=leaf("alpha", shared), max_turns=1),
            Subagent(agent=leaf("beta", shared), max_turns=1),
        ],
    )
    await parent.run("go")
    assert shared.peak_concurrency == 1


async def test_results_come_back_in_call_order_even_when_the_first_finishes_last() -> None:
    finished: list[str] = []

    @function_tool
    async def slow(label: str, wait: float) -> str:
        """Wait, then echo."""
        await asyncio.sleep(wait)
        finished.append(label)
        return label

    parent_model = ScriptedModel(
        [
            call_tools(
                tool_call("slow", {"label": "first", "wait": 0.05}, id="1"),
                tool_call("slow", {"label": "second", "wait": 0.0}, id="2"),
            ),
            reply("ok"),
        ]
    )
    await Agent("p", model=parent_model, tools=[slow]).run("go")
    assert finished == ["second", "first"]
    tool_messages = [m for m in parent_model.calls[1].messages if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [("1", "first"), ("2", "second")]


async def test_one_falls_back_under_on_error_while_the_other_succeeds() -> None:
    good = ScriptedModel([reply("fresh answer", delay=0.01)])
    bad = ScriptedModel([fail("upstream 500", delay=0.01)])

    @function_tool(name="delegate.flaky")
    def cached(task: str = "", context: str = "") -> str:
        """Primary executor's cached answer."""
        return f"cached answer for {task}"

    parent_model = ScriptedModel(
        [call_tools(delegate("good", "q1", id="g"), delegate("flaky", "q2", id="f")), reply("merged")]
    )
    parent = Agent(
        "p",
        model=parent_model,
        subagents=[
            Subagent(agent=leaf("good", good), max_turns=1),
            Subagent(agent=leaf("flaky", bad), max_turns=1),
        ],
        policy=HandoffPolicy(on_error=OnFailure.FALLBACK_TO_PRIMARY),
        fallback_tools=[cached],
    )
    result = await parent.run("go")
    results = tool_results(parent_model, 1)
    assert results["g"]["text"] == "fresh answer"
    assert results["f"] == "cached answer for q2"
    statuses = {event["subagent"]: event["status"] for event in end_events(result)}
    assert statuses == {"good": "completed", "flaky": "fallback"}
    flaky_end = next(e for e in end_events(result) if e["subagent"] == "flaky")
    assert "upstream 500" in flaky_end["error"]


async def test_depth_is_right_for_parallel_nested_delegation() -> None:
    depths: list[tuple[str, int]] = []

    def probe(label: str) -> str:
        depths.append((label, current_depth()))
        return label

    leaf_model = ScriptedModel(
        [
            call_tools(tool_call("probe", {"label": "x"}), when=user_contains("x")),
            call_tools(tool_call("probe", {"label": "y"}), when=user_contains("y")),
            reply("x done", when=user_contains("x")),
            reply("y done", when=user_contains("y")),
        ]
    )
    leaf_agent = Agent("leaf", model=leaf_model, tools=[probe])
    mid_model = ScriptedModel([call_tools(delegate("leaf", "x"), delegate("leaf", "y")), reply("mid done")])
    mid = Agent(
        "mid",
        model=mid_model,
        subagents=[Subagent(agent=leaf_agent, max_turns=3)],
        policy=HandoffPolicy(max_depth=2),
    )
    top_model = ScriptedModel([call_tools(delegate("mid", "fan out")), reply("top done")])
    top = Agent(
        "top",
        model=top_model,
        subagents=[Subagent(agent=mid, max_turns=3)],
        policy=HandoffPolicy(max_depth=2),  # the entry caps the turn: depth 2 needs its consent too
    )
    result = await top.run("go")
    assert sorted(depths) == [("x", 2), ("y", 2)]
    assert sorted(event["depth"] for event in end_events(result)) == [1, 2, 2]
    assert all(event["status"] == "completed" for event in end_events(result))
    assert json.loads(mid_model.calls[1].messages[-1].content)["text"] in {"x done", "y done"}
