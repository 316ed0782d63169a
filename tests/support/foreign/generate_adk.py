"""Generate the Google ADK fixture: real ADK agents with ADK's own OpenTelemetry GenAI spans.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_adk [OUT_DIR]`; the library runs
in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. Every agent's model is a `BaseLlm`
that answers from a script (function calls or text, with or without usage metadata); the truth
below is written from what each scenario does.

Scenarios: a router transferring to its `billing` sub-agent (`transfer_to_agent`), a planner
using a researcher through `AgentTool` (a delegation), the same with models that report no usage,
and with only the researcher's model reporting none.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "adk"
LIBRARY = "google-adk 2.13.0 (its own OpenTelemetry GenAI spans)"
REQUIREMENTS = ("google-adk==2.13.0", "google-genai==2.34.0", "opentelemetry-sdk==1.44.0")
"""The pinned versions the fixture was generated with."""

Reply = tuple[list[tuple[str, dict[str, Any]]] | str, int | None, int | None]
"""A scripted answer: function calls [(name, args)] or a text, prompt and candidate tokens (None:
the response carries no usage metadata)."""


def _model(name: str, script: list[Reply] | list[Reply | Exception], truth: Truth) -> Any:
    """A model answering `script` in order."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    queue = list(script)

    class Scripted(BaseLlm):
        async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
            step = queue.pop(0)
            if isinstance(step, Exception):
                raise step
            content, tokens_in, tokens_out = step
            if isinstance(content, str):
                parts = [types.Part(text=content)]
            else:
                parts = [
                    types.Part(function_call=types.FunctionCall(name=tool, args=args))
                    for tool, args in content
                ]
            usage = None
            if tokens_in is not None and tokens_out is not None:
                truth.usage(tokens_in, tokens_out)
                usage = types.GenerateContentResponseUsageMetadata(
                    prompt_token_count=tokens_in,
                    candidates_token_count=tokens_out,
                    total_token_count=tokens_in + tokens_out,
                )
            else:
                truth.unread_calls += 1
            yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)

    return Scripted(model=name)


async def _run(agent: Any) -> None:
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    runner = InMemoryRunner(agent=agent, app_name="janux-fixture")
    session = await runner.session_service.create_session(app_name="janux-fixture", user_id="u1")
    message = types.Content(role="user", parts=[types.Part(text="hello")])
    async for _ in runner.run_async(user_id="u1", session_id=session.id, new_message=message):
        pass


def _transfer(truth: Truth) -> Any:
    from google.adk.agents import LlmAgent

    billing = LlmAgent(
        name="billing",
        description="Handles invoices.",
        model=_model("gemini-2.5-flash", [("Your invoice is paid.", 140, 11)], truth),
    )
    truth.agents, truth.root_agent = ["router", "billing"], "router"
    truth.edge("router", "billing", kind="transfer")
    script: list[Reply] = [([("transfer_to_agent", {"agent_name": "billing"})], 90, 8)]
    return LlmAgent(name="router", model=_model("gemini-2.5-flash", script, truth), sub_agents=[billing])


def _agent_tool(truth: Truth, planner_usage: bool = True, researcher_usage: bool = True) -> Any:
    """A planner using a researcher through `AgentTool`; either model may report no usage."""
    from google.adk.agents import LlmAgent
    from google.adk.tools.agent_tool import AgentTool

    def tokens(a: int, b: int, reported: bool) -> tuple[int | None, int | None]:
        return (a, b) if reported else (None, None)

    answer: list[Reply] = [("Paris.", *tokens(200, 30, researcher_usage))]
    researcher = LlmAgent(
        name="researcher",
        description="Researches a question.",
        model=_model("gemini-2.5-flash", answer, truth),
    )
    script: list[Reply] = [
        ([("researcher", {"request": "capital of France?"})], *tokens(300, 20, planner_usage)),
        ("It is Paris.", *tokens(400, 15, planner_usage)),
    ]
    truth.agents, truth.root_agent = ["planner", "researcher"], "planner"
    truth.edge("planner", "researcher")
    planner = _model("gemini-2.5-pro", script, truth)
    return LlmAgent(name="planner", model=planner, tools=[AgentTool(researcher)])


def _failed_agent_tool(truth: Truth) -> Any:
    """The planner's researcher (through `AgentTool`) fails: its model raises."""
    from google.adk.agents import LlmAgent
    from google.adk.tools.agent_tool import AgentTool

    failing: list[Reply | Exception] = [RuntimeError("model overloaded")]
    researcher = LlmAgent(
        name="researcher",
        description="Researches a question.",
        model=_model("gemini-2.5-flash", failing, truth),
    )
    script: list[Reply] = [([("researcher", {"request": "capital of France?"})], 300, 20)]
    truth.agents, truth.root_agent = ["planner", "researcher"], "planner"
    truth.edge("planner", "researcher", status="failed")
    return LlmAgent(
        name="planner", model=_model("gemini-2.5-pro", script, truth), tools=[AgentTool(researcher)]
    )


def inner(out: Path) -> None:
    """Run every scenario (inside the virtualenv) and write the fixture."""
    from opentelemetry import trace

    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=22_03, service="adk-app")
    trace.set_tracer_provider(tracer_provider)
    writer = Writer(NAME)
    scenarios = (
        ("transfer", _transfer),
        ("agent_tool", _agent_tool),
        ("no_usage", lambda truth: _agent_tool(truth, planner_usage=False, researcher_usage=False)),
        ("partial_usage", lambda truth: _agent_tool(truth, researcher_usage=False)),
        ("failed_agent_tool", _failed_agent_tool),
    )
    for name, build in scenarios:
        truth = Truth(scenario=name, library=LIBRARY)
        try:
            asyncio.run(_run(build(truth)))
        except Exception:
            truth.raised = True
        writer.take(exporter, truth)
    writer.write(out)


if __name__ == "__main__":
    venvs.main("adk", "tests.support.foreign.generate_adk", REQUIREMENTS, inner)
