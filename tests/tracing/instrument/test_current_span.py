"""Code the runtime calls sees the right current span: a model client its `chat`, a tool its `execute_tool`.

Client libraries and user tools instrumented with the plain OpenTelemetry API (HTTP clients, DB
drivers) parent their spans on the current span; with parallel tool calls each task must see its
own tool span, never a sibling's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry import trace

from janux.runtime import Agent, function_tool
from janux.runtime.model import Message, ModelResponse, ToolCall
from janux.runtime.testing import FunctionModel, ScriptedModel, call_tools, reply, tool_call
from tests.support.contract_checker import Traced, contract_problems


async def test_parallel_tools_and_the_model_client_parent_their_own_spans_correctly(traced: Traced) -> None:
    tracer = traced.provider.get_tracer("user-code")

    @function_tool
    async def lookup(key: str) -> str:
        """Opens a span of its own, yielding in between so the parallel calls interleave."""
        with tracer.start_as_current_span(f"db {key}"):
            await asyncio.sleep(0.01)
        return key

    rounds = iter(
        [
            ModelResponse(
                tool_calls=(ToolCall("a", "lookup", '{"key": "a"}'), ToolCall("b", "lookup", '{"key": "b"}')),
                finish_reason="tool_calls",
            ),
            ModelResponse(text="done"),
        ]
    )

    def client(messages: list[Message], tools: list[Any], settings: Any) -> ModelResponse:
        with tracer.start_as_current_span("http POST /chat/completions"):
            return next(rounds)

    agent = Agent("triage", model=FunctionModel(client, model_name="m"), tools=[lookup])
    await agent.run("go", tracer_provider=traced.provider)
    spans = {span.span_id: span for span in traced.records()}
    parent_name = {
        span.name: spans[span.parent_span_id].name for span in spans.values() if span.parent_span_id
    }
    assert parent_name["db a"] == "execute_tool lookup"
    assert parent_name["db b"] == "execute_tool lookup"
    tools = {
        s.attributes["gen_ai.tool.call.id"]: s.span_id
        for s in spans.values()
        if s.name == "execute_tool lookup"
    }
    by_name = {s.name: s for s in spans.values()}
    assert by_name["db a"].parent_span_id == tools["a"] and by_name["db b"].parent_span_id == tools["b"]
    http = [s for s in spans.values() if s.name.startswith("http POST")]
    assert len(http) == 2 and all(spans[s.parent_span_id].name == "chat m" for s in http)
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing leaked into the caller's context


async def test_a_turn_nests_under_the_callers_current_span(traced: Traced) -> None:
    tracer = traced.provider.get_tracer("app")
    model = ScriptedModel([call_tools(tool_call("noop")), reply("ok")])

    def noop() -> str:
        return "ok"

    with tracer.start_as_current_span("POST /support") as request:
        await Agent("triage", model=model, tools=[noop]).run("hi", tracer_provider=traced.provider)
    records = traced.records()
    turn = next(span for span in records if span.name == "invoke_agent triage")
    assert turn.parent_span_id == format(request.get_span_context().span_id, "016x")
    assert contract_problems([span for span in records if span.name != "POST /support"]) == []
