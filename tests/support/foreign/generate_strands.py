"""Generate the Strands Agents fixture: real Strands agents with Strands' own OpenTelemetry spans.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_strands [OUT_DIR]`; the library
runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. Every agent's model is a Strands
`Model` that streams scripted answers (tool uses or text, with usage metadata); the truth below
is written from what each scenario does.

Scenarios: a swarm whose triage agent hands off to billing (`handoff_to_agent`), the same with
a billing agent whose model fails, an orchestrator that runs a researcher agent inside one of its
tools (agents as tools), and a graph researcher -> writer (`graph`). A graph's edges are in no span
attribute: the writer's recorded input names the node feeding it.

A second fixture, `strands_graph_fanin`, holds graphs whose planner node is fed by two nodes
(flights -> planner, hotels -> planner): both entry nodes run in one batch, then the planner runs
once with both results in its input; once answering, once with its model failing. Its scenarios
run after the first fixture's, so the first fixture's ids do not change.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "strands_agents"
FAN_IN_NAME = "strands_graph_fanin"
LIBRARY = "strands-agents 1.62.0 (its own OpenTelemetry spans)"
REQUIREMENTS = ("strands-agents==1.62.0", "opentelemetry-sdk==1.45.1")
"""The pinned versions the fixture was generated with."""

Reply = tuple[list[tuple[str, dict[str, Any]]] | str, int, int]
"""A scripted answer: tool uses [(tool, input)] or a text, input tokens, output tokens."""


def _events(reply: Reply, number: int) -> list[dict[str, Any]]:
    """The stream events (Bedrock Converse shape) of one scripted answer."""
    content, tokens_in, tokens_out = reply
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    if isinstance(content, str):
        events += [{"contentBlockDelta": {"delta": {"text": content}}}, {"contentBlockStop": {}}]
        stop = "end_turn"
    else:
        for i, (tool, args) in enumerate(content):
            start = {"toolUse": {"name": tool, "toolUseId": f"tooluse_{number}_{i}"}}
            events += [
                {"contentBlockStart": {"start": start}},
                {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}},
                {"contentBlockStop": {}},
            ]
        stop = "tool_use"
    usage = {"inputTokens": tokens_in, "outputTokens": tokens_out, "totalTokens": tokens_in + tokens_out}
    return [
        *events,
        {"messageStop": {"stopReason": stop}},
        {"metadata": {"usage": usage, "metrics": {"latencyMs": 5}}},
    ]


def _model(model_id: str, script: list[Reply | Exception], truth: Truth) -> Any:
    """A Strands model streaming `script` in order."""
    from strands.models import Model

    queue = list(script)

    class Scripted(Model):
        def update_config(self, **model_config: Any) -> None:
            pass

        def get_config(self) -> Any:
            return {"model_id": model_id}

        def structured_output(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            reply = queue.pop(0)
            if isinstance(reply, Exception):
                raise reply
            truth.usage(reply[1], reply[2])
            for event in _events(reply, len(queue)):  # type: ignore[arg-type]
                yield event

    return Scripted()


def _swarm(truth: Truth, billing_fails: bool = False) -> None:
    """Triage hands off to billing, then ends its own turn; billing answers (or its model fails)."""
    from strands import Agent
    from strands.multiagent import Swarm

    handoff = ([("handoff_to_agent", {"agent_name": "billing", "message": "invoice question"})], 110, 14)
    triage_script: list[Reply | Exception] = [handoff, ("Handing over to billing.", 150, 6)]
    billing_script: list[Reply | Exception] = (
        [RuntimeError("model overloaded")] if billing_fails else [("Your invoice is paid.", 160, 12)]
    )
    triage = Agent(name="triage", model=_model("claude-haiku", triage_script, truth), callback_handler=None)
    billing = Agent(
        name="billing", model=_model("claude-sonnet", billing_script, truth), callback_handler=None
    )
    truth.agents, truth.root_agent = ["triage", "billing"], "triage"
    truth.edge("triage", "billing", kind="transfer", status="failed" if billing_fails else "completed")
    Swarm([triage, billing], entry_point=triage)("Where is my invoice?")


def _agents_as_tools(truth: Truth) -> None:
    from strands import Agent, tool

    researcher = Agent(
        name="researcher", model=_model("claude-haiku", [("Paris.", 180, 9)], truth), callback_handler=None
    )

    @tool
    def ask_researcher(question: str) -> str:
        """Ask the researcher a question.

        Args:
            question: the question.
        """
        return str(researcher(question))

    script: list[Reply | Exception] = [
        ([("ask_researcher", {"question": "capital of France?"})], 250, 20),
        ("It is Paris.", 330, 10),
    ]
    orchestrator = Agent(
        name="orchestrator",
        model=_model("claude-sonnet", script, truth),
        tools=[ask_researcher],
        callback_handler=None,
    )
    truth.agents, truth.root_agent = ["orchestrator", "researcher"], "orchestrator"
    truth.edge("orchestrator", "researcher")
    orchestrator("What is the capital of France?")


def _graph(truth: Truth) -> None:
    """A graph whose researcher's result flows along its edge to the writer."""
    from strands import Agent
    from strands.multiagent import GraphBuilder

    def agent(name: str, reply: Reply) -> Any:
        return Agent(name=name, model=_model(f"{name}-model", [reply], truth), callback_handler=None)

    builder = GraphBuilder()
    builder.add_node(agent("researcher", ("Paris is the capital.", 140, 8)), "researcher")
    builder.add_node(agent("writer", ("The capital of France is Paris.", 210, 11)), "writer")
    builder.add_edge("researcher", "writer")
    builder.set_entry_point("researcher")
    truth.agents, truth.root_agent = ["researcher", "writer"], "researcher"
    truth.edge("researcher", "writer", kind="transfer")
    builder.set_max_node_executions(5)
    builder.build()("What is the capital of France?")


def _graph_fan_in(truth: Truth, planner_fails: bool = False) -> None:
    """Two entry nodes (flights, hotels) both feed the planner, which runs once after both (Strands
    starts every entry node in the first batch; the planner is ready when that batch completes, and
    its input lists both results)."""
    from strands import Agent
    from strands.multiagent import GraphBuilder

    def agent(name: str, script: list[Reply | Exception]) -> Any:
        return Agent(name=name, model=_model(f"{name}-model", script, truth), callback_handler=None)

    planner_script: list[Reply | Exception] = (
        [RuntimeError("model overloaded")] if planner_fails else [("Fly Tuesday, stay at the Ritz.", 260, 13)]
    )
    builder = GraphBuilder()
    builder.add_node(agent("flights", [("Tuesday flight is cheapest.", 120, 7)]), "flights")
    builder.add_node(agent("hotels", [("The Ritz has rooms.", 130, 6)]), "hotels")
    builder.add_node(agent("planner", planner_script), "planner")
    builder.add_edge("flights", "planner")
    builder.add_edge("hotels", "planner")
    # Both entry nodes start at once; in the recorded run `hotels` started first, so it is the run's
    # first agent (a rerun that starts `flights` first must say so here).
    truth.agents, truth.root_agent = ["flights", "hotels", "planner"], "hotels"
    status = "failed" if planner_fails else "completed"
    truth.edge("flights", "planner", kind="transfer", status=status)
    truth.edge("hotels", "planner", kind="transfer", status=status)
    builder.set_max_node_executions(5)
    builder.build()("Plan a trip to Paris.")


def _run(writer: Any, exporter: Any, scenarios: Any) -> None:
    """Run each (name, scenario) and add its trace and truth to `writer`."""
    for name, run in scenarios:
        truth = Truth(scenario=name, library=LIBRARY)
        try:
            run(truth)
        except Exception:
            truth.raised = True
        writer.take(exporter, truth)


def inner(out: Path) -> None:
    """Run every scenario (inside the virtualenv) and write the fixture."""
    from opentelemetry import trace

    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=22_04, service="strands-app")
    trace.set_tracer_provider(tracer_provider)
    writer = Writer(NAME)
    scenarios = (
        ("swarm", _swarm),
        ("swarm_failed", lambda truth: _swarm(truth, billing_fails=True)),
        ("agents_as_tools", _agents_as_tools),
        ("graph", _graph),
    )
    _run(writer, exporter, scenarios)
    writer.write(out)
    fan_in = Writer(FAN_IN_NAME)
    _run(fan_in, exporter, (
        ("graph_fan_in", _graph_fan_in),
        ("graph_fan_in_failed", lambda truth: _graph_fan_in(truth, planner_fails=True)),
    ))  # fmt: skip
    fan_in.write(out)


if __name__ == "__main__":
    venvs.main("strands", "tests.support.foreign.generate_strands", REQUIREMENTS, inner)
