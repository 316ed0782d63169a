"""Generate the LangGraph + OpenLLMetry fixture: the LangGraph scenarios of `generate_langgraph`
traced by OpenLLMetry's LangChain instrumentation instead of OpenInference.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_langgraph_openllmetry [OUT_DIR]`;
the library runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. The models and the
truth are those of `generate_langgraph` (scripted, usage in the answers).

Building a graph (`create_react_agent`) is traced too: a `create_agent` span, which starts a
trace of its own when the graph is built outside any span (as an application builds its graphs
at start-up). So each scenario here is two traces: the graph's construction (one span, no agent
run; its truth says so) and the run.

Scenarios: a supervisor whose tool runs a researcher graph (`delegation`), and the same with a
researcher whose model fails (`failed`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "langgraph_openllmetry"
LIBRARY = "langgraph 1.2.22 (opentelemetry-instrumentation-langchain 0.62.4)"
REQUIREMENTS = (
    "langgraph==1.2.22",
    "langgraph-prebuilt==1.1.3",
    "langchain-core==1.8.1",
    "opentelemetry-instrumentation-langchain==0.62.4",
    "opentelemetry-sdk==1.45.2",
)
"""The pinned versions the fixture was generated with."""


def _failed(truth: Truth) -> Any:
    """Scripts of a supervisor whose researcher's model fails (the run raises to the caller)."""
    truth.agents, truth.root_agent = ["supervisor", "researcher"], "supervisor"
    truth.edge("supervisor", "researcher", status="failed")
    return [([("ask_researcher", {"question": "q"})], 120, 20)], {"q": [RuntimeError("model overloaded")]}


def _write_scenario(writer: Any, spans: list[Any], truth: Truth) -> None:
    """The run's trace (the one with model calls) gets the scenario's truth; every other trace is
    a graph's construction: one `create_agent` span, no agent run, no model call."""
    by_trace: dict[int, list[Any]] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    for trace_spans in by_trace.values():
        runs = any(span.attributes.get("gen_ai.operation.name") == "chat" for span in trace_spans)
        if runs:
            truth.errors = sum(1 for span in trace_spans if not span.status.is_ok)
            writer.add(trace_spans, truth)
            continue
        if {span.name.split(" ")[0] for span in trace_spans} != {"create_agent"}:
            raise ValueError(f"scenario {truth.scenario}: a trace without model calls that builds no graph")
        built = Truth(scenario=f"{truth.scenario}_build", library=LIBRARY, edges=[])
        writer.add(trace_spans, built)


def inner(out: Path) -> None:
    """Run every scenario (inside the virtualenv) and write the fixture."""
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    from tests.support.foreign.generate_langgraph import _delegation, _run
    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=22_08, service="langgraph-openllmetry-app")
    LangchainInstrumentor().instrument(tracer_provider=tracer_provider)
    writer = Writer(NAME)
    for scenario in ("delegation", "failed"):
        truth = Truth(scenario=scenario, library=LIBRARY)
        _run(truth, _delegation(truth) if scenario == "delegation" else _failed(truth))
        _write_scenario(writer, list(exporter.get_finished_spans()), truth)
        exporter.clear()
    writer.write(out)


if __name__ == "__main__":
    venvs.main(
        "langgraph_openllmetry", "tests.support.foreign.generate_langgraph_openllmetry", REQUIREMENTS, inner
    )
