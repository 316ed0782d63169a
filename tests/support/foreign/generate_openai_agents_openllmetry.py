"""Generate the OpenAI Agents SDK fixture traced by OpenLLMetry's instrumentation.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_openai_agents_openllmetry [OUT_DIR]`;
the instrumentation runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. The agents, the
scripted HTTP transport and the scenarios are those of `generate_openai_agents`; the truth is read
off the SDK's own tracing spans there too, never off the instrumentation's.

This instrumentation hangs every agent span, those run by an agent's tool included, directly under
the run's `Agent Workflow` span, the tool span and the agent run it caused side by side; and names a
handoff span `A → unknown.handoff` without its target. The edges are found by time containment and
order (see docs/trace-contract.md).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "openai_agents_openllmetry"
LIBRARY = "openai-agents 0.24.0 (opentelemetry-instrumentation-openai-agents 0.62.4)"
REQUIREMENTS = (
    "openai-agents==0.24.0",
    "opentelemetry-instrumentation-openai-agents==0.62.4",
    "opentelemetry-exporter-otlp-json-common==0.66b1",
    "httpx==0.29.0",
    "opentelemetry-sdk==1.45.2",
)
"""The pinned versions the fixture was generated with."""


def stated_edges(raw: Any, truth: Truth) -> None:
    """Each delegation and transfer of the SDK's own spans with its outcome, and the root agent: the
    first top-level agent, or after a transfer its target."""
    from agents.tracing.span_data import AgentSpanData, HandoffSpanData

    from tests.support.foreign.generate_openai_agents import _caller

    by_id = {s.span_id: s for s in raw.spans}
    delegations, transfers = truth.delegations, truth.transfers
    truth.delegations, truth.transfers, truth.edges = [], [], []
    for span in raw.spans:
        data = span.span_data
        if isinstance(data, AgentSpanData):
            caller = _caller(span, by_id)
            if caller is not None:
                truth.edge(caller, data.name, status="failed" if span.error else "completed")
            elif truth.root_agent is None:
                truth.root_agent = data.name
        elif isinstance(data, HandoffSpanData) and data.from_agent and data.to_agent:
            truth.edge(data.from_agent, data.to_agent, kind="transfer")
    assert (truth.delegations, truth.transfers) == (delegations, transfers)


def usage_not_recorded(spans: list[Any], truth: Truth) -> None:
    """The instrumentation writes no usage for the SDK's chat-completions generations (its model
    spans carry none): every answered call is then one whose usage is unknown, and no token is read.
    Checked on the exported spans, so a version that records usage makes the truth say so."""
    if any("token" in key for span in spans for key in (span.attributes or {})):
        return
    truth.unread_calls, truth.inference_calls = truth.inference_calls, 0
    truth.input_tokens = truth.output_tokens = 0


def inner(out: Path) -> None:
    """Run every scenario (inside the virtualenv) and write the fixture."""
    from agents import Runner, add_trace_processor, set_trace_processors, set_tracing_disabled
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    from tests.support.foreign.common import swallow
    from tests.support.foreign.generate_openai_agents import SCENARIOS, RawSpans, Script
    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=22_09, service="openai-agents-app")
    set_tracing_disabled(False)
    set_trace_processors([])  # no exporter to OpenAI's backend: offline
    OpenAIAgentsInstrumentor().instrument(tracer_provider=tracer_provider)
    raw = RawSpans()
    add_trace_processor(raw)
    writer = Writer(NAME)
    for scenario, (build, replies) in SCENARIOS.items():
        raw.spans = []
        truth = Truth(scenario=scenario, library=LIBRARY)
        with swallow(truth):
            asyncio.run(Runner.run(build(Script(replies)), "Can I get a refund on my annual plan?"))
        raw.truth(truth)
        stated_edges(raw, truth)
        usage_not_recorded(list(exporter.get_finished_spans()), truth)
        writer.take(exporter, truth)
    set_trace_processors([])
    writer.write(out)


if __name__ == "__main__":
    venvs.main(NAME, "tests.support.foreign.generate_openai_agents_openllmetry", REQUIREMENTS, inner)
