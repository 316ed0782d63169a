"""Generate the Microsoft Agent Framework fixture: a handoff workflow (`HandoffBuilder`) traced by the
framework's own OpenTelemetry spans.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_agent_framework [OUT_DIR]`; the
library runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. Every agent's chat client is
a `BaseChatClient` answering from a script, with the framework's function-invocation and telemetry
layers, reporting usage as its own clients do; the truth is written from what the scenario does.

Scenario `handoff`: triage calls its `handoff_to_billing` tool and billing answers. The framework
short-circuits the handoff tool call (no tool span): the transfer is recorded only by the workflow's
spans (`edge_group.process` with `message.source_id` / `message.target_id`, `message.send` with
`message.destination_executor_id`) and span links.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "agent_framework"
LIBRARY = "agent-framework-core 1.23.0 (agent-framework-orchestrations 1.4.0, its own spans)"
REQUIREMENTS = (
    "agent-framework-core==1.23.0",
    "agent-framework-orchestrations==1.4.0",
    "opentelemetry-sdk==1.45.2",
)
"""The pinned versions the fixture was generated with."""

Reply = tuple[str | tuple[str, dict[str, Any]], int, int]
"""A scripted answer: a text or one function call (name, arguments), input and output tokens."""


def _client(script: list[Reply], truth: Truth) -> Any:
    """A chat client answering `script` in order, with the framework's layers around it."""
    from agent_framework import (
        BaseChatClient,
        ChatMiddlewareLayer,
        ChatResponse,
        Content,
        FunctionInvocationLayer,
        Message,
    )
    from agent_framework.observability import ChatTelemetryLayer

    queue = list(script)

    layers = (FunctionInvocationLayer, ChatMiddlewareLayer, ChatTelemetryLayer, BaseChatClient)

    class Scripted(*layers):  # type: ignore[misc]
        OTEL_PROVIDER_NAME = "scripted"

        async def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kw: Any) -> Any:
            said, tokens_in, tokens_out = queue.pop(0)
            truth.usage(tokens_in, tokens_out)
            if isinstance(said, str):
                content = Content.from_text(said)
            else:
                name, arguments = said
                call_id = f"call_{len(queue)}"
                content = Content.from_function_call(call_id=call_id, name=name, arguments=arguments)
            usage = {"input_token_count": tokens_in, "output_token_count": tokens_out,
                     "total_token_count": tokens_in + tokens_out}  # fmt: skip
            return ChatResponse(messages=[Message(role="assistant", contents=[content])], usage_details=usage,
                                model="gpt-4o-mini", response_id=f"resp_{len(queue)}")  # fmt: skip

    return Scripted()


async def _handoff(truth: Truth) -> None:
    from agent_framework import Agent
    from agent_framework.orchestrations import HandoffBuilder

    kept = {"require_per_service_call_history_persistence": True}  # required by HandoffBuilder
    triage = Agent(name="triage", instructions="Route.", client=_client(
        [(("handoff_to_billing", {}), 300, 12)], truth), **kept)  # fmt: skip
    billing = Agent(name="billing", instructions="Billing.", client=_client(
        [("Your invoice is paid.", 420, 11)], truth), **kept)  # fmt: skip
    workflow = (
        HandoffBuilder(participants=[triage, billing])
        .with_start_agent(triage)
        .with_termination_condition(lambda said: any(m.author_name == "billing" for m in said))
        .build()
    )
    truth.agents, truth.root_agent = ["triage", "billing"], "triage"
    truth.edge("triage", "billing", kind="transfer")
    await workflow.run("Is my invoice paid?")


def inner(out: Path) -> None:
    """Run the scenario (inside the virtualenv) and write the fixture."""
    from agent_framework.observability import enable_instrumentation
    from opentelemetry import trace

    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=22_11, service="agent-framework-app")
    trace.set_tracer_provider(tracer_provider)
    enable_instrumentation(enable_sensitive_data=False)
    writer = Writer(NAME)
    truth = Truth(scenario="handoff", library=LIBRARY)
    with trace.get_tracer("janux.fixture").start_as_current_span("fixture handoff"):
        try:
            asyncio.run(_handoff(truth))
        except Exception:
            truth.raised = True
            raise
    writer.take(exporter, truth)
    writer.write(out)


if __name__ == "__main__":
    venvs.main(NAME, "tests.support.foreign.generate_agent_framework", REQUIREMENTS, inner)
