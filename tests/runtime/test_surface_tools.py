"""Tool surfaces (filters, intersection, tool_forbidden), function tools and malformed arguments."""

from __future__ import annotations

import gc
import json

from janux.runtime import Agent, Subagent, ToolFilter, function_tool
from janux.runtime.catalog import Role
from janux.runtime.policy import PathRules
from janux.runtime.testing import ScriptedModel, call_tools, delegate, reply, tool_call

from .helpers import end_events, tool_results


async def test_tool_forbidden_is_never_executed_even_when_the_model_calls_it() -> None:
    ran: list[str] = []

    def shown() -> str:
        ran.append("shown")
        return "ok"

    def hidden() -> str:
        ran.append("hidden")
        return "should not run"

    model = ScriptedModel(
        [call_tools(tool_call("hidden", id="h"), tool_call("shown", id="s")), reply("done")]
    )
    agent = Agent("p", model=model, tools=[shown, hidden], tool_filter=ToolFilter(exclude=["hid*"]))
    await agent.run("go")
    assert model.calls[0].tool_names == ["shown"]
    assert ran == ["shown"]
    assert tool_results(model, 1)["h"]["error"] == "tool_forbidden"


async def test_subagent_surface_is_the_intersection_of_parent_and_own_filters() -> None:
    ran: list[str] = []

    def make(name: str) -> object:
        def tool() -> str:
            ran.append(name)
            return name

        tool.__name__ = name
        return tool

    sub_model = ScriptedModel(
        [
            call_tools(
                tool_call("read_a", id="1"), tool_call("write_a", id="2"), tool_call("read_b", id="3")
            ),
            reply("x"),
        ]
    )
    worker = Agent(
        "worker",
        model=sub_model,
        tools=[make("read_a"), make("write_a"), make("read_b")],
        tool_filter=ToolFilter(include=["*_a", "read_*"]),
    )
    model = ScriptedModel([call_tools(delegate("worker", "go")), reply("done")])
    parent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=worker, max_turns=2)],
        tool_filter=ToolFilter(exclude=["write_*"]),
    )
    await parent.run("go")
    assert sub_model.calls[0].tool_names == ["read_a", "read_b"]
    assert sorted(ran) == ["read_a", "read_b"]
    assert tool_results(sub_model, 1)["2"]["error"] == "tool_forbidden"


async def test_forbidden_delegation_is_denied_with_paired_events() -> None:
    sub_model = ScriptedModel([])
    model = ScriptedModel([call_tools(delegate("worker", "x", id="c")), reply("done")])
    parent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=Agent("worker", model=sub_model), max_turns=1)],
        tool_filter=ToolFilter(include=["nothing"]),
    )
    result = await parent.run("go")
    assert model.calls[0].tool_names == []
    assert [e["event"] for e in result.handoff_events] == ["HANDOFF_START", "HANDOFF_END"]
    assert end_events(result)[0]["denyReason"] == "tool_forbidden"
    assert tool_results(model, 1)["c"]["error"] == "tool_forbidden"
    assert sub_model.calls == []


async def test_unknown_tool_becomes_a_readable_error() -> None:
    model = ScriptedModel([call_tools(tool_call("nope", id="n")), reply("done")])
    result = await Agent("p", model=model).run("go")
    assert result.text == "done"
    assert tool_results(model, 1)["n"]["error"] == "unknown_tool"


async def test_malformed_arguments_become_a_tool_error_the_model_reads() -> None:
    @function_tool
    def add(a: int, b: int = 0) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedModel(
        [
            call_tools(
                tool_call("add", "{not json", id="bad_json"),
                tool_call("add", '["a", "list"]', id="not_object"),
                tool_call("add", {"b": 2}, id="missing"),
                tool_call("add", {"a": "x"}, id="wrong_type"),
                tool_call("add", {"a": 1, "c": 3}, id="extra"),
                tool_call("add", {"a": 1, "b": 2}, id="good"),
            ),
            reply("done"),
        ]
    )
    result = await Agent("p", model=model, tools=[add]).run("go")
    assert result.text == "done"
    results = tool_results(model, 1)
    assert results["good"] == 3
    for call_id in ("bad_json", "not_object", "missing", "wrong_type", "extra"):
        assert results[call_id]["error"] == "invalid_arguments", call_id
    assert "not valid JSON" in results["bad_json"]["detail"]
    assert "must be a JSON object" in results["not_object"]["detail"]
    assert results["missing"]["detail"].startswith("a:")
    assert results["wrong_type"]["detail"].startswith("a:")
    assert results["extra"]["detail"].startswith("c:")


async def test_a_raising_tool_becomes_a_tool_error() -> None:
    def explode() -> str:
        raise RuntimeError("kaput")

    model = ScriptedModel([call_tools(tool_call("explode", id="e")), reply("recovered")])
    result = await Agent("p", model=model, tools=[explode]).run("go")
    assert result.text == "recovered"
    assert tool_results(model, 1)["e"] == {
        "tool": "explode",
        "error": "tool_error",
        "detail": "RuntimeError: kaput",
    }


def test_function_tool_schema_and_description() -> None:
    @function_tool(name="lookup.invoice")
    async def lookup(invoice_id: str, include_lines: bool = False) -> dict[str, object]:
        """Find an invoice by id.

        Longer text that is not part of the description.
        """
        return {"id": invoice_id}

    assert lookup.name == "lookup.invoice"
    assert lookup.description == "Find an invoice by id."
    assert lookup.parameters["required"] == ["invoice_id"]
    assert lookup.parameters["properties"]["include_lines"] == {"default": False, "type": "boolean"}
    assert lookup.parameters["additionalProperties"] is False
    assert json.loads(json.dumps(lookup.parameters)) == lookup.parameters


NO_RULES = PathRules()


def test_surfaces_follow_the_filters_content_even_when_a_freed_filters_id_is_reused() -> None:
    # Callers built per request bring their own filters; a freed filter's id is soon handed to the
    # next one (CPython reuses the memory), and the cached surface must not outlive the filter.
    def read_a() -> str:
        return "r"

    def write_a() -> str:
        return "w"

    worker = Agent("worker", tools=[read_a, write_a])
    for _ in range(20):
        reader = ToolFilter(exclude=["write_*"])
        assert worker.surface(Role.SUBAGENT, (reader,), NO_RULES, 1).names == {"read_a"}
        del reader
        gc.collect()
        writer = ToolFilter(include=["write_*"])
        assert worker.surface(Role.SUBAGENT, (writer,), NO_RULES, 1).names == {"write_a"}
    # Equal filters share one cached surface, so the cache stays as small as the distinct filters.
    assert worker.surface(Role.SUBAGENT, (ToolFilter(include=["write_*"]),), NO_RULES, 1) is worker.surface(
        Role.SUBAGENT, (ToolFilter(include=["write_*"]),), NO_RULES, 1
    )
