"""Rate limit, guardrails, per-round pricing and the turn bill, handoff event listeners."""

from __future__ import annotations

import math
from typing import Any

import pytest

from janux.runtime import Agent, Cost, GuardrailRefused, HandoffPolicy, RateLimit, Subagent
from janux.runtime.testing import ScriptedModel, call_tools, delegate, reply

from .helpers import end_events, tool_results


async def test_each_delegation_spends_one_slot_of_the_callers_rate_limit() -> None:
    sub_model = ScriptedModel([reply("one"), reply("two")])
    model = ScriptedModel(
        [
            call_tools(delegate("w", "a", id="1")),
            call_tools(delegate("w", "b", id="2")),
            call_tools(delegate("w", "c", id="3")),
            reply("done"),
        ]
    )
    parent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=Agent("w", model=sub_model), max_turns=1)],
        rate_limit=RateLimit(max_calls=2, per_seconds=60),
    )
    result = await parent.run("go")
    assert [e["status"] for e in end_events(result)] == ["completed", "completed", "denied"]
    assert end_events(result)[2]["denyReason"] == "rate_limited"
    assert tool_results(model, 3)["3"]["error"] == "rate_limited"
    assert len(sub_model.calls) == 2


async def test_guardrail_refuses_a_delegated_task_before_any_subagent_round() -> None:
    checked: list[str] = []

    async def no_secrets(text: str) -> str | None:
        checked.append(text)
        return "mentions a password" if "password" in text else None

    sub_model = ScriptedModel([reply("fine")])
    model = ScriptedModel(
        [
            call_tools(delegate("w", "reset the password", id="bad"), delegate("w", "say hello", id="ok")),
            reply("done"),
        ]
    )
    parent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=Agent("w", model=sub_model), max_turns=1)],
        input_guardrails=[no_secrets],
    )
    result = await parent.run("please help")
    assert "please help" in checked and "reset the password" in checked
    bad = tool_results(model, 1)["bad"]
    assert bad["error"] == "guardrail" and "mentions a password" in bad["detail"]
    assert [e["denyReason"] for e in end_events(result)] == ["guardrail", None]
    assert [c.last_user for c in sub_model.calls] == ["say hello"]


async def test_guardrail_on_the_turn_input_refuses_the_turn() -> None:
    model = ScriptedModel([])
    agent = Agent("p", model=model, input_guardrails=[lambda text: "no" if "bad" in text else None])
    with pytest.raises(GuardrailRefused, match="no"):
        await agent.run("bad input")
    assert model.calls == []


async def test_a_raising_guardrail_refuses_fail_closed() -> None:
    def broken_on_tasks(text: str) -> str | None:
        if text.startswith("task:"):
            raise ValueError("checker crashed")
        return None

    sub_model = ScriptedModel([])
    model = ScriptedModel([call_tools(delegate("w", "task: x", id="c")), reply("done")])
    parent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=Agent("w", model=sub_model), max_turns=1)],
        input_guardrails=[broken_on_tasks],
    )
    result = await parent.run("hello")
    assert tool_results(model, 1)["c"]["error"] == "guardrail"
    assert "guardrail error: ValueError" in tool_results(model, 1)["c"]["detail"]
    assert end_events(result)[0]["denyReason"] == "guardrail" and sub_model.calls == []


async def test_each_round_is_priced_by_its_own_agent_and_unknown_stays_none() -> None:
    priced_sub = ScriptedModel([reply("a", input_tokens=1_000_000, output_tokens=0)])
    free_sub = ScriptedModel([reply("b", input_tokens=300, output_tokens=20)])
    model = ScriptedModel(
        [
            call_tools(
                delegate("priced", "x"),
                delegate("free", "y"),
                input_tokens=2_000_000,
                output_tokens=1_000_000,
            ),
            reply("done", input_tokens=0, output_tokens=0),
        ]
    )
    parent = Agent(
        "p",
        model=model,
        cost=Cost(input=1.0, output=2.0),
        subagents=[
            Subagent(agent=Agent("priced", model=priced_sub, cost=Cost(input=5.0, output=0.0)), max_turns=1),
            Subagent(agent=Agent("free", model=free_sub), max_turns=1),
        ],
    )
    result = await parent.run("go")
    bill = result.bill
    assert bill.input_tokens == 3_000_300 and bill.output_tokens == 1_000_020
    assert bill.cost is not None and math.isclose(bill.cost, 2.0 + 2.0 + 5.0)
    assert bill.unpriced_tokens == 320
    assert bill.rounds == 4


async def test_an_unpriced_turn_has_no_cost_not_zero() -> None:
    result = await Agent("p", model=ScriptedModel([reply("x", input_tokens=10, output_tokens=3)])).run("go")
    assert result.bill.cost is None and result.bill.unpriced_tokens == 13


async def test_listeners_receive_paired_events_with_the_documented_keys() -> None:
    seen: list[dict[str, Any]] = []
    entry_seen: list[dict[str, Any]] = []

    def broken_listener(event: dict[str, Any]) -> None:
        raise RuntimeError("listener bug")

    leaf_model = ScriptedModel([reply("leaf")])
    mid_model = ScriptedModel([call_tools(delegate("leaf", "deep")), reply("mid")])
    mid = Agent(
        "mid", model=mid_model, subagents=[Subagent(agent=Agent("leaf", model=leaf_model), max_turns=1)]
    )
    mid.add_listener(seen.append)
    model = ScriptedModel([call_tools(delegate("mid", "go", id="top")), reply("done")])
    top = Agent(
        "top",
        model=model,
        subagents=[Subagent(agent=mid, max_turns=2)],
        listeners=[broken_listener, entry_seen.append],
        policy=HandoffPolicy(max_depth=2),
    )
    result = await top.run("go")
    assert result.text == "done"
    keys = {
        "event",
        "handoffId",
        "callId",
        "kind",
        "tool",
        "subagent",
        "status",
        "depth",
        "sessionMode",
        "attempts",
        "durationMillis",
        "output",
        "error",
        "denyReason",
        "stopReason",
    }
    assert all(set(event) == keys for event in result.handoff_events)
    # mid's own listener hears mid's delegation (denied: mid's policy allows depth 1 only).
    assert [(e["event"], e["subagent"]) for e in seen] == [("HANDOFF_START", "leaf"), ("HANDOFF_END", "leaf")]
    assert seen[1]["status"] == "denied"
    # The entry agent hears everything of the turn.
    assert [(e["event"], e["subagent"]) for e in entry_seen] == [
        ("HANDOFF_START", "mid"),
        ("HANDOFF_START", "leaf"),
        ("HANDOFF_END", "leaf"),
        ("HANDOFF_END", "mid"),
    ]
    top_end = entry_seen[-1]
    assert top_end["callId"] == "top" and top_end["output"] == "mid" and top_end["durationMillis"] >= 0
    assert top_end["handoffId"] == entry_seen[0]["handoffId"]
