"""Normalized span trees of the runtime against the trace contract, case by case."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runtime import Agent, Cost, HandoffPolicy, ModelError, OnFailure, Subagent, function_tool
from runtime.testing import ScriptedModel, call_tools, delegate, fail, reply, tool_call, transfer
from tracing import conventions as c

from .tracing_helpers import Traced, invariant_problems, outline


def _find(tree: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = list(tree)
    while stack:
        node = stack.pop(0)
        if node["name"] == name:
            found.append(node)
        stack.extend(node["children"])
    return found


def _parent(sub: Subagent, *, policy: HandoffPolicy | None = None, **options: Any) -> Agent:
    model = ScriptedModel(
        [
            call_tools(delegate(sub.agent.name, "the task", id="c1"), input_tokens=100, output_tokens=10),
            reply("final", input_tokens=200, output_tokens=20),
        ],
        model_name="front-model",
    )
    return Agent(
        "triage", model=model, subagents=[sub], policy=policy, cost=Cost(input=1, output=2), **options
    )


async def test_plain_turn(traced: Traced) -> None:
    model = ScriptedModel([reply("hello", input_tokens=12, output_tokens=3)], model_name="m")
    await Agent("triage", model=model, cost=Cost(input=1, output=1)).run(
        "hi", thread_id="t-1", tracer_provider=traced.provider
    )
    assert traced.tree() == [
        {
            "name": "invoke_agent triage",
            "kind": "Internal",
            "status": "Unset",
            "attributes": {
                c.GEN_AI_AGENT_NAME: "triage",
                c.GEN_AI_CONVERSATION_ID: "t-1",
                c.GEN_AI_OPERATION_NAME: "invoke_agent",
                c.JANUX_AGENT_DEPTH: 0,
                c.JANUX_BILL_COST: 1.5e-05,
                c.JANUX_BILL_INPUT_TOKENS: 12,
                c.JANUX_BILL_OUTPUT_TOKENS: 3,
                c.JANUX_BILL_UNPRICED_TOKENS: 0,
                c.JANUX_TURN_COST: 1.5e-05,
                c.JANUX_TURN_INPUT_TOKENS: 12,
                c.JANUX_TURN_OUTPUT_TOKENS: 3,
                c.JANUX_TURN_ROUNDS: 1,
                c.JANUX_TURN_UNPRICED_TOKENS: 0,
            },
            "events": [],
            "children": [
                {
                    "name": "chat m",
                    "kind": "Client",
                    "status": "Unset",
                    "attributes": {
                        c.GEN_AI_AGENT_NAME: "triage",
                        c.GEN_AI_OPERATION_NAME: "chat",
                        c.GEN_AI_PROVIDER_NAME: "janux.scripted",
                        c.GEN_AI_REQUEST_MODEL: "m",
                        c.GEN_AI_RESPONSE_FINISH_REASONS: ["stop"],
                        c.GEN_AI_RESPONSE_MODEL: "m",
                        c.GEN_AI_USAGE_INPUT_TOKENS: 12,
                        c.GEN_AI_USAGE_OUTPUT_TOKENS: 3,
                        c.JANUX_ROUND_COST: 1.5e-05,
                    },
                    "events": [],
                    "children": [],
                }
            ],
        }
    ]


async def test_delegation(traced: Traced) -> None:
    sub = Agent(
        "researcher",
        model=ScriptedModel([reply("facts", input_tokens=50, output_tokens=5)], model_name="sub-model"),
    )
    await _parent(Subagent(agent=sub, max_turns=3, max_tokens=999, max_ms=5000)).run(
        "q", tracer_provider=traced.provider
    )
    tree = traced.tree()
    assert outline(tree) == [
        "invoke_agent triage depth=0",
        "  chat front-model",
        "  execute_tool delegate.researcher status=completed attempts=1 events=START,END",
        "    invoke_agent researcher depth=1 attempt=1",
        "      chat sub-model",
        "  chat front-model",
    ]
    tool = _find(tree, "execute_tool delegate.researcher")[0]
    assert (
        tool["attributes"][c.GEN_AI_TOOL_TYPE] == "delegate"
        and tool["attributes"][c.JANUX_HANDOFF_TARGET] == "researcher"
    )
    start, end = tool["events"]
    assert start["attributes"] == {
        c.JANUX_HANDOFF_CALL_ID: "c1",
        c.JANUX_HANDOFF_DEPTH: 1,
        c.JANUX_HANDOFF_KIND: "delegate",
        c.JANUX_HANDOFF_SESSION_MODE: "new_session",
        c.JANUX_HANDOFF_STATUS: "starting",
        c.JANUX_HANDOFF_TARGET: "researcher",
        c.JANUX_HANDOFF_TOOL: "delegate.researcher",
    }
    assert (
        end["attributes"][c.JANUX_HANDOFF_STATUS] == "completed"
        and end["attributes"][c.JANUX_HANDOFF_ATTEMPTS] == 1
    )
    attempt = _find(tree, "invoke_agent researcher")[0]["attributes"]
    assert (
        attempt[c.JANUX_BUDGET_MAX_TURNS],
        attempt[c.JANUX_BUDGET_MAX_TOKENS],
        attempt[c.JANUX_BUDGET_MAX_MS],
    ) == (3, 999, 5000)
    assert c.JANUX_TURN_COST not in attempt and attempt[c.JANUX_TURN_UNPRICED_TOKENS] == 55
    root = tree[0]["attributes"]
    assert (
        root[c.JANUX_TURN_INPUT_TOKENS],
        root[c.JANUX_BILL_INPUT_TOKENS],
        root[c.JANUX_BILL_UNPRICED_TOKENS],
    ) == (300, 350, 55)
    raw = {span.name: span for span in traced.records()}
    ids = {raw["invoke_agent researcher"].attributes[c.JANUX_HANDOFF_ID]}
    ids |= {event.attributes[c.JANUX_HANDOFF_ID] for event in raw["execute_tool delegate.researcher"].events}
    assert len(ids) == 1
    assert invariant_problems(traced.records()) == []


async def test_two_parallel_delegations(traced: Traced) -> None:
    shared = ScriptedModel(
        [
            reply("a", input_tokens=5, output_tokens=1, delay=0.02),
            reply("b", input_tokens=7, output_tokens=1, delay=0.02),
        ],
        model_name="s",
    )
    model = ScriptedModel(
        [call_tools(delegate("alpha", "x", id="a"), delegate("beta", "y", id="b")), reply("done")],
        model_name="f",
    )
    parent = Agent(
        "triage",
        model=model,
        subagents=[
            Subagent(agent=Agent("alpha", model=shared), max_turns=1),
            Subagent(agent=Agent("beta", model=shared), max_turns=1),
        ],
    )
    await parent.run("go", tracer_provider=traced.provider)
    assert outline(traced.tree()) == [
        "invoke_agent triage depth=0",
        "  chat f",
        "  execute_tool delegate.alpha status=completed attempts=1 events=START,END",
        "    invoke_agent alpha depth=1 attempt=1",
        "      chat s",
        "  execute_tool delegate.beta status=completed attempts=1 events=START,END",
        "    invoke_agent beta depth=1 attempt=1",
        "      chat s",
        "  chat f",
    ]
    spans = {s.name: s for s in traced.records()}
    alpha, beta = spans["execute_tool delegate.alpha"], spans["execute_tool delegate.beta"]
    assert alpha.start_ns < beta.end_ns and beta.start_ns < alpha.end_ns  # they overlapped
    assert invariant_problems(traced.records()) == []


async def test_retry_has_two_attempt_spans(traced: Traced) -> None:
    sub = Agent(
        "researcher",
        model=ScriptedModel(
            [fail("503", status_code=503), reply("ok", input_tokens=4, output_tokens=1)], model_name="s"
        ),
    )
    await _parent(Subagent(agent=sub, max_turns=2), policy=HandoffPolicy(max_retries=1)).run(
        "q", tracer_provider=traced.provider
    )
    assert outline(traced.tree()) == [
        "invoke_agent triage depth=0",
        "  chat front-model",
        "  execute_tool delegate.researcher status=completed attempts=2 events=START,END",
        "    invoke_agent researcher [Error model_error] depth=1 attempt=1",
        "      chat s [Error model_error]",
        "    invoke_agent researcher depth=1 attempt=2",
        "      chat s",
        "  chat front-model",
    ]
    assert invariant_problems(traced.records()) == []


async def test_timeout_closes_the_cancelled_attempts_spans_with_error_timeout(traced: Traced) -> None:
    @function_tool
    async def slow_tool() -> str:
        """Hangs."""
        await asyncio.sleep(5)
        return "late"

    sub = Agent(
        "researcher",
        model=ScriptedModel([call_tools(tool_call("slow_tool")), reply("never")], model_name="s"),
        tools=[slow_tool],
    )
    await _parent(Subagent(agent=sub, max_turns=3), policy=HandoffPolicy(timeout_ms=30)).run(
        "q", tracer_provider=traced.provider
    )
    assert outline(traced.tree()) == [
        "invoke_agent triage depth=0",
        "  chat front-model",
        "  execute_tool delegate.researcher [Error timeout] status=failed attempts=1 events=START,END",
        "    invoke_agent researcher [Error timeout] depth=1 attempt=1",
        "      chat s",
        "      execute_tool slow_tool [Error timeout]",
        "  chat front-model",
    ]
    assert all(span.end_ns >= span.start_ns for span in traced.records())
    assert invariant_problems(traced.records()) == []


async def test_denial_has_paired_events_with_deny_reason_and_no_attempt_span(traced: Traced) -> None:
    sub = Agent("researcher", model=ScriptedModel([]))
    await _parent(
        Subagent(agent=sub, max_turns=1), policy=HandoffPolicy(denied_tools=["delegate.researcher"])
    ).run("q", tracer_provider=traced.provider)
    tree = traced.tree()
    assert outline(tree) == [
        "invoke_agent triage depth=0",
        "  chat front-model",
        "  execute_tool delegate.researcher [Error handoff_denied] status=denied attempts=0 deny_reason=denied_tools events=START,END",  # noqa: E501
        "  chat front-model",
    ]
    end = _find(tree, "execute_tool delegate.researcher")[0]["events"][1]["attributes"]
    assert end[c.JANUX_HANDOFF_DENY_REASON] == "denied_tools" and "deny-list" in end[c.JANUX_HANDOFF_ERROR]


async def test_fallback(traced: Traced) -> None:
    @function_tool(name="delegate.researcher")
    def cached(task: str = "") -> str:
        """Cached."""
        return "cached"

    sub = Agent("researcher", model=ScriptedModel([fail("down")], model_name="s"))
    policy = HandoffPolicy(on_error=OnFailure.FALLBACK_TO_PRIMARY)
    await _parent(Subagent(agent=sub, max_turns=1), policy=policy, fallback_tools=[cached]).run(
        "q", tracer_provider=traced.provider
    )
    assert outline(traced.tree()) == [
        "invoke_agent triage depth=0",
        "  chat front-model",
        "  execute_tool delegate.researcher status=fallback attempts=1 events=START,END",
        "    invoke_agent researcher [Error model_error] depth=1 attempt=1",
        "      chat s [Error model_error]",
        "  chat front-model",
    ]


async def test_budget_cut_records_the_stop_reason(traced: Traced) -> None:
    def search() -> str:
        return "hit"

    looping = ScriptedModel([call_tools(tool_call("search"))] * 2, model_name="s")
    sub = Agent("researcher", model=looping, tools=[search])
    await _parent(Subagent(agent=sub, max_turns=2)).run("q", tracer_provider=traced.provider)
    assert outline(traced.tree()) == [
        "invoke_agent triage depth=0",
        "  chat front-model",
        "  execute_tool delegate.researcher status=cut attempts=1 stop_reason=max_turns events=START,END",
        "    invoke_agent researcher depth=1 attempt=1 stop_reason=max_turns",
        "      chat s",
        "      execute_tool search",
        "      chat s",
        "  chat front-model",
    ]


async def test_max_time_cut_cancels_and_records_the_stop_reason(traced: Traced) -> None:
    sub = Agent("researcher", model=ScriptedModel([reply("late", delay=2.0)], model_name="s"))
    await _parent(Subagent(agent=sub, max_turns=2, max_ms=30)).run("q", tracer_provider=traced.provider)
    assert outline(traced.tree()) == [
        "invoke_agent triage depth=0",
        "  chat front-model",
        "  execute_tool delegate.researcher status=cut attempts=1 stop_reason=max_time events=START,END",
        "    invoke_agent researcher depth=1 attempt=1 stop_reason=max_time",
        "      chat s [Error max_time]",
        "  chat front-model",
    ]


async def test_transfer(traced: Traced) -> None:
    billing = Agent(
        "billing",
        model=ScriptedModel([reply("refunded", input_tokens=9, output_tokens=2)], model_name="b"),
        cost=Cost(input=3, output=3),
    )
    front = Agent(
        "triage",
        model=ScriptedModel(
            [call_tools(transfer("billing", "refund"), input_tokens=4, output_tokens=1)], model_name="f"
        ),
        handoffs=[billing],
    )
    await front.run("charged twice", tracer_provider=traced.provider)
    tree = traced.tree()
    assert outline(tree) == [
        "invoke_agent triage depth=0 from=triage to=billing",
        "  chat f",
        "  execute_tool handoff.billing status=completed attempts=1 events=START,END",
        "  chat b",
    ]
    root = tree[0]["attributes"]
    assert root[c.GEN_AI_AGENT_NAME] == "billing"
    assert [
        chat["attributes"][c.GEN_AI_AGENT_NAME] for chat in _find(tree, "chat f") + _find(tree, "chat b")
    ] == ["triage", "billing"]
    assert _find(tree, "chat b")[0]["attributes"][c.JANUX_ROUND_COST] == 3.3e-05
    assert c.JANUX_ROUND_COST not in _find(tree, "chat f")[0]["attributes"]
    start = _find(tree, "execute_tool handoff.billing")[0]["events"][0]["attributes"]
    assert start[c.JANUX_HANDOFF_KIND] == "transfer" and start[c.JANUX_HANDOFF_DEPTH] == 0
    assert invariant_problems(traced.records()) == []


async def test_nested_delegation_at_depth_2(traced: Traced) -> None:
    leaf = Agent(
        "fact_checker",
        model=ScriptedModel([reply("confirmed", input_tokens=3, output_tokens=1)], model_name="l"),
    )
    mid_model = ScriptedModel(
        [call_tools(delegate("fact_checker", "check")), reply("checked", input_tokens=6, output_tokens=2)],
        model_name="m",
    )
    mid = Agent(
        "researcher",
        model=mid_model,
        subagents=[Subagent(agent=leaf, max_turns=1)],
        policy=HandoffPolicy(max_depth=2),
        cost=Cost(input=2, output=2),
    )
    await _parent(Subagent(agent=mid, max_turns=3)).run("q", tracer_provider=traced.provider)
    tree = traced.tree()
    assert outline(tree) == [
        "invoke_agent triage depth=0",
        "  chat front-model",
        "  execute_tool delegate.researcher status=completed attempts=1 events=START,END",
        "    invoke_agent researcher depth=1 attempt=1",
        "      chat m",
        "      execute_tool delegate.fact_checker status=completed attempts=1 events=START,END",
        "        invoke_agent fact_checker depth=2 attempt=1",
        "          chat l",
        "      chat m",
        "  chat front-model",
    ]
    inner = _find(tree, "execute_tool delegate.fact_checker")[0]["events"][0]["attributes"]
    assert inner[c.JANUX_HANDOFF_DEPTH] == 2
    assert invariant_problems(traced.records()) == []


async def test_a_failed_turn_ends_its_root_span_with_error(traced: Traced) -> None:
    agent = Agent(
        "triage",
        model=ScriptedModel(
            [fail("provider down", error_type="server_error", status_code=500)], model_name="m"
        ),
    )
    with pytest.raises(ModelError, match="provider down"):
        await agent.run("q", tracer_provider=traced.provider)
    assert outline(traced.tree()) == [
        "invoke_agent triage [Error server_error] depth=0",
        "  chat m [Error server_error]",
    ]


async def test_cancelling_the_turn_closes_every_span_and_pairs_the_events(traced: Traced) -> None:
    sub = Agent("researcher", model=ScriptedModel([reply("late", delay=5.0)], model_name="s"))
    task = asyncio.create_task(
        _parent(Subagent(agent=sub, max_turns=1)).run("q", tracer_provider=traced.provider)
    )
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert outline(traced.tree()) == [
        "invoke_agent triage [Error cancelled] depth=0",
        "  chat front-model",
        "  execute_tool delegate.researcher [Error cancelled] status=failed attempts=1 events=START,END",
        "    invoke_agent researcher [Error cancelled] depth=1 attempt=1",
        "      chat s [Error cancelled]",
    ]
    end = _find(traced.tree(), "execute_tool delegate.researcher")[0]["events"][1]["attributes"]
    assert end[c.JANUX_HANDOFF_ERROR] == "cancelled"
