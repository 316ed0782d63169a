"""Generate the LangGraph fixture: real LangGraph ReAct graphs traced by OpenInference.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_langgraph [OUT_DIR]`; the
library runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. Every model is a
LangChain chat model that answers from a script (tool calls or text, with usage metadata); the
truth below is written from what each scenario does: which graph calls which, and the usage
the scripts return.

Scenarios: a supervisor graph whose tool runs a researcher graph (two ReAct steps of the
researcher), two parallel calls of that tool, a researcher whose model fails, and a
langgraph-swarm handoff (triage -> billing, `Command(goto=...)` from its handoff tool).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "langgraph_openinference"
LIBRARY = "langgraph 1.2.22 (openinference-instrumentation-langchain 0.1.80)"
REQUIREMENTS = (
    "langgraph==1.2.22",
    "langgraph-prebuilt==1.1.3",
    "langchain-core==1.8.1",
    "langgraph-swarm==0.1.0",
    "langgraph-supervisor==0.0.31",
    "openinference-instrumentation-langchain==0.1.80",
    "opentelemetry-sdk==1.45.2",
)
"""The pinned versions the fixture was generated with."""

Reply = tuple[list[tuple[str, dict[str, Any]]] | str, int, int]
"""A scripted answer: tool calls [(tool, args)] or a text, input tokens, output tokens."""


def _model(script: list[Reply | Exception], truth: Truth) -> Any:
    """A chat model answering `script` in order (an exception entry is raised as a model failure)."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    queue = list(script)

    class Scripted(BaseChatModel):
        model_name: str = "scripted-gpt"

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            step = queue.pop(0)
            if isinstance(step, Exception):
                raise step
            content, tokens_in, tokens_out = step
            truth.usage(tokens_in, tokens_out)
            usage = {
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
            }
            if isinstance(content, str):
                message = AIMessage(content=content, usage_metadata=usage)  # type: ignore[arg-type]
            else:
                calls = [
                    {"name": tool, "args": args, "id": f"call_{tool}_{len(queue)}_{i}"}
                    for i, (tool, args) in enumerate(content)
                ]
                message = AIMessage(content="", tool_calls=calls, usage_metadata=usage)  # type: ignore[arg-type]
            return ChatResult(
                generations=[ChatGeneration(message=message)], llm_output={"model_name": self.model_name}
            )

    return Scripted()


def _researcher(script: list[Reply | Exception], truth: Truth) -> Any:
    """A researcher graph: a ReAct agent with a search tool."""
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    @tool
    def search(query: str) -> str:
        """Search the web."""
        return f"results for {query}"

    return create_react_agent(_model(script, truth), [search], name="researcher")


def _supervisor(
    script: list[Reply | Exception], researchers: dict[str, list[Reply | Exception]], truth: Truth
) -> Any:
    """The supervisor graph; each call of its tool runs a fresh researcher graph on the script
    kept for that question (parallel calls then cannot take each other's answers)."""
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    @tool
    def ask_researcher(question: str) -> str:
        """Ask the researcher."""
        researcher = _researcher(researchers[question], truth)
        result = researcher.invoke({"messages": [("user", question)]})
        return str(result["messages"][-1].content)

    return create_react_agent(_model(script, truth), [ask_researcher], name="supervisor")


Scripts = tuple[list[Reply | Exception], dict[str, list[Reply | Exception]]]
"""The supervisor's script, and the researcher's per question."""


def _delegation(truth: Truth, parallel: int = 1) -> Scripts:
    """Scripts of a supervisor asking the researcher `parallel` times at once; each researcher run
    takes two ReAct steps (a search, then the answer)."""
    ask = [("ask_researcher", {"question": f"question {n}"}) for n in range(parallel)]
    supervisor: list[Reply | Exception] = [(ask, 120, 20), ("done", 200, 15)]
    researchers: dict[str, list[Reply | Exception]] = {
        f"question {n}": [([("search", {"query": f"q{n}"})], 60, 10), (f"answer {n}", 90, 12)]
        for n in range(parallel)
    }
    truth.agents = ["supervisor"] + ["researcher"] * parallel
    truth.root_agent = "supervisor"
    for _ in range(parallel):
        truth.edge("supervisor", "researcher")
    return supervisor, researchers


def _run(truth: Truth, scripts: Scripts) -> None:
    supervisor = _supervisor(scripts[0], scripts[1], truth)
    try:
        supervisor.invoke({"messages": [("user", "help me")]})
    except Exception:
        truth.raised = True


def _swarm(truth: Truth) -> None:
    """langgraph-swarm: triage hands the conversation to billing with its handoff tool."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent
    from langgraph_swarm import create_handoff_tool, create_swarm

    handoff = create_handoff_tool(agent_name="billing")
    triage_script: list[Reply | Exception] = [([("transfer_to_billing", {})], 110, 9)]
    triage = create_react_agent(_model(triage_script, truth), [handoff], name="triage")
    billing = create_react_agent(_model([("Your invoice is paid.", 150, 11)], truth), [], name="billing")
    truth.agents, truth.root_agent = ["triage", "billing"], "triage"
    truth.edge("triage", "billing", kind="transfer")
    app = create_swarm([triage, billing], default_active_agent="triage").compile(checkpointer=InMemorySaver())
    app.invoke({"messages": [("user", "Where is my invoice?")]}, config={"configurable": {"thread_id": "t1"}})


def _langgraph_supervisor(truth: Truth) -> None:
    """langgraph-supervisor: the supervisor hands the task to the researcher with its handoff tool
    (`transfer_to_researcher`); the researcher takes two ReAct steps (a search, then the answer),
    control comes back to the supervisor by the graph's edge, and the supervisor answers."""
    from langgraph_supervisor import create_supervisor

    researcher = _researcher([([("search", {"query": "q"})], 60, 10), ("Paris.", 90, 12)], truth)
    script: list[Reply | Exception] = [([("transfer_to_researcher", {})], 130, 14), ("It is Paris.", 220, 9)]
    app = create_supervisor([researcher], model=_model(script, truth)).compile()
    truth.agents, truth.root_agent = ["supervisor", "researcher"], "supervisor"
    truth.edge("supervisor", "researcher")
    app.invoke({"messages": [("user", "What is the capital of France?")]})


def inner(out: Path) -> None:
    """Run every scenario (inside the virtualenv) and write the fixture."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=22_01, service="langgraph-app")
    LangChainInstrumentor().instrument(tracer_provider=tracer_provider)
    writer = Writer(NAME)

    for scenario, parallel in (("delegation", 1), ("parallel", 2)):
        truth = Truth(scenario=scenario, library=LIBRARY)
        _run(truth, _delegation(truth, parallel))
        writer.add(list(exporter.get_finished_spans()), truth)
        exporter.clear()

    # The researcher's model fails: the researcher graph raises through the supervisor's tool,
    # and the supervisor's run raises to the caller.
    truth = Truth(scenario="failed", library=LIBRARY)
    truth.agents, truth.root_agent = ["supervisor", "researcher"], "supervisor"
    truth.edge("supervisor", "researcher", status="failed")
    ask: list[Reply | Exception] = [([("ask_researcher", {"question": "q"})], 120, 20)]
    _run(truth, (ask, {"q": [RuntimeError("model overloaded")]}))
    spans = list(exporter.get_finished_spans())
    truth.errors = sum(1 for s in spans if not s.status.is_ok)
    writer.add(spans, truth)
    exporter.clear()

    truth = Truth(scenario="swarm", library=LIBRARY)
    _swarm(truth)
    writer.add(list(exporter.get_finished_spans()), truth)
    exporter.clear()

    truth = Truth(scenario="supervisor", library=LIBRARY)
    _langgraph_supervisor(truth)
    writer.take(exporter, truth)
    writer.write(out)


if __name__ == "__main__":
    venvs.main("langgraph", "tests.support.foreign.generate_langgraph", REQUIREMENTS, inner)
