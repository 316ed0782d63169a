"""Whole normalized span trees of the runtime against the trace contract, one case per test.

Each test runs a scripted turn on a local TracerProvider + InMemorySpanExporter and compares the
complete normalized tree (every span, kind, status, contract attribute, event and child) with one
built from the contract in `expected`. `contract_problems` then checks what a normalized tree
leaves out on purpose: value types, the handoff id shared by events and attempt spans, END's
duration, and accounting invariants 1-3.
"""

from __future__ import annotations

import asyncio
from typing import Any

from janux.runtime import Agent, Cost, HandoffPolicy, OnFailure, Subagent, function_tool
from janux.runtime.testing import ScriptedModel, call_tools, delegate, fail, reply, tool_call, transfer
from janux.runtime.tools import Tool
from janux.tracing import conventions as c
from tests.support.contract_checker import Traced, contract_problems

from .expected import (
    Bill,
    Handoff,
    Node,
    Own,
    attempt,
    chat,
    failed_chat,
    handoff_tool,
    turn,
)
from .expected import function_tool as tool_node

THREAD = "t-1"
FRONT_OWN = Own(300, 30, (100 * 1 + 10 * 2) / 1e6 + (200 * 1 + 20 * 2) / 1e6, 0, 2)
"""triage's own two rounds in `_parent`: 100/10 then 200/20 tokens at $1/$2 per million."""


def _parent(sub: Subagent, *, policy: HandoffPolicy | None = None, **options: Any) -> Agent:
    """triage: round 1 delegates `the task` (call id c1), round 2 answers."""
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


def _front_turn(tool: Node, bill: Bill) -> Node:
    """The expected root of a `_parent` turn whose delegation tool span is `tool`."""
    return turn(
        "triage",
        THREAD,
        own=FRONT_OWN,
        bill=bill,
        children=[
            chat("front-model", "triage", tokens=(100, 10), cost=1.2e-4, finish="tool_calls"),
            tool,
            chat("front-model", "triage", tokens=(200, 20), cost=2.4e-4),
        ],
    )


def _delegation(target: str, status: str, attempts: int, **outcome: Any) -> Handoff:
    return Handoff(
        call_id="c1",
        kind=c.KIND_DELEGATE,
        tool=f"delegate.{target}",
        target=target,
        depth=1,
        status=status,
        attempts=attempts,
        **outcome,
    )


async def _run(traced: Traced, agent: Agent, text: str = "q") -> None:
    await agent.run(text, thread_id=THREAD, tracer_provider=traced.provider)


def _check(traced: Traced, expected: Node) -> None:
    assert traced.tree() == [expected]
    assert contract_problems(traced.records()) == []


async def test_plain_turn(traced: Traced) -> None:
    model = ScriptedModel([reply("hello", input_tokens=12, output_tokens=3)], model_name="m")
    await _run(traced, Agent("triage", model=model, cost=Cost(input=1, output=1)), "hi")
    cost = 15 / 1e6
    _check(
        traced,
        turn(
            "triage",
            THREAD,
            own=Own(12, 3, cost, 0, 1),
            bill=Bill(12, 3, cost, 0),
            children=[chat("m", "triage", tokens=(12, 3), cost=cost)],
        ),
    )


async def test_delegation(traced: Traced) -> None:
    sub = Agent(
        "researcher",
        model=ScriptedModel([reply("facts", input_tokens=50, output_tokens=5)], model_name="sub-model"),
    )
    await _run(traced, _parent(Subagent(agent=sub, max_turns=3, max_tokens=999, max_ms=5000)))
    tool = handoff_tool(
        _delegation("researcher", c.STATUS_COMPLETED, 1),
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(50, 5, None, 55, 1),
                max_turns=3,
                max_tokens=999,
                max_ms=5000,
                children=[chat("sub-model", "researcher", tokens=(50, 5), cost=None)],
            )
        ],
    )
    _check(traced, _front_turn(tool, Bill(350, 35, FRONT_OWN.cost, 55)))


async def test_two_parallel_delegations(traced: Traced) -> None:
    alpha = Agent(
        "alpha",
        model=ScriptedModel([reply("a", input_tokens=5, output_tokens=1, delay=0.02)], model_name="sa"),
        cost=Cost(input=10, output=10),
    )
    beta = Agent(
        "beta",
        model=ScriptedModel([reply("b", input_tokens=7, output_tokens=1, delay=0.02)], model_name="sb"),
    )
    model = ScriptedModel(
        [
            call_tools(delegate("alpha", "x", id="a"), delegate("beta", "y", id="b"), input_tokens=9),
            reply("done", input_tokens=11),
        ],
        model_name="f",
    )
    subagents = [Subagent(agent=alpha, max_turns=1), Subagent(agent=beta, max_turns=1)]
    await _run(traced, Agent("triage", model=model, subagents=subagents))

    def branch(name: str, call_id: str, model_name: str, tokens: tuple[int, int], cost: float | None) -> Node:
        unpriced = 0 if cost is not None else sum(tokens)
        handoff = Handoff(call_id, c.KIND_DELEGATE, f"delegate.{name}", name, 1, c.STATUS_COMPLETED, 1)
        own = Own(*tokens, cost, unpriced, 1)
        inner = [chat(model_name, name, tokens=tokens, cost=cost)]
        return handoff_tool(
            handoff, children=[attempt(name, depth=1, number=1, own=own, max_turns=1, children=inner)]
        )

    _check(
        traced,
        turn(
            "triage",
            THREAD,
            own=Own(20, 0, None, 20, 2),
            bill=Bill(32, 2, 6e-5, 28),
            children=[
                chat("f", "triage", tokens=(9, 0), cost=None, finish="tool_calls"),
                branch("alpha", "a", "sa", (5, 1), 6e-5),
                branch("beta", "b", "sb", (7, 1), None),
                chat("f", "triage", tokens=(11, 0), cost=None),
            ],
        ),
    )
    spans = {s.name: s for s in traced.records()}
    first, second = spans["execute_tool delegate.alpha"], spans["execute_tool delegate.beta"]
    assert first.start_ns < second.end_ns and second.start_ns < first.end_ns  # they overlapped


async def test_retry_has_two_attempt_spans(traced: Traced) -> None:
    sub = Agent(
        "researcher",
        model=ScriptedModel(
            [fail("503", status_code=503), reply("ok", input_tokens=4, output_tokens=1)], model_name="s"
        ),
    )
    await _run(traced, _parent(Subagent(agent=sub, max_turns=2), policy=HandoffPolicy(max_retries=1)))
    tool = handoff_tool(
        _delegation("researcher", c.STATUS_COMPLETED, 2),
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(0, 0, None, 0, 0),
                max_turns=2,
                error_type=c.ERROR_MODEL,
                children=[failed_chat("s", "researcher", c.ERROR_MODEL)],
            ),
            attempt(
                "researcher",
                depth=1,
                number=2,
                own=Own(4, 1, None, 5, 1),
                max_turns=2,
                children=[chat("s", "researcher", tokens=(4, 1), cost=None)],
            ),
        ],
    )
    _check(traced, _front_turn(tool, Bill(304, 31, FRONT_OWN.cost, 5)))


def _slow_tool() -> Tool:
    @function_tool
    async def slow_tool() -> str:
        """Hangs far beyond any timeout of these tests."""
        await asyncio.sleep(5)
        return "late"

    return slow_tool


async def test_timeout_closes_the_cancelled_attempts_spans_with_error_timeout(traced: Traced) -> None:
    sub = Agent(
        "researcher",
        model=ScriptedModel(
            [call_tools(tool_call("slow_tool"), input_tokens=7, output_tokens=2), reply("never")],
            model_name="s",
        ),
        tools=[_slow_tool()],
    )
    await _run(traced, _parent(Subagent(agent=sub, max_turns=3), policy=HandoffPolicy(timeout_ms=30)))
    error = "attempt 1: timeout after 30 ms"
    tool = handoff_tool(
        _delegation("researcher", c.STATUS_FAILED, 1, error=error),
        error_type=c.ERROR_TIMEOUT,
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(7, 2, None, 9, 1),  # the round that completed before the cut is counted
                max_turns=3,
                error_type=c.ERROR_TIMEOUT,
                children=[
                    chat("s", "researcher", tokens=(7, 2), cost=None, finish="tool_calls"),
                    tool_node("slow_tool", "call_1", error_type=c.ERROR_TIMEOUT),
                ],
            )
        ],
    )
    _check(traced, _front_turn(tool, Bill(307, 32, FRONT_OWN.cost, 9)))


async def test_denial_has_paired_events_with_deny_reason_and_no_attempt_span(traced: Traced) -> None:
    sub = Agent("researcher", model=ScriptedModel([]))
    policy = HandoffPolicy(denied_tools=["delegate.researcher"])
    await _run(traced, _parent(Subagent(agent=sub, max_turns=1), policy=policy))
    error = "denied by denied_tools: 'delegate.researcher' is on the deny-list"
    handoff = _delegation("researcher", c.STATUS_DENIED, 0, error=error, deny_reason=c.DENY_DENIED_TOOLS)
    tool = handoff_tool(handoff, error_type="handoff_denied")
    _check(traced, _front_turn(tool, Bill(300, 30, FRONT_OWN.cost, 0)))


async def test_fallback(traced: Traced) -> None:
    @function_tool(name="delegate.researcher")
    def cached(task: str = "") -> str:
        """Cached answers."""
        return "cached"

    sub = Agent("researcher", model=ScriptedModel([fail("down")], model_name="s"))
    policy = HandoffPolicy(on_error=OnFailure.FALLBACK_TO_PRIMARY)
    await _run(traced, _parent(Subagent(agent=sub, max_turns=1), policy=policy, fallback_tools=[cached]))
    tool = handoff_tool(
        _delegation("researcher", c.STATUS_FALLBACK, 1, error="attempt 1: model_error: down"),
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(0, 0, None, 0, 0),
                max_turns=1,
                error_type=c.ERROR_MODEL,
                children=[failed_chat("s", "researcher", c.ERROR_MODEL)],
            )
        ],
    )
    _check(traced, _front_turn(tool, Bill(300, 30, FRONT_OWN.cost, 0)))


async def test_budget_cut_records_the_stop_reason(traced: Traced) -> None:
    def search() -> str:
        return "hit"

    looping = ScriptedModel([call_tools(tool_call("search"), input_tokens=3)] * 2, model_name="s")
    sub = Agent("researcher", model=looping, tools=[search], cost=Cost(input=1, output=1))
    await _run(traced, _parent(Subagent(agent=sub, max_turns=2)))
    tool = handoff_tool(
        _delegation("researcher", c.STATUS_CUT, 1, stop_reason=c.STOP_MAX_TURNS),
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(6, 0, 6e-6, 0, 2),
                max_turns=2,
                stop_reason=c.STOP_MAX_TURNS,
                children=[
                    chat("s", "researcher", tokens=(3, 0), cost=3e-6, finish="tool_calls"),
                    tool_node("search", "call_1"),
                    chat("s", "researcher", tokens=(3, 0), cost=3e-6, finish="tool_calls"),
                ],
            )
        ],
    )
    _check(traced, _front_turn(tool, Bill(306, 30, FRONT_OWN.cost + 6e-6, 0)))  # type: ignore[operator]


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
    await _run(traced, front, "charged twice")
    handoff = Handoff(
        call_id="call_1",
        kind=c.KIND_TRANSFER,
        tool="handoff.billing",
        target="billing",
        depth=0,  # the target takes the same loop over, at the caller's depth
        status=c.STATUS_COMPLETED,
        attempts=1,
        session_mode=c.SESSION_REUSE,
    )
    billing_cost = (9 * 3 + 2 * 3) / 1e6
    _check(
        traced,
        turn(
            "billing",
            THREAD,
            transfer_from="triage",
            own=Own(13, 3, billing_cost, 5, 2),  # triage's round is unpriced, never billed at billing's rate
            bill=Bill(13, 3, billing_cost, 5),
            children=[
                chat("f", "triage", tokens=(4, 1), cost=None, finish="tool_calls"),
                handoff_tool(handoff),
                chat("b", "billing", tokens=(9, 2), cost=billing_cost),
            ],
        ),
    )


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
    # The entry agent caps the whole turn: depth 2 needs its max_depth=2 as well as the researcher's.
    await _run(traced, _parent(Subagent(agent=mid, max_turns=3), policy=HandoffPolicy(max_depth=2)))
    inner = handoff_tool(
        Handoff("call_1", c.KIND_DELEGATE, "delegate.fact_checker", "fact_checker", 2, c.STATUS_COMPLETED, 1),
        children=[
            attempt(
                "fact_checker",
                depth=2,
                number=1,
                own=Own(3, 1, None, 4, 1),
                max_turns=1,
                children=[chat("l", "fact_checker", tokens=(3, 1), cost=None)],
            )
        ],
    )
    mid_cost = 16 / 1e6
    tool = handoff_tool(
        _delegation("researcher", c.STATUS_COMPLETED, 1),
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(6, 2, mid_cost, 0, 2),
                max_turns=3,
                children=[
                    chat("m", "researcher", tokens=(0, 0), cost=0.0, finish="tool_calls"),
                    inner,
                    chat("m", "researcher", tokens=(6, 2), cost=mid_cost),
                ],
            )
        ],
    )
    bill = Bill(309, 33, FRONT_OWN.cost + mid_cost, 4)  # type: ignore[operator]
    _check(traced, _front_turn(tool, bill))
