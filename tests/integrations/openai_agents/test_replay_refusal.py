"""`janux replay` on the OpenAI Agents integration's traces without `--agents`: one clear reason.

The integration records the SDK's rounds (with capture on, in the SDK's own item form) but not Janux
agent definitions, so a replay without the user's SDK agents says to pass them (`--agents
MODULE:ENTRY_AGENT`, see test_replay_on_the_sdk.py); without capture it says to record with content
capture on.
"""

from __future__ import annotations

import pytest
from agents import Agent, set_trace_processors

from janux.integrations.openai_agents import JanuxProcessor
from janux.replay.runner import replay_trace
from janux.tracing.analysis.replay_plan import NEEDS_SDK_AGENTS, NO_CONTENT, ReplayUnavailable
from tests.integrations.openai_agents.scripts import COSTS, calls, model, reply, run
from tests.support.contract_checker import Traced


def _delegating() -> Agent[None]:
    researcher = Agent(
        name="researcher", instructions="Research.", model=model("responses", reply("30 days.", 300, 8))
    )
    return Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            "responses",
            calls(("researcher", {"input": "refund rules"}), input_tokens=400, output_tokens=30),
            reply("Yes.", 600, 12),
        ),
        tools=[researcher.as_tool(tool_name="researcher", tool_description="Research.")],
    )


@pytest.mark.parametrize(
    ("capture", "message"),
    [(False, NO_CONTENT), (True, NEEDS_SDK_AGENTS)],
)
async def test_an_integration_trace_is_refused_with_its_reason(capture: bool, message: str) -> None:
    traced = Traced()
    set_trace_processors([JanuxProcessor(costs=COSTS, tracer_provider=traced.provider, capture=capture)])
    await run(_delegating(), "My refund question")
    with pytest.raises(ReplayUnavailable) as refused:
        replay_trace(traced.records())
    assert str(refused.value).startswith(message)
