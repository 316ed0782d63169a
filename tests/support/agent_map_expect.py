"""The agent map as the Trace pages would add it up: reconstruct each trace, sum its loops and edges.

The reference the sources' `agent_map` must equal (tests only; the pages never do this).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from janux.dashboard.reconstruct.model import Usage
from janux.dashboard.reconstruct.rebuild import reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sources.agentmap.model import AgentMap, MapUsage


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
        kinds = {f.delegation: f.kind for f in view.failures if f.delegation is not None}
        reasons = {f.delegation: f.reason for f in view.failures if f.delegation is not None}
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


def _mu(u: MapUsage) -> tuple[int, int, float | None, int]:
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
