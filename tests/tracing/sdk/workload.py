"""An agent-shaped workload made through the OpenTelemetry API only (as the runtime does).

Each "turn" is an `invoke_agent` root with model rounds and a delegated subagent, run as asyncio
tasks in parallel; the result depends only on the inputs, so a broken exporter must not change it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer, TracerProvider

from janux.tracing import conventions as c

SPANS_PER_TURN = 5
"""root + 2 chat rounds + 1 tool span + 1 delegated agent."""


@dataclass(frozen=True)
class TurnResult:
    """What one turn computed (independent of tracing)."""

    index: int
    answer: str
    tokens: int


async def run_turns(provider: TracerProvider, turns: int) -> list[TurnResult]:
    """Run `turns` traced turns concurrently and return their results in order."""
    tracer = provider.get_tracer(c.INSTRUMENTATION_SCOPE)
    tasks = [asyncio.create_task(_turn(tracer, index)) for index in range(turns)]
    return list(await asyncio.gather(*tasks))


async def _turn(tracer: Tracer, index: int) -> TurnResult:
    with tracer.start_as_current_span(
        c.invoke_agent_span_name("planner"),
        attributes={c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.JANUX_AGENT_DEPTH: 0},
    ) as root:
        tokens = 0
        for round_number in range(2):
            with tracer.start_as_current_span(
                c.chat_span_name("scripted"),
                kind=SpanKind.CLIENT,
                attributes={c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_USAGE_INPUT_TOKENS: 10 + index},
            ):
                tokens += 10 + index + round_number
                await asyncio.sleep(0)
        with tracer.start_as_current_span(c.execute_tool_span_name("delegate.helper")) as tool:
            tool.add_event(c.EVENT_HANDOFF_START, {c.JANUX_HANDOFF_STATUS: c.STATUS_STARTING})
            with tracer.start_as_current_span(c.invoke_agent_span_name("helper")) as sub:
                sub.set_status(Status(StatusCode.OK))
                await asyncio.sleep(0)
            tool.add_event(c.EVENT_HANDOFF_END, {c.JANUX_HANDOFF_STATUS: c.STATUS_COMPLETED})
        root.set_attribute(c.JANUX_BILL_INPUT_TOKENS, tokens)
    return TurnResult(index=index, answer=f"answer-{index}", tokens=tokens)


def expected_results(turns: int) -> list[TurnResult]:
    """The results `run_turns` must return, computed without any tracing."""
    return [TurnResult(i, f"answer-{i}", sum(10 + i + r for r in range(2))) for i in range(turns)]
