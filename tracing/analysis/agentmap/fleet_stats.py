"""The agent map of a time range: agents as nodes, delegations and transfers as edges.

Plain dataclasses, built by `janux.tracing.analysis.agentmap.build` from any source's link rows.
Unknown cost is None, never 0; unpriced tokens stay a number of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from janux.tracing.analysis.trace_parts import Usage

TRACE_REFS_KEPT = 50
"""How many of the newest traces (and failures) a source's `map_refs` gives for one node or edge."""

MapKey = str | tuple[str, str, str]
"""A node of the map (its agent) or an edge (caller, target, kind)."""


@dataclass(slots=True)
class TraceRef:
    """One trace a node or edge occurs in."""

    trace_id: str
    """Trace id."""
    start_ns: int
    """Start of the loop or delegation in that trace (newest first)."""
    span_id: str
    """The loop's span, or the delegation's tool span (attempt span for direct nesting)."""


@dataclass(slots=True)
class FailureRef:
    """One failed delegation of an edge."""

    trace_id: str
    """Trace id."""
    span_id: str
    """Tool span (attempt span for direct nesting)."""
    start_ns: int
    """When the delegation started."""
    kind: str
    """`denied`, `failed`, `fallback`, `cut`, `timeout` or `open` (as on the Failures page)."""
    reason: str
    """Deny rule, budget line, error type or error text: what the Failures page groups by."""


@dataclass(slots=True)
class MapRefs:
    """The newest traces of one node or edge of a map, read only when someone inspects it
    (`TraceSource.map_refs`): a map itself carries none, so its cost does not grow with the
    references of every group."""

    recent: list[TraceRef] = field(default_factory=list)
    """The newest loops of the agent (delegations of the edge), at most `TRACE_REFS_KEPT`, newest
    first (by start, then trace id, then span id)."""
    failures: list[FailureRef] = field(default_factory=list)
    """An edge's newest failed delegations, at most `TRACE_REFS_KEPT`, newest first (a node: none)."""


@dataclass(slots=True)
class AgentStats:
    """One node of the map: every loop of one agent in the range."""

    agent: str
    """Agent name."""
    runs: int = 0
    """Agent loops (turns and delegation attempts)."""
    errors: int = 0
    """Loops that ended with status ERROR."""
    own: Usage = field(default_factory=Usage)
    """The loops' own rounds."""
    inclusive: Usage = field(default_factory=Usage)
    """Own plus everything delegated below each loop."""
    p50_ms: float | None = None
    """Median loop duration (closed loops only)."""
    p95_ms: float | None = None
    """95th percentile loop duration."""
    traces: int = 0
    """Distinct traces the agent runs in."""

    @property
    def error_rate(self) -> float:
        """Errors / runs."""
        return self.errors / self.runs if self.runs else 0.0


@dataclass(slots=True)
class EdgeStats:
    """One edge of the map: every delegation (or transfer) from one agent to another."""

    caller: str
    """Delegating agent ("" when the caller's spans are missing)."""
    target: str
    """Subagent or transfer target."""
    kind: str
    """`delegate` or `transfer`."""
    count: int = 0
    """Delegations."""
    attempts: int = 0
    """Attempts over all delegations."""
    failed: int = 0
    """Delegations that failed (any kind in `failures`)."""
    failures: dict[str, int] = field(default_factory=dict)
    """Failed delegations by kind: `denied`, `failed`, `fallback`, `cut`, `timeout`, `open`."""
    reasons: dict[str, int] = field(default_factory=dict)
    """Failed delegations by reason (deny rule, budget line, error type)."""
    p50_ms: float | None = None
    """Median delegation duration."""
    p95_ms: float | None = None
    """95th percentile delegation duration."""
    cost: Usage = field(default_factory=Usage)
    """Inclusive usage carried by the edge (every attempt and what it delegated)."""
    traces: int = 0
    """Distinct traces the edge occurs in."""

    @property
    def key(self) -> tuple[str, str, str]:
        """(caller, target, kind)."""
        return self.caller, self.target, self.kind

    @property
    def failure_rate(self) -> float:
        """Failed / count."""
        return self.failed / self.count if self.count else 0.0

    @property
    def attempts_per_delegation(self) -> float:
        """Attempts / count."""
        return self.attempts / self.count if self.count else 0.0


@dataclass(slots=True)
class PathStats:
    """Every loop reached by one delegation path (`triage > researcher > fact_checker`)."""

    path: tuple[str, ...]
    """Agent names from the root loop down."""
    runs: int = 0
    """Loops at this path."""
    errors: int = 0
    """Loops at this path that ended with status ERROR."""
    own: Usage = field(default_factory=Usage)
    """Their own rounds."""
    inclusive: Usage = field(default_factory=Usage)
    """Own plus everything below."""


@dataclass(slots=True)
class AgentMap:
    """Nodes, edges and delegation paths over the traces of a range."""

    nodes: list[AgentStats] = field(default_factory=list)
    """Agents, most expensive (inclusive) first."""
    edges: list[EdgeStats] = field(default_factory=list)
    """Edges, most frequent first."""
    paths: list[PathStats] = field(default_factory=list)
    """Delegation paths, shortest then most expensive first."""
    traces: int = 0
    """Traces read."""
    turn_costs: list[float] = field(default_factory=list)
    """Inclusive cost of every priced top-level loop (a turn), for cost-per-turn percentiles."""
    unpriced_turns: int = 0
    """Top-level loops with no priced round at all (left out of `turn_costs`: unknown is not 0)."""
    timeline: dict[tuple[int, str], Usage] = field(default_factory=dict)
    """Own usage per (bucket start in Unix ns, agent), when a bucket size was asked for."""

    def node(self, agent: str) -> AgentStats | None:
        """The node of `agent`, None when absent."""
        return next((n for n in self.nodes if n.agent == agent), None)

    def edge(self, caller: str, target: str, kind: str | None = None) -> EdgeStats | None:
        """The edge `caller -> target` (of `kind`, when given), None when absent."""
        for edge in self.edges:
            if edge.caller == caller and edge.target == target and kind in (None, edge.kind):
                return edge
        return None
