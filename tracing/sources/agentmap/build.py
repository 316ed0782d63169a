"""Fold the per-trace loops and delegations of many traces into an `AgentMap`, with the Trace page's rules.

A trace's link rows become its loops and delegations in one of two ways: a trace with Janux
accounting is walked from its recorded fields (`walk`), any other trace comes as the rows of its
structure as `janux.tracing.foreign.facts` read it (`foreign_rows`), the reading the Trace page's
reconstruction uses. Either way these are the rules of `janux.dashboard.reconstruct` (tree.py,
costs.py, failures.py), applied to link rows only, so the map is exact over a whole range without
rebuilding traces; tests hold the two equal.
"""

from __future__ import annotations

import gc
import heapq
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from janux.tracing.sources.agentmap.foreign_rows import resolved_trace
from janux.tracing.sources.agentmap.loops import (
    DelegationFacts,
    MapLoop,
    TraceFacts,
    TraceLinks,
    delegation_facts,
    fold_inclusive,
    path_of,
)
from janux.tracing.sources.agentmap.model import (
    TRACE_REFS_KEPT,
    AgentMap,
    AgentStats,
    EdgeStats,
    FailureRef,
    MapUsage,
    PathStats,
    TraceRef,
)
from janux.tracing.sources.agentmap.walk import JanuxTrace


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (`q` in 0..100) of `values`; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def trace_facts(links: TraceLinks) -> TraceFacts:
    """The loops (own and inclusive usage filled) and delegations of one trace."""
    if links.resolved:
        return resolved_trace(links)
    trace = JanuxTrace(links)
    trace.build()
    loops = trace.all_loops()
    fold_inclusive(loops)
    return loops, [delegation_facts(d) for d in trace.delegations.values()]


class _Acc:
    """Running totals of the whole map."""

    def __init__(self, bucket_ns: int | None) -> None:
        self.bucket_ns = bucket_ns
        self.timeline: dict[tuple[int, str], MapUsage] = {}
        self.turn_costs: list[float] = []
        self.unpriced_turns = 0
        self.nodes: dict[str, AgentStats] = {}
        self.edges: dict[tuple[str, str, str], EdgeStats] = {}
        self.paths: dict[tuple[str, ...], PathStats] = {}
        self.node_ms: dict[str, list[float]] = {}
        self.edge_ms: dict[tuple[str, str, str], list[float]] = {}
        self.node_refs: dict[str, list[tuple[int, str, str]]] = {}
        self.edge_refs: dict[tuple[str, str, str], list[tuple[int, str, str]]] = {}
        self.edge_fails: dict[tuple[str, str, str], list[tuple[int, str, str, str, str]]] = {}
        self.node_traces: dict[str, int] = {}
        self.traces = 0

    def add_loop(self, trace_id: str, loop: MapLoop) -> None:
        """Count one loop under its delegation path (nodes are summed from the paths at the end)."""
        row = loop.row
        if row.duration_ns >= 0 and row.span_id:
            self.node_ms.setdefault(row.name, []).append(row.duration_ns / 1e6)
        self.node_refs.setdefault(row.name, []).append((row.start_ns, trace_id, row.span_id))
        path = path_of(loop)
        stats = self.paths.get(path)
        if stats is None:
            stats = self.paths[path] = PathStats(path)
        stats.runs += 1
        stats.errors += row.status == "error"
        stats.own.add(loop.own)
        assert loop.inclusive is not None
        stats.inclusive.add(loop.inclusive)
        if loop.parent is None:
            if loop.inclusive.cost is None:
                self.unpriced_turns += 1
            else:
                self.turn_costs.append(loop.inclusive.cost)
        if self.bucket_ns:
            bucket = (row.start_ns // self.bucket_ns * self.bucket_ns, row.name)
            self.timeline.setdefault(bucket, MapUsage()).add(loop.own)

    def add_delegation(self, trace_id: str, facts: DelegationFacts) -> None:
        key = (facts.caller, facts.target, facts.kind)
        edge = self.edges.get(key)
        if edge is None:
            edge = self.edges[key] = EdgeStats(*key)
        edge.count += 1
        edge.attempts += facts.attempts
        edge.cost.add(facts.cost)
        if facts.duration_ms is not None:
            self.edge_ms.setdefault(key, []).append(facts.duration_ms)
        self.edge_refs.setdefault(key, []).append((facts.start_ns, trace_id, facts.span_id))
        if facts.failure is not None:
            edge.failed += 1
            edge.failures[facts.failure] = edge.failures.get(facts.failure, 0) + 1
            edge.reasons[facts.reason] = edge.reasons.get(facts.reason, 0) + 1
            ref = (facts.start_ns, trace_id, facts.span_id, facts.failure, facts.reason)
            self.edge_fails.setdefault(key, []).append(ref)

    def _nodes_from_paths(self) -> None:
        for path in self.paths.values():
            name = path.path[-1]
            node = self.nodes.get(name)
            if node is None:
                node = self.nodes[name] = AgentStats(name)
            node.runs += path.runs
            node.errors += path.errors
            node.own.add(path.own)
            node.inclusive.add(path.inclusive)

    def finish(self) -> AgentMap:
        self._nodes_from_paths()
        for name, node in self.nodes.items():
            durations = self.node_ms.get(name, [])
            node.p50_ms, node.p95_ms = percentile(durations, 50), percentile(durations, 95)
            node.own, node.inclusive = node.own.rounded(), node.inclusive.rounded()
            node.traces = self.node_traces.get(name, 0)
            node.recent = [TraceRef(t, s, span) for s, t, span in _newest(self.node_refs.get(name, []))]
        for key, edge in self.edges.items():
            durations = self.edge_ms.get(key, [])
            edge.p50_ms, edge.p95_ms = percentile(durations, 50), percentile(durations, 95)
            edge.cost = edge.cost.rounded()
            edge.recent = [TraceRef(t, s, span) for s, t, span in _newest(self.edge_refs.get(key, []))]
            edge.recent_failures = [
                FailureRef(t, span, s, kind, reason)
                for s, t, span, kind, reason in _newest(self.edge_fails.get(key, []))
            ]
        for path in self.paths.values():
            path.own, path.inclusive = path.own.rounded(), path.inclusive.rounded()
        return AgentMap(
            nodes=sorted(self.nodes.values(), key=lambda n: (-(n.inclusive.cost or 0.0), -n.runs, n.agent)),
            edges=sorted(self.edges.values(), key=lambda e: (-e.count, e.caller, e.target, e.kind)),
            paths=sorted(self.paths.values(), key=_path_order),
            traces=self.traces,
            turn_costs=sorted(self.turn_costs),
            unpriced_turns=self.unpriced_turns,
            timeline={key: usage.rounded() for key, usage in sorted(self.timeline.items())},
        )


def _path_order(path: PathStats) -> tuple[int, float, tuple[str, ...]]:
    return len(path.path), -(path.inclusive.cost or 0.0), path.path


def _newest(refs: list[Any]) -> list[Any]:
    return heapq.nlargest(TRACE_REFS_KEPT, refs)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a map is read and built: hundreds of thousands of
    small tuples would otherwise trigger repeated full collections (about a third of the time),
    and the map's objects hold no reference cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def aggregate(facts: Iterable[tuple[str, TraceFacts]], bucket_ns: int | None = None) -> AgentMap:
    """The agent map over per-trace facts (trace id, facts)."""
    acc = _Acc(bucket_ns)
    for trace_id, (loops, delegations) in facts:
        acc.traces += 1
        for loop in loops:
            acc.add_loop(trace_id, loop)
        for delegation in delegations:
            acc.add_delegation(trace_id, delegation)
        for name in {loop.row.name for loop in loops}:
            acc.node_traces[name] = acc.node_traces.get(name, 0) + 1
        for key in {(f.caller, f.target, f.kind) for f in delegations}:
            acc.edges[key].traces += 1
    return acc.finish()


def build_agent_map(traces: Iterable[TraceLinks], bucket_ns: int | None = None) -> AgentMap:
    """The agent map over `traces` (each trace's link rows, inference sums and parent links);
    `bucket_ns` also fills its timeline (own usage per agent per time bucket of loop starts)."""
    return aggregate(((links.trace_id, trace_facts(links)) for links in traces), bucket_ns)
