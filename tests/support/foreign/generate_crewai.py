"""Generate the CrewAI fixtures: a real CrewAI crew traced by OpenInference, then by OpenLLMetry.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_crewai [OUT_DIR]`; the library
runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. Every agent's model is a CrewAI
`BaseLLM` answering from a script in CrewAI's ReAct text format, reporting usage as CrewAI's own
clients do; the truth below is written from what the scenario does.

Scenarios: a manager agent delegates its task to a researcher coworker through CrewAI's
`Delegate work to coworker` tool (`allow_delegation=True`); and to a coworker whose model fails
twice, so that CrewAI re-runs its task itself (`retry`).

OpenInference (`crewai_openinference`) writes each re-run beside the failed one. OpenLLMetry's
CrewAI instrumentation (`crewai_openllmetry`) wraps the agent's `execute_task`, which CrewAI calls
again from inside the failed call: each re-run nests in the failed one. It writes no model span and
no usage, only agent spans naming their model: the usage is unknown (the truth: no call recorded;
the trace's coverage says "model calls not recorded").
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "crewai_openinference"
NAME_OPENLLMETRY = "crewai_openllmetry"
LIBRARY = "crewai 1.15.30 (openinference-instrumentation-crewai 1.1.21)"
LIBRARY_OPENLLMETRY = "crewai 1.15.30 (opentelemetry-instrumentation-crewai 0.62.4)"
REQUIREMENTS = (
    "crewai==1.15.30",
    "openinference-instrumentation-crewai==1.1.21",
    "opentelemetry-instrumentation-crewai==0.62.4",
    "opentelemetry-sdk==1.45.2",
)
"""The pinned versions the fixture was generated with."""

Reply = tuple[str, int, int] | Exception
"""A scripted answer: CrewAI ReAct text, prompt and completion tokens; or the error the call raises."""


def _model(name: str, script: list[Reply], truth: Truth) -> Any:
    """A CrewAI model answering `script` in order, with usage tracked and call events emitted."""
    from crewai.events.types.llm_events import LLMCallType
    from crewai.llms.base_llm import BaseLLM, llm_call_context

    queue = list(script)

    class Scripted(BaseLLM):
        def call(
            self,
            messages: Any,
            tools: Any = None,
            callbacks: Any = None,
            available_functions: Any = None,
            from_task: Any = None,
            from_agent: Any = None,
            response_model: Any = None,
        ) -> Any:
            with llm_call_context():  # as CrewAI's own clients: the call's events share one call id
                return self._answer(messages, tools, callbacks, available_functions, from_task, from_agent)

        def _answer(
            self,
            messages: Any,
            tools: Any,
            callbacks: Any,
            available_functions: Any,
            from_task: Any,
            from_agent: Any,
        ) -> str:
            self._emit_call_started_event(
                messages=messages,
                tools=tools,
                callbacks=callbacks,
                available_functions=available_functions,
                from_task=from_task,
                from_agent=from_agent,
            )
            step = queue.pop(0)
            if isinstance(step, Exception):
                raise step
            text, prompt, completion = step
            truth.usage(prompt, completion)
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
            self._track_token_usage_internal(usage)
            self._emit_call_completed_event(
                response=text,
                call_type=LLMCallType.LLM_CALL,
                from_task=from_task,
                from_agent=from_agent,
                messages=messages,
                usage=usage,
            )
            return text

        def supports_function_calling(self) -> bool:
            return False

        def supports_stop_words(self) -> bool:
            return False

        def get_context_window_size(self) -> int:
            return 128_000

    return Scripted(model=name)


def _delegation(truth: Truth) -> None:
    from crewai import Agent, Crew, Task

    delegate = json.dumps(
        {"task": "Find the capital of France", "context": "geography", "coworker": "Researcher"}
    )
    manager_script: list[Reply] = [
        (
            f"Thought: The researcher knows.\nAction: Delegate work to coworker\nAction Input: {delegate}",
            300,
            40,
        ),
        ("Thought: I now know the final answer\nFinal Answer: Paris", 420, 12),
    ]
    researcher_script: list[Reply] = [("Thought: I now know the final answer\nFinal Answer: Paris", 200, 15)]
    researcher = Agent(
        role="Researcher",
        goal="Answer questions",
        backstory="A researcher.",
        llm=_model("gpt-4o-mini", researcher_script, truth),
        allow_delegation=False,
    )
    manager = Agent(
        role="Manager",
        goal="Get questions answered",
        backstory="A manager.",
        llm=_model("gpt-4o", manager_script, truth),
        allow_delegation=True,
    )
    task = Task(description="What is the capital of France?", expected_output="A city", agent=manager)
    truth.agents, truth.root_agent = ["Manager", "Researcher"], "Manager"
    truth.edge("Manager", "Researcher")
    Crew(agents=[manager, researcher], tasks=[task]).kickoff()


def _retry(truth: Truth) -> None:
    """Manager delegates to Flaky, whose model fails twice: CrewAI re-runs Flaky's task itself
    (`max_retry_limit` 2), each retry nested in the failed run, and the third run answers."""
    from crewai import Agent, Crew, Task

    delegate = json.dumps({"task": "Check the refund policy", "context": "refunds", "coworker": "Flaky"})
    manager_script: list[Reply] = [
        (f"Thought: Flaky knows.\nAction: Delegate work to coworker\nAction Input: {delegate}", 310, 36),
        ("Thought: I now know the final answer\nFinal Answer: 30 days", 440, 10),
    ]
    flaky_script: list[Reply] = [
        RuntimeError("model overloaded"),
        RuntimeError("model overloaded"),
        ("Thought: I now know the final answer\nFinal Answer: 30 days", 210, 12),
    ]
    flaky = Agent(role="Flaky", goal="Answer questions", backstory="An unreliable expert.",
                  llm=_model("gpt-4o-mini", flaky_script, truth), allow_delegation=False,
                  max_retry_limit=2)  # fmt: skip
    manager = Agent(role="Manager", goal="Get questions answered", backstory="A manager.",
                    llm=_model("gpt-4o", manager_script, truth), allow_delegation=True)  # fmt: skip
    task = Task(description="How long is the refund window?", expected_output="A duration", agent=manager)
    truth.agents, truth.root_agent = ["Manager", "Flaky", "Flaky", "Flaky"], "Manager"
    truth.edge("Manager", "Flaky", attempts=3)
    Crew(agents=[manager, flaky], tasks=[task]).kickoff()


SCENARIOS = {"delegation": _delegation, "retry": _retry}
"""Scenario name -> the function that runs it and fills its truth."""


def _run_scenarios(writer: Any, tracer_provider: Any, exporter: Any, library: str) -> None:
    """Every scenario under its own root span, one trace each, into `writer`."""
    from crewai.events.event_bus import crewai_event_bus
    from opentelemetry import trace

    tracer = trace.get_tracer("janux.fixture", tracer_provider=tracer_provider)
    for scenario, run in SCENARIOS.items():
        truth = Truth(scenario=scenario, library=library)
        with tracer.start_as_current_span(f"fixture {scenario}"):
            try:
                run(truth)
            except Exception:
                truth.raised = True
            crewai_event_bus.flush()  # the listener makes its spans from events handled off-thread
        if library == LIBRARY_OPENLLMETRY:  # no model span and no usage: no call is recorded at all
            truth.inference_calls = truth.input_tokens = truth.output_tokens = 0
        writer.take(exporter, truth)


def inner(out: Path) -> None:
    """Run the scenarios under each instrumentation (inside the virtualenv) and write the fixtures."""
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # no anonymous telemetry from a fixture
    os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from opentelemetry.instrumentation.crewai import CrewAIInstrumentor as OpenLLMetryInstrumentor

    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=22_07, service="crewai-app")
    openinference = CrewAIInstrumentor()
    openinference.instrument(tracer_provider=tracer_provider, use_event_listener=True)
    writer = Writer(NAME)
    _run_scenarios(writer, tracer_provider, exporter, LIBRARY)
    writer.write(out)
    openinference.uninstrument()
    tracer_provider, exporter = provider(seed=22_10, service="crewai-app")
    OpenLLMetryInstrumentor().instrument(tracer_provider=tracer_provider)
    writer = Writer(NAME_OPENLLMETRY)
    _run_scenarios(writer, tracer_provider, exporter, LIBRARY_OPENLLMETRY)
    writer.write(out)


if __name__ == "__main__":
    venvs.main("crewai", "tests.support.foreign.generate_crewai", REQUIREMENTS, inner)
