"""Fold the link rows of many traces into an `AgentMap`, with the Trace page's rules.

Per trace: each agent loop's caller is its nearest agent ancestor and its delegating tool the
nearest tool span between them (no tool: direct nesting); a loop's own usage is its
`janux.turn.*`, else the inference rounds it owns (unpriced when they carry no cost: the map
never estimates); inclusive usage adds every loop below. These are the rules of
`janux.dashboard.reconstruct` (tree.py, costs.py, failures.py), applied to link rows only, so
the map is exact over a whole range without rebuilding traces; tests hold the two equal.
"""

from __future__ import annotations

import gc
import heapq
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from janux.tracing import conventions as c
from janux.tracing.sources.agentmap.classify import ROLE_AGENT, LinkRow
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

LOOSE_AGENT = "(no agent)"
"""The node holding inference rounds that run outside any agent loop (as on the Trace page)."""
MISSING_END = "missing HANDOFF_END"
"""Reason of a delegation whose HANDOFF_START has no HANDOFF_END (as on the Failures page)."""
MAX_WALK = 256
"""Longest parent chain followed; a longer one (or a cycle) ends the walk."""
_TOOL_PREFIXES = ("delegate.", "handoff.", "transfer_to_")


@dataclass(slots=True)
class TraceLinks:
    """What a source hands the builder for one trace."""

    trace_id: str
    """Trace id."""
    rows: Sequence[LinkRow]
    """Link rows of its agent spans and (at least) its delegating tool spans."""
    inference: dict[str, MapUsage] = field(default_factory=dict)
    """Usage of its inference spans, summed per parent span id (`(no parent)` key: "")."""
    parents: dict[str, str] = field(default_factory=dict)
    """Parent of every other span on a path between link rows and inference (span -> parent)."""


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (`q` in 0..100) of `values`; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def target_from_tool(tool: str) -> str:
    """Best guess of a target from a tool name (`delegate.researcher` -> `researcher`)."""
    for prefix in _TOOL_PREFIXES:
        if tool.startswith(prefix) and len(tool) > len(prefix):
            return tool[len(prefix) :]
    return tool


@dataclass(slots=True)
class _Loop:
    row: LinkRow
    parent: _Loop | None = None
    own: MapUsage = field(default_factory=MapUsage)
    inclusive: MapUsage | None = None
    path: tuple[str, ...] | None = None


@dataclass(slots=True)
class _Delegation:
    tool: LinkRow | None
    caller: _Loop | None
    attempts: list[_Loop] = field(default_factory=list)


class _Trace:
    """The loops and delegations of one trace."""

    def __init__(self, links: TraceLinks) -> None:
        self.links = links
        self.rows: dict[str, LinkRow] = {}
        for row in links.rows:
            self.rows.setdefault(row.span_id, row)
        self.loops: dict[str, _Loop] = {}
        self.delegations: dict[str, _Delegation] = {}
        self.loose: _Loop | None = None

    def walk(self, parent_id: str) -> tuple[LinkRow | None, LinkRow | None]:
        """(nearest tool below the nearest agent, nearest agent) above a span with this parent."""
        tool = None
        current = parent_id
        for _ in range(MAX_WALK):
            if not current:
                break
            row = self.rows.get(current)
            if row is None:
                next_id = self.links.parents.get(current)
                if next_id is None:
                    break
                current = next_id
                continue
            if row.role == ROLE_AGENT:
                return tool, row
            if tool is None:
                tool = row
            current = row.parent_span_id
        return tool, None

    def build(self) -> None:
        for row in self.links.rows:
            if row.role == ROLE_AGENT and row.span_id not in self.loops:
                self.loops[row.span_id] = _Loop(row)
        for loop in self.loops.values():
            tool, caller = self.walk(loop.row.parent_span_id)
            loop.parent = self.loops.get(caller.span_id) if caller is not None else None
            if loop.row.has_turn:
                loop.own = _turn_usage(loop.row)
            if tool is not None:
                self._delegation(tool).attempts.append(loop)
            elif loop.parent is not None:
                key = "direct:" + loop.row.span_id
                self.delegations[key] = _Delegation(None, loop.parent, [loop])
        for row in self.rows.values():
            if row.role != ROLE_AGENT and row.delegating:
                self._delegation(row)
        self._inference()

    def _delegation(self, tool: LinkRow) -> _Delegation:
        found = self.delegations.get(tool.span_id)
        if found is None:
            _, caller = self.walk(tool.parent_span_id)
            found = _Delegation(tool, self.loops.get(caller.span_id) if caller is not None else None)
            self.delegations[tool.span_id] = found
        return found

    def _inference(self) -> None:
        for parent_id, usage in self.links.inference.items():
            row = self.rows.get(parent_id)
            owner = row if row is not None and row.role == ROLE_AGENT else self.walk(parent_id)[1]
            loop = self.loops.get(owner.span_id) if owner is not None else None
            if loop is None:
                if self.loose is None:
                    self.loose = _Loop(_loose_row(self.links.trace_id))
                loop = self.loose
            elif loop.row.has_turn:
                continue
            loop.own.add(usage)

    def all_loops(self) -> list[_Loop]:
        loops = list(self.loops.values())
        return [*loops, self.loose] if self.loose is not None else loops


def _loose_row(trace_id: str) -> LinkRow:
    return LinkRow(
        trace_id, "", "", ROLE_AGENT, 0, 0, LOOSE_AGENT, "ok", None, None, None, False,
        None, None, None, None, False, None, None, False, c.KIND_DELEGATE, "", None, None, None, False, False,
    )  # fmt: skip


def _turn_usage(row: LinkRow) -> MapUsage:
    return MapUsage(row.input_tokens or 0, row.output_tokens or 0, row.cost, row.unpriced_tokens or 0)


def _fold_inclusive(loops: Sequence[_Loop]) -> None:
    """Inclusive usage of every loop: its own plus the own usage of every loop below it."""
    for loop in loops:
        loop.inclusive = loop.own.copy()
    for loop in loops:
        ancestor, steps = loop.parent, 0
        while ancestor is not None and steps < MAX_WALK:
            assert ancestor.inclusive is not None
            ancestor.inclusive.add(loop.own)
            ancestor, steps = ancestor.parent, steps + 1


def _path(loop: _Loop) -> tuple[str, ...]:
    if loop.path is None:
        chain: list[_Loop] = []
        current: _Loop | None = loop
        while current is not None and current.path is None and len(chain) < MAX_WALK:
            chain.append(current)
            current = current.parent
        prefix: tuple[str, ...] = current.path if current is not None and current.path else ()
        for item in reversed(chain):
            prefix = (*prefix, item.row.name)
            item.path = prefix
    return loop.path or (loop.row.name,)


def _attempt_order(attempts: list[_Loop]) -> list[_Loop]:
    """Attempts by `janux.handoff.attempt`, else by their order among siblings (then start)."""
    if len(attempts) < 2:
        return attempts
    by_start = sorted(attempts, key=lambda a: (a.row.start_ns, a.row.span_id))
    numbered = [(a.row.attempt if a.row.attempt is not None else n, a.row.start_ns, i) for i, (n, a) in
                enumerate(enumerate(by_start, start=1))]  # fmt: skip
    return [by_start[i] for _, _, i in sorted(numbered)]


@dataclass(slots=True)
class DelegationFacts:
    """What the map (and the Failures page) says about one delegation."""

    caller: str
    """Delegating agent ("" when unknown)."""
    target: str
    """Subagent or transfer target."""
    kind: str
    """`delegate` or `transfer`."""
    tool: str
    """Tool name."""
    status: str
    """Final status (`completed`, `failed`, `fallback`, `denied`, `cut`, `open`)."""
    attempts: int
    """Attempts that ran (the recorded count when no attempt span was seen)."""
    duration_ms: float | None
    """Wall clock of the whole delegation."""
    failure: str | None
    """Failure kind (`denied`, `failed`, `fallback`, `cut`, `timeout`, `open`), None when it did not fail."""
    reason: str
    """Why it failed (deny rule, budget line, error type, error text); "" when it did not."""
    span_id: str
    """Tool span id (first attempt's span for direct nesting)."""
    start_ns: int
    """Start of the delegation."""
    cost: MapUsage
    """Inclusive usage of its attempts."""


def _status(tool: LinkRow | None, attempts: list[_Loop]) -> str:
    if tool is not None and tool.has_start and not tool.has_end:
        return "open"
    if (tool is None or not tool.janux) and attempts:
        last = attempts[-1].row.status
        return "open" if last == "open" else (c.STATUS_FAILED if last == "error" else c.STATUS_COMPLETED)
    return (tool.status if tool is not None else "") or c.STATUS_COMPLETED


def _failure(status: str, timeouts: int) -> str | None:
    if status in c.FAILING_STATUSES or status == "open":
        return status
    return c.ERROR_TIMEOUT if timeouts else None


def _reason(kind: str | None, tool: LinkRow | None, error_type: str | None) -> str:
    if kind is None:
        return ""
    if kind == "open":
        return MISSING_END
    if kind == c.ERROR_TIMEOUT:
        return c.ERROR_TIMEOUT
    values = (tool.deny_reason, tool.stop_reason, error_type, tool.error) if tool else (error_type,)
    return next((v for v in values if v), kind)


def _caller(delegation: _Delegation, kind: str, target: str) -> str:
    loop = delegation.caller
    if loop is None:
        return ""
    row = loop.row
    if kind == c.KIND_TRANSFER and row.transfer_from and row.transfer_to == target:
        return row.transfer_from
    return row.name


def delegation_facts(delegation: _Delegation) -> DelegationFacts:
    """The facts of one delegation (rules of the Trace page's handoff tree)."""
    tool = delegation.tool
    attempts = _attempt_order(delegation.attempts)
    first = attempts[0].row if attempts else None
    name = tool.name if tool is not None else ""
    target = (tool.target if tool is not None else "") or (first.name if first else target_from_tool(name))
    kind = tool.kind if tool is not None else c.KIND_DELEGATE
    status = _status(tool, attempts)
    failed_types = [a.row.error_type for a in attempts if a.row.error_type]
    error_type = tool.error_type if tool is not None else None
    error_type = error_type or (failed_types[-1] if failed_types else None)
    timeouts = sum(1 for a in attempts if a.row.error_type == c.ERROR_TIMEOUT)
    failure = _failure(status, timeouts)
    if tool is not None:
        ms = tool.handoff_ms if tool.handoff_ms is not None else _ms(tool.duration_ns)
        span_id, start = tool.span_id, tool.start_ns or (first.start_ns if first else 0)
    else:
        assert first is not None
        ms, span_id, start = _ms(first.duration_ns), first.span_id, first.start_ns
    cost = MapUsage()
    for attempt in attempts:
        assert attempt.inclusive is not None
        cost.add(attempt.inclusive)
    recorded = tool.attempt if tool is not None else None
    return DelegationFacts(
        caller=_caller(delegation, kind, target), target=target, kind=kind, tool=name or target,
        status=status, attempts=len(attempts) or recorded or 0, duration_ms=ms, failure=failure,
        reason=_reason(failure, tool, error_type), span_id=span_id, start_ns=start, cost=cost,
    )  # fmt: skip


def _ms(duration_ns: int) -> float | None:
    return None if duration_ns < 0 else duration_ns / 1e6


def trace_facts(links: TraceLinks) -> tuple[list[_Loop], list[DelegationFacts]]:
    """The loops (own and inclusive usage filled) and delegations of one trace."""
    trace = _Trace(links)
    trace.build()
    loops = trace.all_loops()
    _fold_inclusive(loops)
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

    def add_loop(self, trace_id: str, loop: _Loop) -> None:
        """Count one loop under its delegation path (nodes are summed from the paths at the end)."""
        row = loop.row
        if row.duration_ns >= 0 and row.span_id:
            self.node_ms.setdefault(row.name, []).append(row.duration_ns / 1e6)
        self.node_refs.setdefault(row.name, []).append((row.start_ns, trace_id, row.span_id))
        path = _path(loop)
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


TraceFacts = tuple[list[_Loop], list[DelegationFacts]]
"""One trace's loops (usage filled) and delegations: what a map adds up (and what may be cached)."""


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
