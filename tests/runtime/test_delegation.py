"""Subagents as tool calls: the tool, its schema, input folding, fresh history and the JSON result."""

from __future__ import annotations

import json

import pytest

from janux.runtime import Agent, Subagent
from janux.runtime.testing import ScriptedModel, call_tools, delegate, reply, tool_call
from janux.runtime.tool_arguments import ToolArgumentsError, parse_delegate_arguments
from janux.runtime.tool_names import delegate_tool_name, handoff_tool_name, normalize_agent_name

from .helpers import end_events, leaf, tool_results


async def test_delegation_result_and_the_parents_first_prompt_shows_the_delegate_tool() -> None:
    sub_model = ScriptedModel([reply("Refunds take 5 days.", input_tokens=40, output_tokens=6)])
    researcher = leaf("researcher", sub_model, description="Finds facts.")
    parent_model = ScriptedModel(
        [
            call_tools(delegate("researcher", "refund delay?", id="c1"), input_tokens=100, output_tokens=10),
            reply("It takes 5 days.", input_tokens=150, output_tokens=5),
        ]
    )
    triage = Agent(
        "triage",
        instructions="Front desk.",
        model=parent_model,
        subagents=[Subagent(agent=researcher, max_turns=2)],
    )

    result = await triage.run("How long do refunds take?", thread_id="t1")

    assert result.text == "It takes 5 days." and result.agent == "triage" and result.thread_id == "t1"
    first = parent_model.calls[0]
    assert first.tool_names == ["delegate.researcher"]
    spec = first.tools[0]
    assert spec.description == "Finds facts."
    assert spec.parameters["required"] == ["task"] and set(spec.parameters["properties"]) == {
        "task",
        "context",
    }
    assert tool_results(parent_model, 1)["c1"] == {
        "subagent": "researcher",
        "tool": "delegate.researcher",
        "text": "Refunds take 5 days.",
        "steps": 1,
    }
    sub_model.assert_complete()
    parent_model.assert_complete()


async def test_subagent_starts_fresh_with_its_own_instructions_and_only_its_result_returns() -> None:
    sub_model = ScriptedModel([reply("done")])
    parent_model = ScriptedModel(
        [call_tools(delegate("worker", "the task", context="some background")), reply("ok")]
    )
    parent = Agent(
        "boss",
        instructions="SECRET PARENT PROMPT",
        model=parent_model,
        subagents=[Subagent(agent=leaf("worker", sub_model), max_turns=1)],
    )
    await parent.run("user question that the worker must not see")
    seen = sub_model.calls[0].messages
    assert [m.role for m in seen] == ["system", "user"]
    assert seen[0].content == "You are worker."
    assert seen[1].content == "the task\n\nContext:\nsome background"
    assert all("SECRET" not in m.content and "user question" not in m.content for m in seen)


@pytest.mark.parametrize(
    ("arguments", "task"),
    [
        ('{"task": "t"}', "t"),
        ('{"task": "t", "context": "c"}', "t\n\nContext:\nc"),
        ('{"task": "t", "context": ""}', "t"),
        ('{"task": "t", "context": null}', "t"),
        ('{"task": "t", "extra": [1]}', "t"),
    ],
)
def test_the_task_is_task_plus_context(arguments: str, task: str) -> None:
    assert parse_delegate_arguments(arguments).text() == task


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ("", "task: Field required"),
        ("   ", "task: Field required"),
        ('{"input": "i"}', "task: Field required"),
        ('{"task": null, "context": "c"}', "task: Field required"),
        ('{"task": 5}', "task: Input should be a valid string, got number"),
        ('{"task": {"nested": "object"}}', "task: Input should be a valid string, got object"),
        ('{"task": "t", "context": ["c"]}', "context: Input should be a valid string, got array"),
        ('"just a string"', "arguments must be a JSON object, got string"),
        ('["a list"]', "arguments must be a JSON object, got array"),
        ("not json at all", "arguments are not valid JSON"),
        ("[" * 100_000, "arguments are nested too deeply"),
    ],
)
def test_arguments_outside_the_delegate_schema_are_refused(arguments: str, problem: str) -> None:
    with pytest.raises(ToolArgumentsError) as refused:
        parse_delegate_arguments(arguments)
    assert str(refused.value).startswith(problem)


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("Researcher", "researcher"),
        ("Fact Checker!", "fact_checker"),
        ("a..b__c", "a_b_c"),
        ("  _x_  ", "x"),
        ("3d-modeler", "agent_3d-modeler"),
        ("Ünïcode name", "n_code_name"),
        ("***", "agent"),
    ],
)
def test_tool_name_normalization(name: str, normalized: str) -> None:
    assert normalize_agent_name(name) == normalized
    assert delegate_tool_name(name) == f"delegate.{normalized}"
    assert handoff_tool_name(name) == f"handoff.{normalized}"


async def test_explicit_tool_name_overrides_the_default() -> None:
    sub_model = ScriptedModel([reply("x")])
    parent_model = ScriptedModel([call_tools(tool_call("ask_docs", {"task": "q"})), reply("y")])
    parent = Agent(
        "p",
        model=parent_model,
        subagents=[Subagent(agent=leaf("Docs Bot", sub_model), max_turns=1, tool_name="ask_docs")],
    )
    result = await parent.run("hi")
    assert parent_model.calls[0].tool_names == ["ask_docs"]
    assert end_events(result)[0]["tool"] == "ask_docs" and end_events(result)[0]["subagent"] == "Docs Bot"


async def test_malformed_delegate_arguments_are_refused_not_sent_as_the_task() -> None:
    sub_model = ScriptedModel([])
    broken = tool_call("delegate.worker", "{broken json", id="c")
    parent_model = ScriptedModel([call_tools(broken), reply("ok")])
    parent = Agent(
        "p", model=parent_model, subagents=[Subagent(agent=leaf("worker", sub_model), max_turns=1)]
    )
    result = await parent.run("hi")
    assert result.text == "ok"
    assert tool_results(parent_model, 1)["c"]["error"] == "invalid_arguments"
    assert sub_model.calls == []


async def test_delegation_steps_counts_the_subagents_rounds() -> None:
    search_calls: list[str] = []

    def search(query: str) -> str:
        search_calls.append(query)
        return "hit"

    sub_model = ScriptedModel([call_tools(tool_call("search", {"query": "q"})), reply("found")])
    worker = Agent("worker", model=sub_model, tools=[search])
    parent_model = ScriptedModel([call_tools(delegate("worker", "go", id="c")), reply("ok")])
    parent = Agent("p", model=parent_model, subagents=[Subagent(agent=worker, max_turns=3)])
    await parent.run("hi")
    assert search_calls == ["q"]
    assert json.loads(parent_model.calls[1].messages[-1].content)["steps"] == 2


async def test_an_unresolvable_subagent_model_is_subagent_model_unavailable_in_the_error_shape() -> None:
    parent_model = ScriptedModel([call_tools(delegate("worker", "x", id="c")), reply("ok")])
    parent = Agent(
        "p", model=parent_model, subagents=[Subagent(agent=Agent("worker", model="gpt-nowhere"), max_turns=1)]
    )
    result = await parent.run("hi", models={"other": ScriptedModel([])})
    payload = tool_results(parent_model, 1)["c"]
    assert set(payload) == {"subagent", "tool", "error", "detail"}
    assert payload["subagent"] == "worker" and payload["tool"] == "delegate.worker"
    assert payload["error"] == "subagent_model_unavailable" and "'gpt-nowhere'" in payload["detail"]
    assert end_events(result)[0]["status"] == "failed" and end_events(result)[0]["attempts"] == 0


async def test_a_subagent_without_a_model_uses_its_callers() -> None:
    parent_model = ScriptedModel(
        [call_tools(delegate("worker", "x", id="c")), reply("sub answer"), reply("parent answer")]
    )
    worker = Agent("worker", instructions="You are worker.")
    parent = Agent("p", model=parent_model, subagents=[Subagent(agent=worker, max_turns=1)])
    result = await parent.run("hi")
    assert result.text == "parent answer"
    assert parent_model.calls[1].system == "You are worker."
    assert tool_results(parent_model, 2)["c"]["text"] == "sub answer"
