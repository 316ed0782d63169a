"""Hostile trace content for the readers and the dashboard: agent loops nested thousands deep,
attribute values of megabytes."""

from __future__ import annotations

from janux.tracing import conventions as c
from janux.tracing.records import SpanRecord

START_NS = 1_700_000_000_000_000_000


def nested_agents(depth: int, trace_id: str = "d" * 32) -> list[SpanRecord]:
    """`depth` `invoke_agent` spans, each the child of the one before (agent0 calls agent1 ...)."""
    spans = []
    for level in range(depth):
        spans.append(
            SpanRecord(
                trace_id=trace_id,
                span_id=f"{level + 1:016x}",
                parent_span_id=f"{level:016x}" if level else "",
                name=c.invoke_agent_span_name(f"agent{level}"),
                start_ns=START_NS + level,
                duration_ns=2 * (depth - level),
                attributes={c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: f"agent{level}"},
            )
        )
    return spans


def huge_values(value_bytes: int, trace_id: str = "e" * 32) -> list[SpanRecord]:
    """Two spans (an agent loop and its model call) whose attributes hold `value_bytes` of text each."""
    text = ("all work and no play " * (value_bytes // 21 + 1))[:value_bytes]
    agent = SpanRecord(
        trace_id=trace_id, span_id="1" * 16, parent_span_id="", name=c.invoke_agent_span_name("big"),
        start_ns=START_NS, duration_ns=10,
        attributes={c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: "big", "big.note": text},
    )  # fmt: skip
    chat = SpanRecord(
        trace_id=trace_id, span_id="2" * 16, parent_span_id="1" * 16, name="chat model",
        start_ns=START_NS + 1, duration_ns=5,
        attributes={c.GEN_AI_OPERATION_NAME: "chat", "gen_ai.output.messages": text},
    )  # fmt: skip
    return [chat, agent]
