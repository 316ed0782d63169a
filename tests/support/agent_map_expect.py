"""The agent map as the Trace pages would add it up: reconstruct each trace, sum its loops and edges.

The reference the sources' `agent_map` must equal (tests only; the pages never do this).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from janux.tracing.analysis.agentmap.fleet_stats import AgentMap
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import SpanRecord


def _usage(u: Usage) -> tuple[int, int, float | None, int]:
    return u.input_tokens, u.output_tokens, None if u.cost is None else round(u.cost, 9), u.unpriced_tokens


def _plus(a: tuple[Any, ...] | None, b: tuple[Any, ...]) -> tuple[Any, ...]:
    if a is None:
        return b
    cost = a[2] if b[2] is None else (b[2] if a[2] is None else round(a[2] + b[2], 9))
    return a[0] + b[0], a[1] + b[1], cost, a[3] + b[3]


def expected(traces: Iterable[Sequence[SpanRecord]]) -> dict[str, Any]:
    """Nodes and edges summed over the rebuilt traces (`estimate=False`: the map never estimates)."""
    nodes: dict[str, dict[str, Any]] = {}
    edges: dict[tuple[str, str, str], dict[str, Any]] = {}
    for spans in traces:
        view = reconstruct(spans, estimate=False)
        for node in view.nodes:
            n = nodes.setdefault(node.agent, {"runs": 0, "errors": 0, "own": None, "inclusive": None})
            n["runs"] += 1
            n["errors"] += node.status == "error"
            n["own"] = _plus(n["own"], _usage(node.own))
            n["inclusive"] = _plus(n["inclusive"], _usage(node.inclusive))
        # A retried handoff completed: the map counts it as a delegation, not as a failure.
        failed = [f for f in view.failures if f.delegation is not None and f.kind != "retried"]
        kinds = {f.delegation: f.kind for f in failed}
        reasons = {f.delegation: f.reason for f in failed}
        for d in view.delegations:
            key = (d.caller or "", d.target, d.kind)
            e = edges.setdefault(
                key, {"count": 0, "attempts": 0, "failures": {}, "reasons": {}, "cost": None}
            )
            e["count"] += 1
            e["attempts"] += d.attempt_count
            e["cost"] = _plus(e["cost"], _usage(d.cost))
            if d.index in kinds:
                e["failures"][kinds[d.index]] = e["failures"].get(kinds[d.index], 0) + 1
                e["reasons"][reasons[d.index]] = e["reasons"].get(reasons[d.index], 0) + 1
    return {"nodes": nodes, "edges": edges}


def _mu(u: Usage) -> tuple[int, int, float | None, int]:
    return u.input_tokens, u.output_tokens, None if u.cost is None else round(u.cost, 9), u.unpriced_tokens


def actual(agent_map: AgentMap) -> dict[str, Any]:
    """The same shape read off an `AgentMap`."""
    return {
        "nodes": {
            n.agent: {"runs": n.runs, "errors": n.errors, "own": _mu(n.own), "inclusive": _mu(n.inclusive)}
            for n in agent_map.nodes
        },
        "edges": {
            e.key: {
                "count": e.count, "attempts": e.attempts, "failures": e.failures, "reasons": e.reasons,
                "cost": _mu(e.cost),
            }
            for e in agent_map.edges
        },
    }  # fmt: skip


def nested_foreign_trace(trace_id: str = "c" * 32) -> list[SpanRecord]:
    """Another runtime's shape: agents nested through chain and task spans, a plain tool carrying a
    delegation, inference under a chain, an ERROR attempt, and a span whose parent is missing."""
    from janux.tracing import conventions as c
    from tests.support.otlp_build import record

    def agent(span: str, parent: str, name: str, start: int, status: str = "Unset") -> SpanRecord:
        attrs = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: name}
        return record(
            span, parent, f"invoke_agent {name}", attrs, trace_id=trace_id, start=start, status=status
        )

    def chat(span: str, parent: str, start: int, tokens: int, cost: float | None = None) -> SpanRecord:
        attrs: dict[str, Any] = {
            c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_REQUEST_MODEL: "m",
            c.GEN_AI_USAGE_INPUT_TOKENS: tokens, c.GEN_AI_USAGE_OUTPUT_TOKENS: 1,
        }  # fmt: skip
        if cost is not None:
            attrs[c.JANUX_ROUND_COST] = cost
        return record(span, parent, "chat m", attrs, trace_id=trace_id, start=start)

    tool = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: "ask_helper"}
    return [
        agent("a1", "", "boss", 1_000),
        record("ch1", "a1", "chain", {}, trace_id=trace_id, start=1_010),
        chat("m1", "ch1", 1_020, 100, 0.5),
        record("t1", "ch1", "execute_tool ask_helper", tool, trace_id=trace_id, start=1_030),
        record("task", "t1", "task", {}, trace_id=trace_id, start=1_040),
        agent("a2", "task", "helper", 1_050, status="Error"),
        agent("a3", "task", "helper", 1_060),
        chat("m2", "a3", 1_070, 40),
        agent("a4", "a3", "intern", 1_080),
        chat("m3", "a4", 1_090, 7, 0.25),
        agent("lost", "gone", "orphan", 1_100),
        chat("m4", "", 1_110, 3),
    ]
