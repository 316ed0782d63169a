"""Issue 11, failure and cancellation: a stray CancelledError is a tool's failure, a cancelled turn
leaves nothing running, listeners are awaited, a failed turn keeps its handoff records, and a
transfer target without a model or price of its own is priced like the agent it took over from."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from janux.runtime import (
    Agent,
    Cost,
    HandoffError,
    HandoffPolicy,
    ModelError,
    OnFailure,
    Subagent,
    function_tool,
    handoff_events_of,
)
from janux.runtime.testing import (
    FunctionModel,
    ScriptedModel,
    call_tools,
    delegate,
    fail,
    reply,
    tool_call,
    transfer,
)
from janux.tracing.conventions import ERROR_TYPE

from .helpers import end_events, leaf, tool_results


class _OpenSpans(SpanProcessor):
    """Spans started and not (yet) ended, by name."""

    def __init__(self) -> None:
        self.open: dict[int, str] = {}
        self.ended: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: object = None) -> None:
        self.open[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.open.pop(span.context.span_id, None)
        self.ended.append(span)


def _provider() -> tuple[TracerProvider, _OpenSpans]:
    spans = _OpenSpans()
    provider = TracerProvider()
    provider.add_span_processor(spans)
    return provider, spans


def _tasks_of_the_turn(before: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() - before if t is not asyncio.current_task() and not t.done()]


# -- 6. a CancelledError raised inside a tool is that tool's failure ----------------------------------


@pytest.mark.parametrize("parallel", [True, False])
async def test_a_cancelled_error_from_inside_a_tool_is_a_tool_error_and_the_turn_completes(
    parallel: bool,
) -> None:
    release = asyncio.Event()
    finished: list[str] = []

    @function_tool
    async def relay() -> str:
        """Awaits a future some other component cancelled."""
        upstream = asyncio.get_running_loop().create_future()
        upstream.cancel()
        return str(await upstream)

    @function_tool
    async def slow() -> str:
        """Finishes once released."""
        await release.wait()
        finished.append("slow")
        return "slow result"

    model = ScriptedModel(
        [call_tools(tool_call("relay", {}, id="r"), tool_call("slow", {}, id="s")), reply("ok")]
    )
    agent = Agent("p", model=model, tools=[relay, slow], parallel_tool_calls=parallel)
    asyncio.get_running_loop().call_soon(release.set)
    provider, spans = _provider()
    before = asyncio.all_tasks()
    result = await agent.run("go", tracer_provider=provider)
    assert result.text == "ok" and finished == ["slow"] and _tasks_of_the_turn(before) == []
    results = tool_results(model, 1)
    assert results["r"]["error"] == "tool_error" and "CancelledError" in results["r"]["detail"]
    assert results["s"] == "slow result"
    assert spans.open == {}
    relay_span = next(s for s in spans.ended if s.name == "execute_tool relay")
    assert relay_span.attributes is not None and relay_span.attributes[ERROR_TYPE] == "tool_error"


async def test_a_cancelled_error_inside_a_delegation_fails_it_and_leaves_the_round_alone() -> None:
    release = asyncio.Event()
    finished: list[str] = []

    async def relaying_model(messages: Any, tools: Any, settings: Any) -> str:
        upstream = asyncio.get_running_loop().create_future()
        upstream.cancel()
        return str(await upstream)  # a client that awaited a request someone else cancelled

    @function_tool
    async def slow() -> str:
        """Finishes once released."""
        await release.wait()
        finished.append("slow")
        return "slow result"

    model = ScriptedModel(
        [call_tools(delegate("worker", "x", id="w"), tool_call("slow", {}, id="s")), reply("ok")]
    )
    agent = Agent(
        "p",
        model=model,
        tools=[slow],
        subagents=[Subagent(agent=Agent("worker", model=FunctionModel(relaying_model)), max_turns=1)],
    )
    asyncio.get_running_loop().call_soon(release.set)
    provider, spans = _provider()
    before = asyncio.all_tasks()
    result = await agent.run("go", tracer_provider=provider)
    assert result.text == "ok" and finished == ["slow"]
    assert tool_results(model, 1)["w"]["error"] == "CancelledError"
    assert end_events(result)[0]["status"] == "failed"
    assert _tasks_of_the_turn(before) == [] and spans.open == {}


async def test_a_cancelled_turn_cancels_and_awaits_every_sibling_and_leaves_nothing_running() -> None:
    started: list[str] = []
    cleaned: list[str] = []
    all_started = asyncio.Event()

    @function_tool
    async def hold(label: str) -> str:
        """Holds until cancelled, then cleans up (which itself takes a moment)."""
        started.append(label)
        if len(started) == 3:
            all_started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # cleanup that awaits: the turn must wait for it
            cleaned.append(label)
        return label

    worker = Agent(
        "worker",
        model=ScriptedModel([call_tools(tool_call("hold", {"label": "deep"})), reply("never")]),
        tools=[hold],
    )
    model = ScriptedModel(
        [
            call_tools(
                tool_call("hold", {"label": "a"}), tool_call("hold", {"label": "b"}), delegate("worker", "go")
            ),
            reply("never"),
        ]
    )
    agent = Agent("p", model=model, tools=[hold], subagents=[Subagent(agent=worker, max_turns=2)])
    provider, spans = _provider()
    before = asyncio.all_tasks()
    turn = asyncio.create_task(agent.run("go", tracer_provider=provider))
    await asyncio.wait_for(all_started.wait(), timeout=60)  # bounds a failing test only
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert sorted(cleaned) == ["a", "b", "deep"]  # every sibling saw the cancellation and finished
    assert _tasks_of_the_turn(before) == []
    assert spans.open == {}


async def test_a_stop_in_one_call_of_a_parallel_round_leaves_no_sibling_running() -> None:
    started: list[str] = []
    cleaned: list[str] = []

    @function_tool
    async def hold() -> str:
        """Never finishes on its own."""
        started.append("hold")
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append("hold")
        return "never"

    def guard(text: str) -> str | None:
        return None if started else "not yet"  # refuses (and so stops the turn) only once hold runs

    model = ScriptedModel([call_tools(tool_call("hold", {}), delegate("worker", "x")), reply("never")])
    agent = Agent(
        "p",
        model=model,
        tools=[hold],
        subagents=[Subagent(agent=leaf("worker", ScriptedModel([])), max_turns=1)],
        policy=HandoffPolicy(denied_tools=["delegate.worker"], on_denied=OnFailure.RAISE),
    )
    provider, spans = _provider()
    before = asyncio.all_tasks()
    with pytest.raises(HandoffError):
        await agent.run("go", tracer_provider=provider)
    assert started == ["hold"] and cleaned == ["hold"]
    assert _tasks_of_the_turn(before) == []
    assert spans.open == {}


# -- 8. listeners and a failed turn's records ------------------------------------------------------


async def test_an_async_listener_is_awaited_for_every_event() -> None:
    heard: list[str] = []

    async def listener(event: dict[str, Any]) -> None:
        await asyncio.sleep(0)
        heard.append(f"{event['event']} {event['status']}")

    model = ScriptedModel([call_tools(delegate("worker", "x")), reply("ok")])
    agent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=leaf("worker", ScriptedModel([reply("done")])), max_turns=1)],
        listeners=[listener],
    )
    await agent.run("go")
    assert heard == ["HANDOFF_START starting", "HANDOFF_END completed"]


async def test_a_failing_async_listener_is_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    async def listener(event: dict[str, Any]) -> None:
        raise RuntimeError("listener down")

    model = ScriptedModel([call_tools(delegate("worker", "x")), reply("ok")])
    agent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=leaf("worker", ScriptedModel([reply("done")])), max_turns=1)],
        listeners=[listener],
    )
    assert (await agent.run("go")).text == "ok"
    assert "listener down" in caplog.text


async def test_a_turn_that_raises_keeps_its_handoff_records_on_the_exception() -> None:
    model = ScriptedModel([call_tools(delegate("worker", "x")), fail("provider down", status_code=503)])
    agent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=leaf("worker", ScriptedModel([reply("done")])), max_turns=1)],
    )
    with pytest.raises(ModelError) as failed:
        await agent.run("go")
    events = handoff_events_of(failed.value)
    assert [(e["event"], e["subagent"], e["status"]) for e in events] == [
        ("HANDOFF_START", "worker", "starting"),
        ("HANDOFF_END", "worker", "completed"),
    ]
    assert failed.value.handoff_events == events  # type: ignore[attr-defined]


# -- 9. transfer pricing ---------------------------------------------------------------------------


def _desk(billing: Agent) -> tuple[Agent, ScriptedModel]:
    front_model = ScriptedModel([call_tools(transfer("billing"), input_tokens=100, output_tokens=10)])
    return Agent(
        "front", model=front_model, handoffs=[billing], cost=Cost(input=1.0, output=2.0)
    ), front_model


async def test_a_target_without_model_or_price_is_priced_at_the_rate_of_the_agent_it_took_over_from() -> None:
    billing = Agent("billing", instructions="You are billing.")  # no model, no cost: the front desk's
    front, front_model = _desk(billing)
    front_model.add(reply("refunded", input_tokens=200, output_tokens=20))
    result = await front.run("charged twice", thread_id="t")
    assert result.agent == "billing" and result.text == "refunded"
    # (100 + 200) input at $1/M and (10 + 20) output at $2/M; nothing unpriced.
    assert result.bill.unpriced_tokens == 0
    assert result.bill.cost == pytest.approx((300 * 1.0 + 30 * 2.0) / 1e6)
    # A later turn that starts as billing answers on the front desk's model, at its price.
    front_model.add(reply("anything else?", input_tokens=50, output_tokens=5))
    later = await front.run("thanks", thread_id="t")
    assert later.agent == "billing" and later.bill.unpriced_tokens == 0
    assert later.bill.cost == pytest.approx((50 * 1.0 + 5 * 2.0) / 1e6)


async def test_a_target_with_its_own_model_but_no_price_stays_unpriced() -> None:
    billing_model = ScriptedModel([reply("refunded", input_tokens=200, output_tokens=20)])
    front, _ = _desk(Agent("billing", model=billing_model))
    result = await front.run("charged twice")
    assert result.bill.unpriced_tokens == 220
    assert result.bill.cost == pytest.approx((100 * 1.0 + 10 * 2.0) / 1e6)  # the front desk's round only


async def test_a_target_with_its_own_price_keeps_it() -> None:
    front, front_model = _desk(
        Agent("billing", cost=Cost(input=10.0, output=20.0))
    )  # front's model, own price
    front_model.add(reply("refunded", input_tokens=200, output_tokens=20))
    result = await front.run("charged twice")
    assert result.bill.cost == pytest.approx((100 * 1.0 + 10 * 2.0 + 200 * 10.0 + 20 * 20.0) / 1e6)
    assert end_events(result)[0]["status"] == "completed"
