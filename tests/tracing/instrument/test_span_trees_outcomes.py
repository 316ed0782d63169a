"""Whole normalized trees of the other outcomes: each deny rule and budget line, failures, cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from janux.runtime import Agent, Cost, HandoffPolicy, ModelError, RateLimit, Subagent, ToolFilter
from janux.runtime.testing import ScriptedModel, call_tools, delegate, fail, reply, tool_call
from janux.tracing import conventions as c
from tests.support.contract_checker import Traced, contract_problems

from .expected import Bill, Handoff, Own, attempt, chat, failed_chat, handoff_tool, turn
from .test_span_trees import FRONT_OWN, THREAD, _check, _delegation, _front_turn, _parent, _run


async def _until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Let the run proceed until `condition` holds (a fixed sleep would be a guess)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "the run never reached the awaited point"
        await asyncio.sleep(0.001)


def _refuse_secrets(text: str) -> str | None:
    return "no secrets" if "the task" in text else None


DENIALS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        c.DENY_ALLOWED_TOOLS,
        {"policy": HandoffPolicy(allowed_tools=["delegate.other"])},
        "handoff_denied",
        "denied by allowed_tools: 'delegate.researcher' is not on the allow-list",
    ),
    (
        c.DENY_DENIED_TOOLS,
        {"policy": HandoffPolicy(denied_tools=["delegate.res*"])},
        "handoff_denied",
        "denied by denied_tools: 'delegate.researcher' is on the deny-list",
    ),
    (
        c.DENY_MAX_DEPTH,
        {"policy": HandoffPolicy(max_depth=0)},
        "handoff_denied",
        "denied by max_depth 1 exceeds 0",
    ),
    (
        c.DENY_TOOL_FORBIDDEN,
        {"tool_filter": ToolFilter(exclude=["delegate.*"])},
        "tool_forbidden",
        "'delegate.researcher' is outside this agent's tool surface",
    ),
    (
        c.DENY_GUARDRAIL,
        {"input_guardrails": [_refuse_secrets]},
        "guardrail",
        "refused by guardrail: no secrets",
    ),
]


@pytest.mark.parametrize(("rule", "options", "error_type", "error"), DENIALS, ids=[d[0] for d in DENIALS])
async def test_denial_by_each_rule(
    traced: Traced, rule: str, options: dict[str, Any], error_type: str, error: str
) -> None:
    sub = Agent("researcher", model=ScriptedModel([]))
    await _run(traced, _parent(Subagent(agent=sub, max_turns=1), **options))
    handoff = _delegation("researcher", c.STATUS_DENIED, 0, error=error, deny_reason=rule)
    _check(
        traced, _front_turn(handoff_tool(handoff, error_type=error_type), Bill(300, 30, FRONT_OWN.cost, 0))
    )


async def test_rate_limited_denial(traced: Traced) -> None:
    sub = Agent(
        "researcher", model=ScriptedModel([reply("ok", input_tokens=2, output_tokens=1)], model_name="s")
    )
    model = ScriptedModel(
        [
            call_tools(delegate("researcher", "a", id="c1")),
            call_tools(delegate("researcher", "b", id="c2")),
            "end",
        ],
        model_name="f",
    )
    agent = Agent(
        "triage", model=model, subagents=[Subagent(agent=sub, max_turns=1)], rate_limit=RateLimit(max_calls=1)
    )
    await _run(traced, agent)
    first = handoff_tool(
        _delegation("researcher", c.STATUS_COMPLETED, 1),
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(2, 1, None, 3, 1),
                max_turns=1,
                children=[chat("s", "researcher", tokens=(2, 1), cost=None)],
            )
        ],
    )
    error = "rate limit of 1 delegations per 60 s reached"
    second = Handoff(
        "c2", c.KIND_DELEGATE, "delegate.researcher", "researcher", 1, c.STATUS_DENIED, 0,
        error=error, deny_reason=c.DENY_RATE_LIMITED,
    )  # fmt: skip
    _check(
        traced,
        turn(
            "triage",
            THREAD,
            own=Own(0, 0, None, 0, 3),
            bill=Bill(2, 1, None, 3),
            children=[
                chat("f", "triage", tokens=(0, 0), cost=None, finish="tool_calls"),
                first,
                chat("f", "triage", tokens=(0, 0), cost=None, finish="tool_calls"),
                handoff_tool(second, error_type=c.DENY_RATE_LIMITED),
                chat("f", "triage", tokens=(0, 0), cost=None),
            ],
        ),
    )


def search() -> str:
    """A function tool the budget-cut subagents keep calling."""
    return "hit"


async def test_max_tokens_cut(traced: Traced) -> None:
    model = ScriptedModel(
        [call_tools(tool_call("search"), input_tokens=600, output_tokens=10)], model_name="s"
    )
    sub = Agent("researcher", model=model, tools=[search])
    await _run(traced, _parent(Subagent(agent=sub, max_turns=5, max_tokens=500)))
    tool = handoff_tool(
        _delegation("researcher", c.STATUS_CUT, 1, stop_reason=c.STOP_MAX_TOKENS),
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(600, 10, None, 610, 1),
                max_turns=5,
                max_tokens=500,
                stop_reason=c.STOP_MAX_TOKENS,
                children=[chat("s", "researcher", tokens=(600, 10), cost=None, finish="tool_calls")],
            )
        ],
    )
    _check(traced, _front_turn(tool, Bill(900, 40, FRONT_OWN.cost, 610)))


async def test_max_time_cut_cancels_the_attempt_and_records_the_stop_reason(traced: Traced) -> None:
    sub = Agent("researcher", model=ScriptedModel([reply("late", delay=2.0)], model_name="s"))
    await _run(traced, _parent(Subagent(agent=sub, max_turns=2, max_ms=30)))
    tool = handoff_tool(
        _delegation("researcher", c.STATUS_CUT, 1, stop_reason=c.STOP_MAX_TIME),
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(0, 0, None, 0, 0),
                max_turns=2,
                max_ms=30,
                stop_reason=c.STOP_MAX_TIME,
                children=[failed_chat("s", "researcher", c.STOP_MAX_TIME)],
            )
        ],
    )
    _check(traced, _front_turn(tool, Bill(300, 30, FRONT_OWN.cost, 0)))


async def test_failed_delegation(traced: Traced) -> None:
    sub = Agent("researcher", model=ScriptedModel([fail("down"), fail("still down")], model_name="s"))
    await _run(traced, _parent(Subagent(agent=sub, max_turns=1), policy=HandoffPolicy(max_retries=1)))
    error = "attempt 1: model_error: down; attempt 2: model_error: still down"

    def failed(number: int) -> Any:
        return attempt(
            "researcher",
            depth=1,
            number=number,
            own=Own(0, 0, None, 0, 0),
            max_turns=1,
            error_type=c.ERROR_MODEL,
            children=[failed_chat("s", "researcher", c.ERROR_MODEL)],
        )

    tool = handoff_tool(
        _delegation("researcher", c.STATUS_FAILED, 2, error=error),
        error_type=c.ERROR_MODEL,
        children=[failed(1), failed(2)],
    )
    _check(traced, _front_turn(tool, Bill(300, 30, FRONT_OWN.cost, 0)))


async def test_a_failed_turn_ends_its_root_span_with_error(traced: Traced) -> None:
    model = ScriptedModel([fail("provider down", error_type="server_error", status_code=500)], model_name="m")
    with pytest.raises(ModelError, match="provider down"):
        await _run(traced, Agent("triage", model=model))
    _check(
        traced,
        turn(
            "triage",
            THREAD,
            own=Own(0, 0, None, 0, 0),
            bill=Bill(0, 0, None, 0),
            error_type="server_error",
            children=[failed_chat("m", "triage", "server_error")],
        ),
    )


async def test_cancelling_the_turn_mid_delegation_ends_every_span_and_records_handoff_end(
    traced: Traced,
) -> None:
    sub_model = ScriptedModel([reply("late", delay=5.0)], model_name="s")
    sub = Agent("researcher", model=sub_model)
    task = asyncio.create_task(_run(traced, _parent(Subagent(agent=sub, max_turns=1))))
    await _until(lambda: len(sub_model.calls) == 1)  # the subagent is waiting for its model
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    tool = handoff_tool(
        _delegation("researcher", c.STATUS_FAILED, 1, error=c.ERROR_CANCELLED),
        error_type=c.ERROR_CANCELLED,
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(0, 0, None, 0, 0),
                max_turns=1,
                error_type=c.ERROR_CANCELLED,
                children=[failed_chat("s", "researcher", c.ERROR_CANCELLED)],
            )
        ],
    )
    own = Own(100, 10, 1.2e-4, 0, 1)
    expected = turn(
        "triage",
        THREAD,
        own=own,
        bill=Bill(100, 10, 1.2e-4, 0),
        error_type=c.ERROR_CANCELLED,
        children=[chat("front-model", "triage", tokens=(100, 10), cost=1.2e-4, finish="tool_calls"), tool],
    )
    _check(traced, expected)  # a span that was never ended would be missing from the export


async def test_cancelling_parallel_nested_delegations_pairs_every_handoff(traced: Traced) -> None:
    leaf_model = ScriptedModel([reply("late", delay=5.0)] * 2, model_name="l")
    leaf = Agent("leaf", model=leaf_model)
    mid_model = ScriptedModel(
        [call_tools(delegate("leaf", "x", id="x"), delegate("leaf", "y", id="y"))], model_name="m"
    )
    mid = Agent(
        "mid",
        model=mid_model,
        subagents=[Subagent(agent=leaf, max_turns=1)],
        policy=HandoffPolicy(max_depth=2),
    )
    parent = _parent(Subagent(agent=mid, max_turns=2), policy=HandoffPolicy(max_depth=2))
    task = asyncio.create_task(_run(traced, parent))
    await _until(lambda: len(leaf_model.calls) == 2)  # both parallel leaves wait for their model
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    records = traced.records()
    assert contract_problems(records) == []
    tools = [s for s in records if s.attributes.get(c.GEN_AI_TOOL_TYPE) == c.TOOL_TYPE_DELEGATE]
    assert len(tools) == 3 and len(records) == 11  # root, chat, 3 tools, 3 attempts, 3 chats: all ended
    assert {s.events[1].attributes[c.JANUX_HANDOFF_STATUS] for s in tools} == {c.STATUS_FAILED}
    errors = [s.attributes.get(c.ERROR_TYPE) for s in records if s.status_code == "Error"]
    assert errors == [c.ERROR_CANCELLED] * 9  # everything but the two rounds that had completed


async def test_a_raising_input_filter_fails_the_delegation_with_paired_events(traced: Traced) -> None:
    def broken(request: object) -> str:
        raise RuntimeError("filter bug")

    sub = Agent("researcher", model=ScriptedModel([reply("never")]))
    await _run(traced, _parent(Subagent(agent=sub, max_turns=1), policy=HandoffPolicy(input_filter=broken)))
    handoff = _delegation(
        "researcher", c.STATUS_FAILED, 0, error="input_filter raised RuntimeError: filter bug"
    )
    tool = handoff_tool(handoff, error_type="input_filter_error")
    _check(traced, _front_turn(tool, Bill(300, 30, FRONT_OWN.cost, 0)))


async def test_a_round_cut_off_by_the_timeout_then_a_successful_retry(traced: Traced) -> None:
    """The in-flight chat of the timed-out attempt ends ERROR/timeout with no usage; attempt 2 answers."""
    model = ScriptedModel(
        [reply("late", delay=5.0), reply("ok", input_tokens=4, output_tokens=2)], model_name="s"
    )
    sub = Agent("researcher", model=model, cost=Cost(input=1, output=1))
    policy = HandoffPolicy(timeout_ms=30, max_retries=1)
    await _run(traced, _parent(Subagent(agent=sub, max_turns=1), policy=policy))
    tool = handoff_tool(
        _delegation("researcher", c.STATUS_COMPLETED, 2),
        children=[
            attempt(
                "researcher",
                depth=1,
                number=1,
                own=Own(0, 0, None, 0, 0),
                max_turns=1,
                error_type=c.ERROR_TIMEOUT,
                children=[failed_chat("s", "researcher", c.ERROR_TIMEOUT)],
            ),
            attempt(
                "researcher",
                depth=1,
                number=2,
                own=Own(4, 2, 6e-6, 0, 1),
                max_turns=1,
                children=[chat("s", "researcher", tokens=(4, 2), cost=6e-6)],
            ),
        ],
    )
    _check(traced, _front_turn(tool, Bill(304, 32, FRONT_OWN.cost + 6e-6, 0)))  # type: ignore[operator]
