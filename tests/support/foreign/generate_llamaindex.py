"""Generate the LlamaIndex fixture: real LlamaIndex agent workflows traced by OpenInference.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_llamaindex [OUT_DIR]`; the
library runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. Every agent's model is
the library's own `MockFunctionCallingLLM`, answering from a script (tool calls or text) with
usage in its raw response; the truth below is written from what each scenario does.

Scenarios: an `AgentWorkflow` whose triage agent hands off to billing, which calls a tool and
answers (`handoff`); a planner whose tool runs a researcher agent (a delegation, `agent_tool`); the
same with a researcher whose model raises (`agent_tool_failed`: the planner's tool call fails, the
planner answers); a planner whose tool runs the triage -> billing workflow (`workflow_tool`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "llamaindex_openinference"
LIBRARY = "llama-index-core 0.14.25 (openinference-instrumentation-llama-index 4.6.1)"
REQUIREMENTS = (
    "llama-index-core==0.14.25",
    "openinference-instrumentation-llama-index==4.6.1",
    "opentelemetry-sdk==1.45.2",
)
"""The pinned versions the fixture was generated with."""

Reply = tuple[list[tuple[str, dict[str, Any]]] | str | Exception, int, int]
"""A scripted answer: tool calls [(tool, args)], a text or an error to raise; prompt and completion
tokens."""


def _model(script: list[Reply], truth: Truth) -> Any:
    """A function-calling mock model answering `script` in order, usage in its raw response."""
    from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole, ToolCallBlock
    from llama_index.core.llms.callbacks import llm_chat_callback
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    queue = list(script)

    def answer() -> ChatResponse:
        content, prompt, completion = queue.pop(0)
        if isinstance(content, Exception):
            raise content
        truth.usage(prompt, completion)
        if isinstance(content, str):
            message = ChatMessage(role=MessageRole.ASSISTANT, content=content)
        else:
            blocks = [
                ToolCallBlock(tool_call_id=f"call_{tool}_{len(queue)}", tool_name=tool, tool_kwargs=args)
                for tool, args in content
            ]
            message = ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        return ChatResponse(message=message, raw={"usage": usage}, delta=message.content or "")

    class Scripted(MockFunctionCallingLLM):
        @llm_chat_callback()
        async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:
            response = answer()

            async def gen() -> Any:
                yield response

            return gen()

        @llm_chat_callback()
        async def achat(self, messages: Any, **kwargs: Any) -> Any:
            return answer()

    return Scripted()


async def _handoff(truth: Truth) -> None:
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent

    triage = FunctionAgent(
        name="triage",
        description="Routes questions.",
        can_handoff_to=["billing"],
        llm=_model([([("handoff", {"to_agent": "billing", "reason": "invoice"})], 130, 12)], truth),
    )
    async def lookup_invoice(number: str) -> str:
        """Look an invoice up."""
        return f"invoice {number}: paid"

    script: list[Reply] = [
        ([("lookup_invoice", {"number": "42"})], 170, 9),
        ("Your invoice is paid.", 190, 7),
    ]
    billing = FunctionAgent(
        name="billing",
        description="Handles invoices.",
        tools=[lookup_invoice],
        llm=_model(script, truth),
    )
    truth.agents, truth.root_agent = ["triage", "billing"], "triage"
    truth.edge("triage", "billing", kind="transfer")
    await AgentWorkflow(agents=[triage, billing], root_agent="triage").run(user_msg="Where is my invoice?")


async def _workflow_tool(truth: Truth) -> None:
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent

    triage = FunctionAgent(
        name="triage",
        description="Routes questions.",
        can_handoff_to=["billing"],
        llm=_model([([("handoff", {"to_agent": "billing", "reason": "invoice"})], 140, 12)], truth),
    )
    billing = FunctionAgent(
        name="billing", description="Handles invoices.", llm=_model([("Paid.", 150, 4)], truth)
    )
    desk = AgentWorkflow(agents=[triage, billing], root_agent="triage")

    async def ask_desk(question: str) -> str:
        """Ask the help desk a question."""
        return str(await desk.run(user_msg=question))

    script: list[Reply] = [
        ([("ask_desk", {"question": "Is invoice 42 paid?"})], 240, 16),
        ("Invoice 42 is paid.", 300, 8),
    ]
    planner = FunctionAgent(name="planner", description="Plans.", tools=[ask_desk], llm=_model(script, truth))
    truth.agents, truth.root_agent = ["planner", "triage", "billing"], "planner"
    truth.edge("planner", "triage")
    truth.edge("triage", "billing", kind="transfer")
    await planner.run(user_msg="Is my invoice paid?")


async def _agent_tool(truth: Truth) -> None:
    from llama_index.core.agent.workflow import FunctionAgent

    researcher = FunctionAgent(
        name="researcher", description="Researches a question.", llm=_model([("Paris.", 210, 8)], truth)
    )

    async def ask_researcher(question: str) -> str:
        """Ask the researcher a question."""
        return str(await researcher.run(user_msg=question))

    script: list[Reply] = [
        ([("ask_researcher", {"question": "capital of France?"})], 260, 18),
        ("It is Paris.", 320, 11),
    ]
    planner = FunctionAgent(
        name="planner", description="Plans.", tools=[ask_researcher], llm=_model(script, truth)
    )
    truth.agents, truth.root_agent = ["planner", "researcher"], "planner"
    truth.edge("planner", "researcher")
    await planner.run(user_msg="What is the capital of France?")


async def _agent_tool_failed(truth: Truth) -> None:
    from llama_index.core.agent.workflow import FunctionAgent

    failing: list[Reply] = [(RuntimeError("model unavailable"), 0, 0)]
    researcher = FunctionAgent(
        name="researcher", description="Researches a question.", llm=_model(failing, truth)
    )

    async def ask_researcher(question: str) -> str:
        """Ask the researcher a question."""
        return str(await researcher.run(user_msg=question))

    script: list[Reply] = [
        ([("ask_researcher", {"question": "capital of France?"})], 260, 18),
        ("I could not find out.", 330, 9),
    ]
    planner = FunctionAgent(
        name="planner", description="Plans.", tools=[ask_researcher], llm=_model(script, truth)
    )
    truth.agents, truth.root_agent = ["planner", "researcher"], "planner"
    truth.edge("planner", "researcher", status="failed")
    await planner.run(user_msg="What is the capital of France?")


def inner(out: Path) -> None:
    """Run every scenario (inside the virtualenv) and write the fixture."""
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=22_06, service="llamaindex-app")
    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)
    writer = Writer(NAME)
    scenarios = (
        ("handoff", _handoff),
        ("agent_tool", _agent_tool),
        ("agent_tool_failed", _agent_tool_failed),
        ("workflow_tool", _workflow_tool),
    )
    for name, run in scenarios:
        truth = Truth(scenario=name, library=LIBRARY)
        try:
            asyncio.run(run(truth))
        except Exception:
            truth.raised = True
        writer.take(exporter, truth)
    writer.write(out)


if __name__ == "__main__":
    venvs.main("llamaindex", "tests.support.foreign.generate_llamaindex", REQUIREMENTS, inner)
