"""Property: over random delegation trees with random usage and prices, the accounting invariants hold.

Nodes succeed, fail once then succeed on retry, fail every attempt, are cut by `max_turns`, or hang
in a tool until the caller's per-attempt timeout cancels them (after one booked round) and then
succeed on retry. Whatever happens, every rule of the contract must hold on the trace.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from dataclasses import dataclass, field

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from janux.runtime import Agent, Cost, HandoffPolicy, Subagent
from janux.runtime.testing import ScriptedModel, ScriptStep, call_tools, delegate, fail, reply, tool_call
from janux.tracing import conventions as c
from tests.support.contract_checker import Traced, contract_problems

_names = itertools.count()


@dataclass
class Node:
    """One agent of a generated tree."""

    price: tuple[float, float] | None
    mode: str  # "ok", "retry", "error", "cut" (max_turns) or "hang" (timed out, then retried)
    parallel: bool
    usages: list[tuple[int, int]]
    children: list[Node] = field(default_factory=list)
    name: str = field(default_factory=lambda: f"agent{next(_names)}")


usage = st.tuples(st.integers(0, 5000), st.integers(0, 2000))
price = st.none() | st.tuples(st.floats(0, 60, allow_nan=False), st.floats(0, 60, allow_nan=False))


@st.composite
def trees(draw: st.DrawFn, depth: int = 0) -> Node:
    mode = "ok" if depth == 0 else draw(st.sampled_from(["ok", "ok", "retry", "error", "cut", "hang"]))
    children = draw(st.lists(trees(depth + 1), max_size=3)) if depth < 3 and mode != "cut" else []
    parallel = draw(st.booleans())
    rounds = (1 if parallel else len(children)) + 1 if children else 1
    return Node(
        price=draw(price),
        mode=mode,
        parallel=parallel,
        usages=draw(st.lists(usage, min_size=rounds, max_size=rounds)),
        children=children,
    )


def _steps(node: Node) -> list[ScriptStep]:
    usages = iter(node.usages)
    if node.mode == "error":
        return [fail("boom"), fail("boom again")]
    if node.mode == "cut":
        i, o = next(usages)
        return [call_tools(tool_call("noop"), input_tokens=i, output_tokens=o)]
    steps: list[ScriptStep] = [fail("flaky")] if node.mode == "retry" else []
    if node.mode == "hang":  # one booked round, then a tool the timeout cancels
        steps.append(call_tools(tool_call("slow"), input_tokens=17, output_tokens=3))
    if node.children and node.parallel:
        i, o = next(usages)
        steps.append(
            call_tools(
                *(delegate(child.name, "t") for child in node.children), input_tokens=i, output_tokens=o
            )
        )
    else:
        for child in node.children:
            i, o = next(usages)
            steps.append(call_tools(delegate(child.name, "t"), input_tokens=i, output_tokens=o))
    i, o = next(usages)
    steps.append(reply(f"{node.name} done", input_tokens=i, output_tokens=o))
    return steps


def noop() -> str:
    """A tool that answers at once."""
    return "ok"


async def slow() -> str:
    """A tool that outlasts any per-attempt timeout of this test."""
    await asyncio.sleep(5)
    return "late"


def _build(node: Node) -> Agent:
    hangs = any(child.mode == "hang" for child in node.children)
    return Agent(
        node.name,
        model=ScriptedModel(_steps(node)),
        cost=Cost(input=node.price[0], output=node.price[1]) if node.price else None,
        tools=[noop, slow],
        subagents=[
            Subagent(agent=_build(child), max_turns=1 if child.mode == "cut" else 10)
            for child in node.children
        ],
        policy=HandoffPolicy(max_depth=10, max_retries=1, timeout_ms=HANG_TIMEOUT_MS if hangs else 0),
    )


HANG_TIMEOUT_MS = 100
"""Per-attempt timeout of a caller with a hanging child (other children may hit it too: still valid)."""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_accounting_invariants_hold_over_random_delegation_trees(tree: Node) -> None:
    traced = Traced()
    result = asyncio.run(_build(tree).run("go", tracer_provider=traced.provider))
    records = traced.records()
    assert contract_problems(records) == []
    for span in records:
        if span.attributes.get(c.GEN_AI_OPERATION_NAME) == c.OP_INVOKE_AGENT:
            assert not any(key.startswith("gen_ai.usage.") for key in span.attributes), span.name
    root = next(span for span in records if not span.parent_span_id)
    assert root.attributes[c.JANUX_BILL_INPUT_TOKENS] == result.bill.input_tokens
    assert root.attributes[c.JANUX_BILL_UNPRICED_TOKENS] == result.bill.unpriced_tokens
    chats = [s for s in records if s.attributes.get(c.GEN_AI_OPERATION_NAME) == c.OP_CHAT]
    assert sum(s.attributes.get(c.GEN_AI_USAGE_INPUT_TOKENS, 0) for s in chats) == result.bill.input_tokens
    if result.bill.cost is None:
        assert c.JANUX_BILL_COST not in root.attributes
    else:
        assert math.isclose(root.attributes[c.JANUX_BILL_COST], result.bill.cost, rel_tol=1e-12)
    attempts = [s for s in records if c.JANUX_HANDOFF_ATTEMPT in s.attributes]
    ends = [e for s in records for e in s.events if e.name == c.EVENT_HANDOFF_END]
    for end in ends:  # `--hypothesis-show-statistics` shows which outcomes the examples reached
        event(f"handoff {end.attributes[c.JANUX_HANDOFF_STATUS]}")
    for span in records:
        event(f"span error.type {span.attributes.get(c.ERROR_TYPE)}")
    starts = [e for s in records for e in s.events if e.name == c.EVENT_HANDOFF_START]
    assert len(starts) == len(ends) == sum(1 for e in result.handoff_events if e["event"] == "HANDOFF_END")
    assert len(attempts) == sum(e.attributes[c.JANUX_HANDOFF_ATTEMPTS] for e in ends)
