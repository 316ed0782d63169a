"""Issue 20, item 5: a fallback's failure says what went wrong, and a blank task is refused.

The calling model reads the fallback handler's error type and message, or the field a fallback
tool's signature could not fill; a delegate call with a blank `task` never starts a subagent.
"""

from __future__ import annotations

from typing import Any

import pytest

from janux.runtime import Agent, HandoffPolicy, OnFailure, Subagent, function_tool
from janux.runtime.testing import ScriptedModel, call_tools, fail, reply, tool_call
from tests.support.run_audit import RunAudit

from .helpers import end_events, leaf, tool_results


def _failing_team(**options: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(
        [call_tools(tool_call("delegate.worker", {"task": "find it"}, id="c")), reply("ok")]
    )
    worker = leaf("worker", ScriptedModel([fail("upstream 500")]))
    agent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=worker, max_turns=1)],
        policy=HandoffPolicy(on_error=OnFailure.FALLBACK_TO_PRIMARY),
        **options,
    )
    return agent, model


async def test_a_raising_fallback_handler_reaches_the_model_with_its_error_type_and_message() -> None:
    def handler(record: Any, arguments: Any) -> str:
        raise ValueError("handler broke")

    agent, model = _failing_team(fallback_handler=handler)
    result = await agent.run("go")
    answer = tool_results(model, 1)["c"]
    assert answer["error"] == "tool_error"
    assert "failed too (tool_error: ValueError: handler broke)" in answer["detail"]
    assert "ValueError: handler broke" in end_events(result)[0]["error"]


async def test_a_fallback_tool_with_the_wrong_signature_names_the_missing_field() -> None:
    @function_tool(name="delegate.worker")
    def primary(query: str) -> str:
        """Expects a query, but delegate calls carry a task."""
        return "never"

    agent, model = _failing_team(fallback_tools=[primary])
    await agent.run("go")
    answer = tool_results(model, 1)["c"]
    assert answer["error"] == "invalid_arguments"
    assert "query: Field required" in answer["detail"]


@pytest.mark.parametrize("task", ["", "   ", "\n\t"])
async def test_a_blank_task_is_invalid_arguments_and_starts_no_subagent(task: str) -> None:
    worker_model = ScriptedModel([reply("never")])
    model = ScriptedModel([call_tools(tool_call("delegate.worker", {"task": task}, id="c")), reply("ok")])
    agent = Agent("p", model=model, subagents=[Subagent(agent=leaf("worker", worker_model), max_turns=1)])
    audit = RunAudit()
    result = await agent.run("go", tracer_provider=audit.provider)
    assert tool_results(model, 1)["c"] == {
        "subagent": "worker",
        "tool": "delegate.worker",
        "error": "invalid_arguments",
        "detail": "task must not be empty",
    }
    assert worker_model.calls == [] and end_events(result)[0]["status"] == "failed"
    assert audit.problems() == []
