"""Running sums of an agent map over many traces' facts, and the `AgentMap` they finish into.

Each trace's facts (`loops.LoopFacts`, `loops.DelegationFacts`) are added in the order given, every
float in that order, so the same facts always give the same map. The sums are plain lists and
numbers: a map over a million stored spans adds a few hundred thousand loops, and method calls
and small objects per loop would be most of its time.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from typing import Any

from janux.tracing.analysis.agentmap.fleet_stats import (
    TRACE_REFS_KEPT,
    AgentMap,
    AgentStats,
    EdgeStats,
    FailureRef,
    MapKey,
    MapRefs,
    PathStats,
    TraceRef,
)
from janux.tracing.analysis.agentmap.loops import DelegationFacts, LoopFacts, MapFacts
from janux.tracing.analysis.trace_parts import Usage

EdgeKey = tuple[str, str, str]
"""(caller, target, kind)."""

_RUNS, _ERRORS, _OWN, _INCLUSIVE = 0, 1, 2, 6
"""Positions in a path's sums: runs, errors, then own and inclusive usage (4 numbers each)."""


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (`q` in 0..100) of `values`; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _add(
    sums: list[Any], at: int, tokens_in: int, tokens_out: int, cost: float | None, unpriced: int
) -> None:
    """`Usage.add` on the four numbers of `sums` from `at` (None + x = x)."""
    sums[at] += tokens_in
    sums[at + 1] += tokens_out
    if cost is not None:
        sums[at + 2] = cost if sums[at + 2] is None else sums[at + 2] + cost
    sums[at + 3] += unpriced


def _usage(sums: list[Any], at: int) -> Usage:
    return Usage(sums[at], sums[at + 1], sums[at + 2], sums[at + 3])


def _append(lists: dict[Any, list[Any]], key: Any, value: Any) -> None:
    found = lists.get(key)
    if found is None:
        lists[key] = [value]
    else:
        found.append(value)


def _newest(refs: list[Any]) -> list[Any]:
    return heapq.nlargest(TRACE_REFS_KEPT, refs)


class MapSums:
    """Running sums of one map."""

    def __init__(self, bucket_ns: int | None) -> None:
        self.bucket_ns = bucket_ns
        self.traces = 0
        self.paths: dict[tuple[str, ...], list[Any]] = {}
        self.node_ms: dict[str, list[float]] = {}
        self.node_traces: dict[str, int] = {}
        self.turn_costs: list[float] = []
        self.unpriced_turns = 0
        self.timeline: dict[tuple[int, str], list[Any]] = {}
        self.edges: dict[EdgeKey, EdgeStats] = {}
        self.edge_ms: dict[EdgeKey, list[float]] = {}

    def add_trace(
        self, trace_id: str, loops: Sequence[LoopFacts], delegations: Sequence[DelegationFacts]
    ) -> None:
        """Add one trace's facts (a trace without any still counts as read)."""
        self.traces += 1
        self._add_loops(loops)
        for delegation in delegations:
            self._add_delegation(delegation)
        for name in {loop.agent for loop in loops}:
            self.node_traces[name] = self.node_traces.get(name, 0) + 1
        for key in {(f.caller, f.target, f.kind) for f in delegations}:
            self.edges[key].traces += 1

    def _add_loops(self, loops: Sequence[LoopFacts]) -> None:
        """Count each loop under its delegation path (nodes are summed from the paths at the end)."""
        paths, durations, bucket = self.paths, self.node_ms, self.bucket_ns
        for agent, path, ref, duration, error, top, oi, oo, oc, ou, ii, io, ic, iu in loops:
            if duration is not None:
                _append(durations, agent, duration)
            sums = paths.get(path)
            if sums is None:
                sums = paths[path] = [0, 0, 0, 0, None, 0, 0, 0, None, 0]
            sums[_RUNS] += 1
            sums[_ERRORS] += error
            _add(sums, _OWN, oi, oo, oc, ou)
            _add(sums, _INCLUSIVE, ii, io, ic, iu)
            if top:
                if ic is None:
                    self.unpriced_turns += 1
                else:
                    self.turn_costs.append(ic)
            if bucket:
                key = (ref[0] // bucket * bucket, agent)
                usage = self.timeline.get(key)
                if usage is None:
                    usage = self.timeline[key] = [0, 0, None, 0]
                _add(usage, 0, oi, oo, oc, ou)

    def _add_delegation(self, facts: DelegationFacts) -> None:
        key = (facts.caller, facts.target, facts.kind)
        edge = self.edges.get(key)
        if edge is None:
            edge = self.edges[key] = EdgeStats(*key)
        edge.count += 1
        edge.attempts += facts.attempts
        edge.cost.add(facts.cost)
        if facts.duration_ms is not None:
            _append(self.edge_ms, key, facts.duration_ms)
        if facts.failure is not None:
            edge.failed += 1
            edge.failures[facts.failure] = edge.failures.get(facts.failure, 0) + 1
            edge.reasons[facts.reason] = edge.reasons.get(facts.reason, 0) + 1

    def _path_stats(self) -> list[PathStats]:
        found = []
        for path, sums in self.paths.items():
            stats = PathStats(path, sums[_RUNS], sums[_ERRORS], _usage(sums, _OWN), _usage(sums, _INCLUSIVE))
            found.append(stats)
        return found

    def _nodes(self, paths: list[PathStats]) -> list[AgentStats]:
        nodes = nodes_of_paths(paths)
        for name, node in nodes.items():
            durations = self.node_ms.get(name, [])
            node.p50_ms, node.p95_ms = percentile(durations, 50), percentile(durations, 95)
            node.own, node.inclusive = node.own.rounded(), node.inclusive.rounded()
            node.traces = self.node_traces.get(name, 0)
        return sorted(nodes.values(), key=node_order)

    def _edges(self) -> list[EdgeStats]:
        for key, edge in self.edges.items():
            durations = self.edge_ms.get(key, [])
            edge.p50_ms, edge.p95_ms = percentile(durations, 50), percentile(durations, 95)
            edge.cost = edge.cost.rounded()
        return sorted(self.edges.values(), key=edge_order)

    def finish(self) -> AgentMap:
        """The map of everything added."""
        paths = self._path_stats()
        nodes = self._nodes(paths)
        for path in paths:
            path.own, path.inclusive = path.own.rounded(), path.inclusive.rounded()
        return AgentMap(
            nodes=nodes,
            edges=self._edges(),
            paths=sorted(paths, key=path_order),
            traces=self.traces,
            turn_costs=sorted(self.turn_costs),
            unpriced_turns=self.unpriced_turns,
            timeline={key: _usage(sums, 0).rounded() for key, sums in sorted(self.timeline.items())},
        )


def newest_refs(facts: Iterable[tuple[str, MapFacts]], key: MapKey) -> MapRefs:
    """The newest references of one node (`key`: its agent) or edge (caller, target, kind) over
    per-trace facts (trace id, facts): its `TRACE_REFS_KEPT` newest loops (delegations) and, for an
    edge, failed delegations, newest first by (start, trace id, span id)."""
    refs: list[tuple[int, str, str]] = []
    failed: list[tuple[int, str, str, str, str]] = []
    for trace_id, (loops, delegations) in facts:
        if isinstance(key, str):
            refs += [loop.ref for loop in loops if loop.agent == key]
            continue
        for f in delegations:
            if (f.caller, f.target, f.kind) == key:
                refs.append((f.start_ns, trace_id, f.span_id))
                if f.failure is not None:
                    failed.append((f.start_ns, trace_id, f.span_id, f.failure, f.reason))
    return MapRefs(
        [TraceRef(t, s, span) for s, t, span in _newest(refs)],
        [FailureRef(t, span, s, kind, reason) for s, t, span, kind, reason in _newest(failed)],
    )


def path_order(path: PathStats) -> tuple[int, float, tuple[str, ...]]:
    """How a map lists its paths: shortest, then most expensive (inclusive) first."""
    return len(path.path), -(path.inclusive.cost or 0.0), path.path


def nodes_of_paths(paths: list[PathStats]) -> dict[str, AgentStats]:
    """Each agent's node, the sum of the paths ending at it (runs, errors, own and inclusive usage):
    the one rule every source's agent map builds its nodes by."""
    nodes: dict[str, AgentStats] = {}
    for path in paths:
        name = path.path[-1]
        node = nodes.get(name)
        if node is None:
            node = nodes[name] = AgentStats(name)
        node.runs += path.runs
        node.errors += path.errors
        node.own.add(path.own)
        node.inclusive.add(path.inclusive)
    return nodes


def node_order(node: AgentStats) -> tuple[float, int, str]:
    """How a map lists its nodes: most expensive (inclusive), then most runs first."""
    return -(node.inclusive.cost or 0.0), -node.runs, node.agent


def edge_order(edge: EdgeStats) -> tuple[int, str, str, str]:
    """How a map lists its edges: most frequent first."""
    return -edge.count, edge.caller, edge.target, edge.kind
