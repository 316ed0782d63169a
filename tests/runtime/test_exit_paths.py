"""Issue 20: every exit path closes what it opened.

A `BaseException` that is not an `Exception`, a cancellation at a listener's await, a listener's own
`CancelledError`, a tool cancelling its own task: after each, every span is ended, every
HANDOFF_START has its HANDOFF_END, nothing of the turn is still running, and the root's bill equals
the sum of the exported loops' `janux.turn.*`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from janux.runtime import Agent, HandoffPolicy, OnFailure, Subagent, function_tool
from janux.runtime.testing import FunctionModel, ScriptedModel, call_tools, delegate, fail, reply, tool_call
from tests.support.run_audit import RunAudit, live_tasks

from .helpers import end_events, leaf, tool_results


class Abort(BaseException):
    """A custom BaseException that is not an Exception (as a user's framework may define)."""


def _abort_tool(exc: BaseException) -> Any:
    @function_tool
    async def explode() -> str:
        """Raises a BaseException after an await."""
        await asyncio.sleep(0)
        raise exc

    return explode


def _team(sub_model: Any, *, parallel: bool, tools: list[Any] | None = None, **options: Any) -> Agent:
    """p delegates to worker (100 input tokens per round at p, 500 in worker's round)."""
    worker = Agent("worker", model=sub_model, tools=tools or [], parallel_tool_calls=parallel)
    model = ScriptedModel(
        [call_tools(delegate("worker", "go", id="c"), input_tokens=100, output_tokens=1), reply("never")]
    )
    return Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=worker, max_turns=3)],
        parallel_tool_calls=parallel,
        **options,
    )


def _worker_calls_explode() -> ScriptedModel:
    return ScriptedModel(
        [call_tools(tool_call("explode", {}), tool_call("explode", {}), input_tokens=500), reply("never")]
    )


@pytest.mark.parametrize("parallel", [True, False])
async def test_a_base_exception_from_a_subagents_tool_propagates_and_closes_everything(
    parallel: bool,
) -> None:
    agent = _team(_worker_calls_explode(), parallel=parallel, tools=[_abort_tool(Abort("stop now"))])
    audit = RunAudit()
    before = asyncio.all_tasks()
    with pytest.raises(Abort):
        await agent.run("go", tracer_provider=audit.provider)
    assert live_tasks(before) == []
    assert audit.problems() == []
    assert audit.bill_and_turns() == (600, 600)
    tool = audit.named("execute_tool delegate.worker")[0]
    assert tool.attributes["janux.handoff.status"] == "failed" and tool.attributes["error.type"] == "Abort"


async def test_a_base_exception_from_a_subagents_model_closes_everything() -> None:
    def model(messages: Any, tools: Any, settings: Any) -> str:
        raise Abort("model client gave up")

    agent = _team(FunctionModel(model), parallel=False)
    audit = RunAudit()
    with pytest.raises(Abort):
        await agent.run("go", tracer_provider=audit.provider)
    assert audit.problems() == []
    chat = audit.named("chat function-model")[0]
    assert chat.attributes["error.type"] == "Abort"


async def test_a_base_exception_from_a_fallback_handler_closes_everything() -> None:
    def handler(record: Any, arguments: Any) -> str:
        raise Abort("handler gave up")

    worker = leaf("worker", ScriptedModel([fail("upstream 500")]))
    model = ScriptedModel([call_tools(delegate("worker", "go"), input_tokens=100), reply("never")])
    agent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=worker, max_turns=1)],
        policy=HandoffPolicy(on_error=OnFailure.FALLBACK_TO_PRIMARY),
        fallback_handler=handler,
    )
    audit = RunAudit()
    with pytest.raises(Abort):
        await agent.run("go", tracer_provider=audit.provider)
    assert audit.problems() == []


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("parallel", [True, False])
def test_keyboard_interrupt_and_system_exit_close_everything(
    kind: type[BaseException], parallel: bool
) -> None:
    # Outside pytest's own event loop: these two leave asyncio's loop as they leave a program.
    agent = _team(_worker_calls_explode(), parallel=parallel, tools=[_abort_tool(kind())])
    audit = RunAudit()
    with pytest.raises(kind):
        asyncio.run(agent.run("go", tracer_provider=audit.provider))
    assert audit.problems() == []
    assert audit.bill_and_turns() == (600, 600)


# -- cancellation while a listener is awaited --------------------------------------------------------


@pytest.mark.parametrize("event_name", ["HANDOFF_START", "HANDOFF_END"])
async def test_a_turn_cancelled_while_a_listener_is_awaited_closes_every_span(event_name: str) -> None:
    reached = asyncio.Event()

    async def listener(event: dict[str, Any]) -> None:
        if event["event"] == event_name:
            reached.set()
            await asyncio.Event().wait()  # a listener that hangs: only a cancellation ends it

    agent = _team(ScriptedModel([reply("done", input_tokens=500)]), parallel=False, listeners=[listener])
    audit = RunAudit()
    before = asyncio.all_tasks()
    turn = asyncio.create_task(agent.run("go", tracer_provider=audit.provider))
    await asyncio.wait_for(reached.wait(), timeout=60)  # bounds a failing test only
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert live_tasks(before) == []
    assert audit.problems() == []


# -- a listener's own CancelledError, a tool cancelling itself ----------------------------------------


async def test_a_listener_raising_cancelled_error_is_logged_and_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def listener(event: dict[str, Any]) -> None:
        upstream = asyncio.get_running_loop().create_future()
        upstream.cancel()
        await upstream  # a CancelledError nobody asked for: the turn is not being cancelled

    model = ScriptedModel([call_tools(delegate("worker", "go", id="c")), reply("ok")])
    worker = leaf("worker", ScriptedModel([reply("done")]))
    agent = Agent("p", model=model, subagents=[Subagent(agent=worker, max_turns=1)], listeners=[listener])
    audit = RunAudit()
    result = await agent.run("go", tracer_provider=audit.provider)
    assert result.text == "ok" and [e["status"] for e in end_events(result)] == ["completed"]
    assert "CancelledError" in caplog.text and audit.problems() == []


async def test_a_tool_cancelling_its_own_task_in_a_parallel_round_is_that_tools_failure() -> None:
    @function_tool
    async def quit_itself() -> str:
        """Cancels the task it runs in."""
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(0)
        return "never"

    @function_tool
    def fine() -> str:
        """Answers."""
        return "fine"

    model = ScriptedModel(
        [call_tools(tool_call("quit_itself", {}, id="q"), tool_call("fine", {}, id="f")), reply("ok")]
    )
    agent = Agent("p", model=model, tools=[quit_itself, fine])
    audit = RunAudit()
    result = await agent.run("go", tracer_provider=audit.provider)
    assert result.text == "ok"
    results = tool_results(model, 1)
    assert results["q"]["error"] == "tool_error" and "CancelledError" in results["q"]["detail"]
    assert results["f"] == "fine"
    assert audit.named("execute_tool quit_itself")[0].attributes["error.type"] == "tool_error"
    assert audit.problems() == []


# -- cancellation while a model call sleeps (a client's backoff) or a call waits for a session lock ----


async def test_a_turn_cancelled_while_one_delegation_waits_for_a_reused_session_closes_both() -> None:
    from janux.runtime import SessionMode

    entered = asyncio.Event()

    async def slow_model(messages: Any, tools: Any, settings: Any) -> str:
        entered.set()
        await asyncio.sleep(3600)  # as a client backing off before a retry; only a cancellation ends it
        return "never"

    worker = Agent("worker", model=FunctionModel(slow_model))
    model = ScriptedModel(
        [
            call_tools(delegate("worker", "first", id="a"), delegate("worker", "second", id="b")),
            reply("never"),
        ]
    )
    agent = Agent(
        "p", model=model, subagents=[Subagent(agent=worker, max_turns=1, session=SessionMode.REUSE_SESSION)]
    )
    audit = RunAudit()
    before = asyncio.all_tasks()
    turn = asyncio.create_task(agent.run("go", tracer_provider=audit.provider))
    await asyncio.wait_for(entered.wait(), timeout=60)  # one holds the session, the other waits for it
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert live_tasks(before) == [] and audit.problems() == []
    statuses = [s.attributes["janux.handoff.status"] for s in audit.named("execute_tool delegate.worker")]
    assert statuses == ["failed", "failed"]
    chat = audit.named("chat function-model")[0]
    assert chat.attributes["error.type"] == "cancelled"


async def test_a_model_answer_without_countable_usage_fails_the_round_with_its_span_ended() -> None:
    def broken(messages: Any, tools: Any, settings: Any) -> Any:
        return None  # a third-party model class answering nothing the runtime can read

    worker = Agent("worker", model=FunctionModel(broken))
    model = ScriptedModel([call_tools(delegate("worker", "go", id="c"), input_tokens=100), reply("ok")])
    agent = Agent("p", model=model, subagents=[Subagent(agent=worker, max_turns=1)])
    audit = RunAudit()
    result = await agent.run("go", tracer_provider=audit.provider)
    assert result.text == "ok" and tool_results(model, 1)["c"]["error"] == "AttributeError"
    assert audit.problems() == []
    assert audit.named("chat function-model")[0].attributes["error.type"] == "AttributeError"
