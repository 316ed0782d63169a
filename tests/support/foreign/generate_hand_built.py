# ruff: noqa: SIM117, E501 - nested `with` blocks mirror the span tree; attribute maps stay on one line each
"""Generate the HAND-BUILT foreign fixtures: conventions whose libraries are not run here.

Run: `.venv/bin/python -m tests.support.foreign.generate_hand_built [OUT_DIR]`.
Each trace is written with the OpenTelemetry SDK, span by span, with the span names and attributes
the library's published instrumentation emits (read from its source):
- smolagents through OpenInference (`openinference-instrumentation-smolagents`): `{Agent}.run` AGENT
  spans carrying the agent's cumulative `llm.token_count.*` (no `agent.name`), `Step N` CHAIN spans,
  `{Model}.generate` LLM spans, TOOL spans; a managed agent runs inside a step of its manager;
- Strands Agents: `invoke_agent {name}` spans carrying `gen_ai.usage.*` summed over the agent's
  event-loop cycles, `execute_event_loop_cycle` spans, `chat` spans, `execute_tool {name}` spans
  (an agent used as a tool runs below its tool span);
- OpenLLMetry (Traceloop): `traceloop.span.kind` workflow/agent/tool spans, `openai.chat` spans with
  `llm.request.type` and the older `gen_ai.usage.prompt_tokens` / `completion_tokens` names, one
  call with only `llm.usage.total_tokens` (unread: its split is unknown), and one span of a kind no
  convention declares, carrying usage (unrecognised).
The truth is written by hand next to each scenario (`hand_built` = true).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.trace import Status, StatusCode, Tracer

from tests.support.foreign.common import FIXTURES, Capture, FixtureWriter, Truth


@contextmanager
def _span(tracer: Tracer, name: str, attributes: dict[str, Any], *, error: Exception | None = None) -> Iterator[Any]:
    with tracer.start_as_current_span(name, attributes=attributes, record_exception=False,
                                      set_status_on_exception=False) as span:  # fmt: skip
        yield span
        if error is not None:
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR))


def _oi_llm(tracer: Tracer, model: str, tokens_in: int, tokens_out: int) -> None:
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": model, "llm.provider": "openai",
             "llm.token_count.prompt": tokens_in, "llm.token_count.completion": tokens_out,
             "llm.token_count.total": tokens_in + tokens_out}  # fmt: skip
    with _span(tracer, "LiteLLMModel.generate", attrs):
        pass


def _oi_agent(tracer: Tracer, kind: str, tokens: tuple[int, int]) -> dict[str, Any]:
    return {"openinference.span.kind": "AGENT", "smolagents.max_steps": 5,
            "llm.token_count.prompt": tokens[0], "llm.token_count.completion": tokens[1],
            "llm.token_count.total": sum(tokens)}  # fmt: skip


def smolagents(capture: Capture) -> Truth:
    """A CodeAgent managing a ToolCallingAgent; both AGENT spans carry their cumulative counts."""
    tracer = capture.provider.get_tracer("openinference.instrumentation.smolagents")
    with _span(tracer, "CodeAgent.run", _oi_agent(tracer, "CodeAgent", (800, 110))
               | {"smolagents.managed_agents.0.name": "web_search"}):  # fmt: skip
        with _span(tracer, "Step 1", {"openinference.span.kind": "CHAIN"}):
            _oi_llm(tracer, "gpt-4o", 500, 60)
            with _span(tracer, "ToolCallingAgent.run", _oi_agent(tracer, "ToolCallingAgent", (400, 40))):
                with _span(tracer, "Step 1", {"openinference.span.kind": "CHAIN"}):
                    _oi_llm(tracer, "gpt-4o-mini", 400, 40)
                    with _span(tracer, "web_search", {"openinference.span.kind": "TOOL", "tool.name": "web_search"}):
                        pass
        with _span(tracer, "Step 2", {"openinference.span.kind": "CHAIN"}):
            _oi_llm(tracer, "gpt-4o", 300, 50)
            with _span(tracer, "final_answer", {"openinference.span.kind": "TOOL", "tool.name": "final_answer"}):
                pass
    return Truth(
        scenario="managed_agent", library="smolagents + openinference (hand-built)", input_tokens=1200,
        output_tokens=150, inference_calls=3, agents=["(unnamed agent)", "(unnamed agent)"],
        delegations=[["(unnamed agent)", "(unnamed agent)"]], hand_built=True,
    )  # fmt: skip


def _strands_chat(tracer: Tracer, model: str, tokens_in: int, tokens_out: int) -> None:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.system": "strands-agents", "gen_ai.request.model": model,
             "gen_ai.usage.input_tokens": tokens_in, "gen_ai.usage.output_tokens": tokens_out,
             "gen_ai.usage.total_tokens": tokens_in + tokens_out}  # fmt: skip
    with _span(tracer, "chat", attrs):
        pass


def _strands_agent(name: str, model: str, tokens: tuple[int, int]) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.system": "strands-agents", "gen_ai.agent.name": name,
            "gen_ai.request.model": model, "gen_ai.usage.input_tokens": tokens[0],
            "gen_ai.usage.output_tokens": tokens[1], "gen_ai.usage.total_tokens": sum(tokens)}  # fmt: skip


def strands(capture: Capture) -> Truth:
    """An orchestrator using a research agent as a tool; agent spans carry their cycles' sums."""
    tracer = capture.provider.get_tracer("strands.telemetry.tracer")
    model = "us.anthropic.claude-sonnet-4-20250514-v1:0"
    with _span(tracer, "invoke_agent orchestrator", _strands_agent("orchestrator", model, (1100, 95))):
        with _span(tracer, "execute_event_loop_cycle", {"event_loop.cycle_id": "c1"}):
            _strands_chat(tracer, model, 500, 45)
            tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "research_assistant",
                    "gen_ai.tool.call.id": "tooluse_1"}  # fmt: skip
            with _span(tracer, "execute_tool research_assistant", tool):
                with _span(tracer, "invoke_agent research_assistant",
                           _strands_agent("research_assistant", model, (700, 80))):  # fmt: skip
                    for cycle, (tokens_in, tokens_out) in enumerate(((300, 30), (400, 50))):
                        with _span(tracer, "execute_event_loop_cycle", {"event_loop.cycle_id": f"r{cycle}"}):
                            _strands_chat(tracer, model, tokens_in, tokens_out)
        with _span(tracer, "execute_event_loop_cycle", {"event_loop.cycle_id": "c2"}):
            _strands_chat(tracer, model, 600, 50)
    return Truth(
        scenario="agent_as_tool", library="strands-agents (hand-built)", input_tokens=1800, output_tokens=175,
        inference_calls=4, agents=["orchestrator", "research_assistant"],
        delegations=[["orchestrator", "research_assistant"]], hand_built=True,
    )  # fmt: skip


def _tl_chat(tracer: Tracer, usage: dict[str, int]) -> None:
    attrs: dict[str, Any] = {"llm.request.type": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
                             "gen_ai.response.model": "gpt-4o-2024-08-06", **usage}  # fmt: skip
    with _span(tracer, "openai.chat", attrs):
        pass


def openllmetry(capture: Capture) -> Truth:
    """A Traceloop workflow: older usage names, one call with a total only, one unknown span kind."""
    tracer = capture.provider.get_tracer("opentelemetry.instrumentation.openai")
    old = {"gen_ai.usage.prompt_tokens": 300, "gen_ai.usage.completion_tokens": 20, "llm.usage.total_tokens": 320}
    workflow = {"traceloop.span.kind": "workflow", "traceloop.entity.name": "support_flow"}
    with _span(tracer, "support_flow.workflow", workflow):
        with _span(tracer, "triage.agent", {"traceloop.span.kind": "agent", "traceloop.entity.name": "triage"}):
            _tl_chat(tracer, old)
            with _span(tracer, "lookup.tool", {"traceloop.span.kind": "tool", "traceloop.entity.name": "lookup"}):
                researcher = {"traceloop.span.kind": "agent", "traceloop.entity.name": "researcher"}
                with _span(tracer, "researcher.agent", researcher):
                    _tl_chat(tracer, {"gen_ai.usage.prompt_tokens": 200, "gen_ai.usage.completion_tokens": 15})
                    _tl_chat(tracer, {"llm.usage.total_tokens": 90})  # the split is unknown: unread
            mystery = {"acme.kind": "rerank", "acme.usage.input_tokens": 40}
            with _span(tracer, "acme.rerank", mystery):  # no kind any convention declares: unrecognised
                pass
    return Truth(
        scenario="older_names", library="openllmetry / traceloop (hand-built)", input_tokens=500,
        output_tokens=35, inference_calls=2, agents=["triage", "researcher"],
        delegations=[["triage", "researcher"]], unread_calls=1, unrecognised_spans=1, hand_built=True,
    )  # fmt: skip


BUILDERS = {"smolagents_openinference": smolagents, "strands": strands, "openllmetry": openllmetry}


def generate(out: Path = FIXTURES) -> list[Path]:
    """Write every hand-built fixture; returns the paths written."""
    paths: list[Path] = []
    for seed, (name, build) in enumerate(BUILDERS.items(), start=1):
        capture = Capture(seed=4000 + seed, service=f"{name}-app")
        truth = build(capture)
        writer = FixtureWriter(name)
        writer.add(capture.take(), truth)
        paths += writer.write(out)
    return paths


if __name__ == "__main__":
    print(*generate(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURES), sep="\n")
