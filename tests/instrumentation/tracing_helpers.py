"""A local TracerProvider with an in-memory exporter, normalized trees, outlines and the invariants."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracing import conventions as c
from tracing.normalize import normalized_tree
from tracing.records import SpanRecord, attr_float, attr_int, attr_str
from tracing.sdk_convert import span_records_from_readable

OUTLINE_KEYS = (
    c.JANUX_AGENT_DEPTH,
    c.JANUX_HANDOFF_ATTEMPT,
    c.JANUX_HANDOFF_STATUS,
    c.JANUX_HANDOFF_ATTEMPTS,
    c.JANUX_HANDOFF_DENY_REASON,
    c.JANUX_HANDOFF_STOP_REASON,
    c.JANUX_STOP_REASON,
    c.JANUX_HANDOFF_FROM,
    c.JANUX_HANDOFF_TO,
)


@dataclass
class Traced:
    """A local provider whose finished spans can be read back as records and trees."""

    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    provider: TracerProvider = field(default_factory=TracerProvider)

    def __post_init__(self) -> None:
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def records(self) -> list[SpanRecord]:
        """Finished spans as SpanRecords."""
        return span_records_from_readable(self.exporter.get_finished_spans())

    def tree(self) -> list[dict[str, Any]]:
        """The normalized tree of everything finished so far."""
        return normalized_tree(self.records())

    def clear(self) -> None:
        """Forget finished spans."""
        self.exporter.clear()


def outline(tree: list[dict[str, Any]], keys: tuple[str, ...] = OUTLINE_KEYS) -> list[str]:
    """One line per span: indented name, status (+error.type), selected attributes, event names."""
    lines: list[str] = []

    def walk(node: dict[str, Any], depth: int) -> None:
        attributes = node["attributes"]
        parts = ["  " * depth + node["name"]]
        if node["status"] != "Unset":
            parts.append(f"[{node['status']} {attributes.get(c.ERROR_TYPE, '')}]".replace(" ]", "]"))
        parts += [f"{key.rsplit('.', 1)[-1]}={attributes[key]}" for key in keys if key in attributes]
        if node["events"]:
            names = [event["name"].removeprefix("HANDOFF_") for event in node["events"]]
            parts.append("events=" + ",".join(names))
        lines.append(" ".join(parts))
        for child in node["children"]:
            walk(child, depth + 1)

    for root in tree:
        walk(root, 0)
    return lines


def _nearest_agent(span: SpanRecord, by_id: dict[str, SpanRecord]) -> SpanRecord | None:
    parent = by_id.get(span.parent_span_id)
    while parent is not None and attr_str(parent.attributes, c.GEN_AI_OPERATION_NAME) != c.OP_INVOKE_AGENT:
        parent = by_id.get(parent.parent_span_id)
    return parent


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def invariant_problems(records: list[SpanRecord]) -> list[str]:
    """Violations of contract invariants 1-3, trace by trace (empty when every trace is right)."""
    traces: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in records:
        traces[span.trace_id].append(span)
    return [problem for spans in traces.values() for problem in _trace_problems(spans)]


def _trace_problems(records: list[SpanRecord]) -> list[str]:
    by_id = {span.span_id: span for span in records}
    agents = [s for s in records if attr_str(s.attributes, c.GEN_AI_OPERATION_NAME) == c.OP_INVOKE_AGENT]
    sums: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0])
    for span in records:
        if attr_str(span.attributes, c.GEN_AI_OPERATION_NAME) != c.OP_CHAT:
            continue
        owner = _nearest_agent(span, by_id)
        assert owner is not None, f"chat span {span.name} has no agent ancestor"
        totals = sums[owner.span_id]
        tokens = (
            attr_int(span.attributes, c.GEN_AI_USAGE_INPUT_TOKENS) or 0,
            attr_int(span.attributes, c.GEN_AI_USAGE_OUTPUT_TOKENS) or 0,
        )
        totals[0] += tokens[0]
        totals[1] += tokens[1]
        cost = attr_float(span.attributes, c.JANUX_ROUND_COST)
        if cost is None:
            totals[3] += tokens[0] + tokens[1]
        else:
            totals[2] += cost
    problems = []
    bill_sums = [0, 0, 0.0, 0]
    for agent in agents:
        if (
            c.GEN_AI_USAGE_INPUT_TOKENS in agent.attributes
            or c.GEN_AI_USAGE_OUTPUT_TOKENS in agent.attributes
        ):
            problems.append(f"{agent.name}: gen_ai.usage.* on an invoke_agent span")
        own = [attr_float(agent.attributes, key) or 0.0 for key in c.TURN_USAGE_KEYS]
        expected = sums[agent.span_id]
        if not all(_close(x, y) for x, y in zip(own, expected, strict=True)):
            problems.append(f"{agent.name}: janux.turn.* {own} != chat sums {expected}")
        for index, value in enumerate(own):
            bill_sums[index] += value
    roots = [a for a in agents if not a.parent_span_id or a.parent_span_id not in by_id]
    for root in roots:
        bill = [attr_float(root.attributes, key) or 0.0 for key in c.BILL_KEYS]
        if not all(_close(x, y) for x, y in zip(bill, bill_sums, strict=True)):
            problems.append(f"{root.name}: janux.bill.* {bill} != sum of janux.turn.* {bill_sums}")
    return problems
