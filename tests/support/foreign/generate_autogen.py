"""Generate the AutoGen AgentChat fixture: real AgentChat agents with AutoGen's own GenAI spans.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_autogen [OUT_DIR]`; the library
runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. Every agent's model is the
library's own `ReplayChatCompletionClient` answering from a script; the truth below is written
from what each scenario does. AutoGen traces agents and tools, not model calls: the scripted
usage never reaches the trace, so the truth counts no inference call.

Scenarios: a swarm whose triage agent hands off to billing (`transfer_to_billing`), and a
planner using a researcher through `AgentTool` (a delegation).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "autogen_agentchat"
LIBRARY = "autogen-agentchat 0.7.5 (autogen-core's own GenAI spans)"
REQUIREMENTS = (
    "autogen-agentchat==0.7.5",
    "autogen-core==0.7.5",
    "autogen-ext==0.7.5",
    "opentelemetry-sdk==1.45.2",
)
"""The pinned versions the fixture was generated with."""


def _call(name: str, arguments: str, prompt: int, completion: int) -> Any:
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, RequestUsage

    usage = RequestUsage(prompt_tokens=prompt, completion_tokens=completion)
    call = FunctionCall(id=f"call_{name}", name=name, arguments=arguments)
    return CreateResult(finish_reason="function_calls", content=[call], usage=usage, cached=False)


def _text(text: str, prompt: int, completion: int) -> Any:
    from autogen_core.models import CreateResult, RequestUsage

    usage = RequestUsage(prompt_tokens=prompt, completion_tokens=completion)
    return CreateResult(finish_reason="stop", content=text, usage=usage, cached=False)


def _model(script: list[Any]) -> Any:
    from autogen_core.models import ModelFamily, ModelInfo
    from autogen_ext.models.replay import ReplayChatCompletionClient

    info = ModelInfo(
        vision=False,
        function_calling=True,
        json_output=False,
        family=ModelFamily.UNKNOWN,
        structured_output=False,
    )
    return ReplayChatCompletionClient(script, model_info=info)


async def _swarm(truth: Truth) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import TextMentionTermination
    from autogen_agentchat.teams import Swarm

    triage = AssistantAgent(
        "triage", model_client=_model([_call("transfer_to_billing", "{}", 120, 10)]), handoffs=["billing"]
    )
    billing = AssistantAgent(
        "billing", model_client=_model([_text("Your invoice is paid. TERMINATE", 150, 12)])
    )
    truth.agents, truth.root_agent = ["triage", "billing"], "triage"
    truth.edge("triage", "billing", kind="transfer")
    team = Swarm([triage, billing], termination_condition=TextMentionTermination("TERMINATE"))
    await team.run(task="Where is my invoice?")


async def _agent_tool(truth: Truth) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.tools import AgentTool

    researcher = AssistantAgent(
        "researcher", description="Researches a question.", model_client=_model([_text("Paris.", 200, 30)])
    )
    script = [_call("researcher", '{"task": "capital of France?"}', 300, 20), _text("It is Paris.", 400, 15)]
    planner = AssistantAgent(
        "planner", model_client=_model(script), tools=[AgentTool(researcher)], reflect_on_tool_use=True
    )
    truth.agents, truth.root_agent = ["planner", "researcher"], "planner"
    truth.edge("planner", "researcher")
    await planner.run(task="What is the capital of France?")


def inner(out: Path) -> None:
    """Run every scenario (inside the virtualenv) and write the fixture."""
    from opentelemetry import trace

    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=22_05, service="autogen-app")
    trace.set_tracer_provider(tracer_provider)
    writer = Writer(NAME)
    for name, run in (("swarm", _swarm), ("agent_tool", _agent_tool)):
        truth = Truth(scenario=name, library=LIBRARY)
        tracer = trace.get_tracer("janux.fixture")
        with tracer.start_as_current_span(f"fixture {name}"):  # one trace per scenario
            try:
                asyncio.run(run(truth))
            except Exception:
                truth.raised = True
        writer.take(exporter, truth)
    writer.write(out)


if __name__ == "__main__":
    venvs.main("autogen", "tests.support.foreign.generate_autogen", REQUIREMENTS, inner)
