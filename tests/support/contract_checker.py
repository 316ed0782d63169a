"""A local TracerProvider with an in-memory exporter, normalized trees, outlines and the invariants."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.tracing import conventions as c
from janux.tracing.analysis.normalize import FLOAT_KEYS, INT_KEYS, LIST_KEYS, normalized_tree
from janux.tracing.records import SpanRecord, attr_float, attr_int, attr_str
from janux.tracing.sdk.convert import span_records_from_readable

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
    c.JANUX_HANDOFF_PATH,
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
    problems = []
    for span in records:
        if attr_str(span.attributes, c.GEN_AI_OPERATION_NAME) != c.OP_CHAT:
            continue
        owner = _nearest_agent(span, by_id)
        if owner is None:
            problems.append(f"chat span {span.name} has no invoke_agent ancestor")
            continue
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


_SPAN_KINDS = {c.OP_INVOKE_AGENT: "Internal", c.OP_CHAT: "Client", c.OP_EXECUTE_TOOL: "Internal"}


def _type_problems(where: str, attributes: dict[str, Any]) -> list[str]:
    """Ints as ints, costs as doubles, finish reasons as a string array, every other contract key a string."""
    problems = []
    for key, value in attributes.items():
        if key in INT_KEYS:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif key in FLOAT_KEYS:
            ok = isinstance(value, float)
        elif key in LIST_KEYS:
            ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
        elif key == c.JANUX_HANDOFF_DURATION_MS:
            ok = isinstance(value, float) and value >= 0
        else:
            ok = not key.startswith(("gen_ai.", "janux.", "error.")) or isinstance(value, str)
        if not ok:
            problems.append(f"{where}: {key}={value!r} has the wrong type")
    return problems


def _span_problems(span: SpanRecord) -> list[str]:
    where = f"{span.name} ({span.span_id})"
    operation = attr_str(span.attributes, c.GEN_AI_OPERATION_NAME)
    problems = _type_problems(where, span.attributes)
    if operation not in _SPAN_KINDS or span.kind != _SPAN_KINDS[operation]:
        problems.append(f"{where}: operation {operation!r} with kind {span.kind}")
    if (span.status_code == "Error") != (c.ERROR_TYPE in span.attributes):
        problems.append(f"{where}: status {span.status_code}, error.type {span.attributes.get(c.ERROR_TYPE)}")
    if operation != c.OP_CHAT and any(key.startswith("gen_ai.usage.") for key in span.attributes):
        problems.append(f"{where}: gen_ai.usage.* outside a chat span")
    for event in span.events:
        problems += _type_problems(f"{where} {event.name}", event.attributes)
    return problems


_IDENTITY = (
    c.JANUX_HANDOFF_ID,
    c.JANUX_HANDOFF_CALL_ID,
    c.JANUX_HANDOFF_KIND,
    c.JANUX_HANDOFF_TOOL,
    c.JANUX_HANDOFF_TARGET,
    c.JANUX_HANDOFF_DEPTH,
    c.JANUX_HANDOFF_SESSION_MODE,
)


def _event_pair_problems(tool: SpanRecord) -> list[str]:
    """START then END with the same identity; END's final outcome copied onto the tool span."""
    where = tool.name
    names = [event.name for event in tool.events]
    if names != [c.EVENT_HANDOFF_START, c.EVENT_HANDOFF_END]:
        return [f"{where}: events {names}, expected exactly START then END"]
    start, end = (event.attributes for event in tool.events)
    problems = [
        f"{where}: {key} START {start.get(key)!r} END {end.get(key)!r}"
        for key in _IDENTITY
        if key not in start or start.get(key) != end.get(key)
    ]
    if start.get(c.JANUX_HANDOFF_CALL_ID) != tool.attributes.get(c.GEN_AI_TOOL_CALL_ID):
        problems.append(f"{where}: call_id differs from gen_ai.tool.call.id")
    statuses = (start.get(c.JANUX_HANDOFF_STATUS), end.get(c.JANUX_HANDOFF_STATUS))
    if statuses[0] != c.STATUS_STARTING or statuses[1] not in c.FINAL_STATUSES:
        problems.append(f"{where}: statuses {statuses}")
    if c.JANUX_HANDOFF_DURATION_MS not in end or c.JANUX_HANDOFF_ATTEMPTS not in end:
        problems.append(f"{where}: END without attempts or duration_ms")
    for key in (c.JANUX_HANDOFF_STATUS, c.JANUX_HANDOFF_ATTEMPTS, c.JANUX_HANDOFF_TARGET):
        if tool.attributes.get(key) != end.get(key):
            problems.append(f"{where}: tool span {key}={tool.attributes.get(key)!r}, END {end.get(key)!r}")
    if end.get(c.JANUX_HANDOFF_DENY_REASON, c.DENY_GUARDRAIL) not in c.DENY_REASONS:
        problems.append(f"{where}: deny_reason {end[c.JANUX_HANDOFF_DENY_REASON]!r}")
    if end.get(c.JANUX_HANDOFF_STOP_REASON, c.STOP_MAX_TURNS) not in c.STOP_REASONS:
        problems.append(f"{where}: stop_reason {end[c.JANUX_HANDOFF_STOP_REASON]!r}")
    return problems


def _attempt_problems(tool: SpanRecord, attempts: list[SpanRecord]) -> list[str]:
    """A delegation's attempt spans are numbered 1..n (n = END attempts) with its id and depth."""
    if [event.name for event in tool.events] != [c.EVENT_HANDOFF_START, c.EVENT_HANDOFF_END]:
        return []  # already reported by _event_pair_problems
    start, end = (event.attributes for event in tool.events)
    problems = []
    numbers = sorted(attr_int(span.attributes, c.JANUX_HANDOFF_ATTEMPT) or 0 for span in attempts)
    if end.get(c.JANUX_HANDOFF_KIND) == c.KIND_DELEGATE and numbers != list(
        range(1, (attr_int(end, c.JANUX_HANDOFF_ATTEMPTS) or 0) + 1)
    ):
        problems.append(
            f"{tool.name}: attempt spans {numbers}, END attempts {end.get(c.JANUX_HANDOFF_ATTEMPTS)}"
        )
    for span in attempts:
        if span.attributes.get(c.JANUX_HANDOFF_ID) != start.get(c.JANUX_HANDOFF_ID):
            problems.append(f"{tool.name}: attempt {span.name} has another janux.handoff.id")
        if span.attributes.get(c.JANUX_AGENT_DEPTH) != start.get(c.JANUX_HANDOFF_DEPTH):
            problems.append(f"{tool.name}: attempt {span.name} depth differs from the handoff depth")
    return problems


def contract_problems(records: list[SpanRecord]) -> list[str]:
    """Every per-span rule of the trace contract, plus invariants 1-3 (empty when all hold).

    Types of every contract attribute, span kinds, ERROR iff `error.type`, usage only on chat
    spans, HANDOFF_START/END paired on every delegate/handoff tool span with the same identity,
    the final outcome copied onto the tool span, attempt spans numbered 1..n with the handoff's id
    and depth, and the accounting invariants.
    """
    problems = invariant_problems(records)
    by_parent: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in records:
        by_parent[span.parent_span_id].append(span)
        problems += _span_problems(span)
    for span in records:
        tool_type = attr_str(span.attributes, c.GEN_AI_TOOL_TYPE)
        if tool_type in (c.TOOL_TYPE_DELEGATE, c.TOOL_TYPE_HANDOFF):
            children = by_parent.get(span.span_id, [])
            attempts = [s for s in children if c.JANUX_HANDOFF_ATTEMPT in s.attributes]
            problems += _event_pair_problems(span) + _attempt_problems(span, attempts)
        elif span.events:
            problems.append(f"{span.name}: events on a span that is no delegation")
    return problems
