"""Issue 11, item 7: malformed handoff and delegate arguments never break a turn or its trace.

Whatever text a model sends as the arguments of a `handoff.*` or `delegate.*` call, the turn
completes, every HANDOFF_START gets its HANDOFF_END, every span is ended, and the call either
goes through or is refused with `invalid_arguments`.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.runtime import Agent, RunResult, Subagent
from janux.runtime.testing import ScriptedModel, call_tools, reply, tool_call
from janux.tracing.conventions import EVENT_HANDOFF_END, EVENT_HANDOFF_START

from .helpers import tool_results

MALFORMED = {
    "deeply nested": "[" * 100_000 + "]" * 100_000,
    "nested object": '{"reason": ' * 50_000 + "1" + "}" * 50_000,
    "object for a string": '{"reason": {"why": "refund"}}',
    "number for a string": '{"reason": 7}',
    "not JSON": "transfer me please",
    "a JSON string": '"refund"',
    "huge value": json.dumps({"reason": "x" * 1_000_000}),
}


class _Run:
    """One traced turn; each of the front desk's rounds makes one call with the given raw arguments."""

    def __init__(self, tool: str, *arguments: str) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        rounds = [call_tools(tool_call(tool, raw, id=f"c{i or ''}")) for i, raw in enumerate(arguments)]
        self.front_model = ScriptedModel([*rounds, reply("front answers")])
        self.target_model = ScriptedModel([reply("target answers")] * 2)
        target = Agent("target", instructions="You take over.", model=self.target_model)
        self.front = Agent(
            "front",
            model=self.front_model,
            handoffs=[target],
            subagents=[Subagent(agent=target, max_turns=1)],
        )

    async def turn(self) -> RunResult:
        return await self.front.run("hi", tracer_provider=self.provider)

    def check_trace(self, result: RunResult) -> None:
        events = [e["event"] for e in result.handoff_events]
        assert events == [EVENT_HANDOFF_START, EVENT_HANDOFF_END]
        spans = self.exporter.get_finished_spans()
        assert sum(s.parent is None for s in spans) == 1  # the turn span ended
        [tool_span] = [s for s in spans if s.name.startswith("execute_tool ")]
        assert [e.name for e in tool_span.events] == [EVENT_HANDOFF_START, EVENT_HANDOFF_END]
        assert {s.context.span_id for s in spans if s.context} >= {
            s.parent.span_id for s in spans if s.parent is not None
        }  # every parent span was exported, i.e. ended


@pytest.mark.parametrize("arguments", list(MALFORMED.values()), ids=list(MALFORMED))
async def test_malformed_handoff_arguments_are_refused_and_the_trace_stays_whole(arguments: str) -> None:
    run = _Run("handoff.target", arguments)
    result = await run.turn()
    assert result.agent == "front" and result.text == "front answers"
    assert tool_results(run.front_model, 1)["c"]["error"] == "invalid_arguments"
    assert result.handoff_events[-1]["status"] == "failed" and run.target_model.calls == []
    run.check_trace(result)


async def test_a_handoff_refused_for_its_arguments_leaves_the_turn_free_to_transfer() -> None:
    run = _Run("handoff.target", MALFORMED["deeply nested"], '{"reason": "billing question"}')
    result = await run.turn()
    assert result.agent == "target" and result.text == "target answers"
    assert "Reason: billing question" in run.target_model.calls[0].system
    assert [e["status"] for e in result.handoff_events if e["event"] == EVENT_HANDOFF_END] == [
        "failed",
        "completed",
    ]


def _one_turn(tool: str, arguments: str) -> None:
    run = _Run(tool, arguments)
    result = asyncio.run(run.turn())
    outcome = tool_results(run.front_model, 1)["c"] if len(run.front_model.calls) > 1 else None
    if outcome is not None and isinstance(outcome, dict) and "error" in outcome:
        assert outcome["error"] == "invalid_arguments", outcome
        assert result.text == "front answers"
    else:  # the call went through: a transfer, or a delegation the target answered
        assert result.text in ("front answers", "target answers")
    run.check_trace(result)


# Arbitrary text, JSON-shaped text, and JSON objects of arbitrary values under the expected keys.
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
ARGUMENTS = st.one_of(
    st.text(max_size=200),
    st.dictionaries(st.sampled_from(["task", "context", "reason", "other"]), _json_values, max_size=4).map(
        json.dumps
    ),
    st.builds(lambda depth: "[" * depth + "]" * depth, st.integers(0, 200_000)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments=ARGUMENTS)
def test_any_handoff_arguments_leave_the_turn_and_trace_whole(arguments: str) -> None:
    _one_turn("handoff.target", arguments)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments=ARGUMENTS)
def test_any_delegate_arguments_leave_the_turn_and_trace_whole(arguments: str) -> None:
    _one_turn("delegate.target", arguments)
