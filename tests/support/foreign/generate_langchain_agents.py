"""Generate the LangChain agents fixture: LangChain 1.x `create_agent` graphs traced by OpenInference.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_langchain_agents [OUT_DIR]`; the
library runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. The models are the scripted
LangChain chat models of `generate_langgraph` (tool calls or text, with usage metadata); the truth
is written from what each scenario does.

Why this library: its agents are graphs whose nodes are named `model` and `tools`, so the
instrumentation writes no AGENT span at all. Each agent is a CHAIN span named after the agent
(`create_agent(name=...)`) that holds its model calls and tool calls, and a sub-agent run by a tool
is such a CHAIN span below that tool's span: the trace names its agents only that way.

Scenarios: a supervisor whose tool runs a researcher agent (two model rounds of the researcher), two
parallel calls of that tool, and a researcher whose model fails (the run raises to the caller).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "langchain_openinference"
LIBRARY = "langchain 1.5.2 create_agent (openinference-instrumentation-langchain 0.1.80)"
REQUIREMENTS = (
    "langchain==1.5.2",
    "langchain-core==1.8.3",
    "langgraph==1.2.24",
    "openinference-instrumentation-langchain==0.1.80",
    "opentelemetry-sdk==1.45.2",
)
"""The pinned versions the fixture was generated with."""

Reply = tuple[list[tuple[str, dict[str, Any]]] | str, int, int]
"""A scripted answer: tool calls [(tool, args)] or a text, input tokens, output tokens."""
Scripts = tuple[list[Reply | Exception], dict[str, list[Reply | Exception]]]
"""The supervisor's script, and the researcher's per question."""


def _agent(name: str, script: list[Reply | Exception], tools: list[Any], truth: Truth) -> Any:
    """A LangChain agent named `name` whose model answers `script`."""
    from langchain.agents import create_agent

    from tests.support.foreign.generate_langgraph import _model

    return create_agent(_model(script, truth), tools, name=name)


def _supervisor(scripts: Scripts, truth: Truth) -> Any:
    """The supervisor; each call of its tool runs a fresh researcher on the script kept for that
    question (parallel calls then cannot take each other's answers)."""
    from langchain_core.tools import tool

    @tool
    def search(query: str) -> str:
        """Search the web."""
        return f"results for {query}"

    @tool
    def ask_researcher(question: str) -> str:
        """Ask the researcher."""
        researcher = _agent("researcher", scripts[1][question], [search], truth)
        result = researcher.invoke({"messages": [("user", question)]})
        return str(result["messages"][-1].content)

    return _agent("supervisor", scripts[0], [ask_researcher], truth)


def _delegation(truth: Truth, parallel: int) -> Scripts:
    """Scripts of a supervisor asking the researcher `parallel` times at once; each researcher run
    takes two model rounds (a search, then the answer)."""
    ask = [("ask_researcher", {"question": f"question {n}"}) for n in range(parallel)]
    supervisor: list[Reply | Exception] = [(ask, 120, 20), ("done", 200, 15)]
    researchers: dict[str, list[Reply | Exception]] = {
        f"question {n}": [([("search", {"query": f"q{n}"})], 60, 10), (f"answer {n}", 90, 12)]
        for n in range(parallel)
    }
    truth.agents, truth.root_agent = ["supervisor"] + ["researcher"] * parallel, "supervisor"
    for _ in range(parallel):
        truth.edge("supervisor", "researcher")
    return supervisor, researchers


def _failed(truth: Truth) -> Scripts:
    """Scripts of a supervisor whose researcher's model fails: the researcher raises through the
    supervisor's tool, and the supervisor's run raises to the caller."""
    truth.agents, truth.root_agent = ["supervisor", "researcher"], "supervisor"
    truth.edge("supervisor", "researcher", status="failed")
    return [([("ask_researcher", {"question": "q"})], 120, 20)], {"q": [RuntimeError("model overloaded")]}


def inner(out: Path) -> None:
    """Run every scenario (inside the virtualenv) and write the fixture."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=29_05, service="langchain-agents-app")
    LangChainInstrumentor().instrument(tracer_provider=tracer_provider)
    writer = Writer(NAME)
    for scenario in ("delegation", "parallel", "failed"):
        truth = Truth(scenario=scenario, library=LIBRARY)
        parallel = 2 if scenario == "parallel" else 1
        scripts = _failed(truth) if scenario == "failed" else _delegation(truth, parallel)
        try:
            _supervisor(scripts, truth).invoke({"messages": [("user", "help me")]})
        except Exception:
            truth.raised = True
        spans = list(exporter.get_finished_spans())
        truth.errors = sum(1 for span in spans if not span.status.is_ok)
        writer.add(spans, truth)
        exporter.clear()
    writer.write(out)


if __name__ == "__main__":
    venvs.main(NAME, "tests.support.foreign.generate_langchain_agents", REQUIREMENTS, inner)
