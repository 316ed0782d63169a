"""A trace without Janux accounting as link rows: its structure as `analysis.readers.structure` reads it.

Such a trace records no final status, no own usage per loop and no caller on its spans; the Trace
page reads them from the whole trace (`facts.structure`), and so does the map, through these rows:
one agent row per loop (its parent loop, the edge it is an attempt of, the own usage of its rounds)
and one edge row (role tool) per delegation or transfer (its calling loop, target, kind, and the
facts' status and error). The embedded store writes them when it reads such a trace whole after a
batch (`store/derive.py`); the in-memory and ClickHouse sources build them when they read it.
`resolved_trace` folds them back into loops and delegations without walking any span.

An edge that shares its run with another (`Edge.shares_run`: a Strands graph node fed by several
nodes runs once) has that edge's span id (the run's) and records its attempts in `attempt` instead
of owning attempt rows: the run, its usage and its cost count once, under the edge that owns it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from janux.tracing import conventions as c
from janux.tracing.analysis.agentmap.classify import ROLE_AGENT, ROLE_TOOL, LinkRow
from janux.tracing.analysis.agentmap.loops import (
    MapDelegation,
    MapFacts,
    MapLoop,
    TraceLinks,
    delegation_facts,
    fold_inclusive,
    loop_facts,
    turn_usage,
)
from janux.tracing.analysis.readers.structure import (
    AgentFacts,
    Edge,
    EdgeFacts,
    Loop,
    Structure,
    StructureFacts,
    facts_of,
    loop_status,
    structure,
)
from janux.tracing.analysis.span_index import NO_PARENT, build_index
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.records import SpanRecord, attr_float, attr_int, attr_str


def _own_usage(s: Structure, calls: list[int], agent: AgentFacts) -> Usage:
    """A loop's own rounds as the Trace page counts them without estimates: the usage its facts
    read (any convention), priced by `janux.round.cost` where a round carries it, else unpriced."""
    tokens_in, tokens_out = agent.input_tokens or 0, agent.output_tokens or 0
    cost: float | None = None
    priced = 0
    for pos in calls:
        attributes = s.index.spans[pos].attributes
        if c.JANUX_ROUND_COST not in attributes:  # the common case: other runtimes price nothing
            continue
        read = s.read(pos)
        value = attr_float(attributes, c.JANUX_ROUND_COST)
        if read.usage != "read" or value is None or not math.isfinite(value):
            continue  # unknown usage, or a failed call: nothing to price
        cost = value if cost is None else cost + value
        priced += (read.input_tokens or 0) + (read.output_tokens or 0)
    return Usage(tokens_in, tokens_out, cost, tokens_in + tokens_out - priced)


_row = tuple.__new__  # builds a LinkRow without NamedTuple's Python-level __new__ (the write path)


class _Writer:
    """The rows of one built structure."""

    def __init__(self, s: Structure, facts: StructureFacts) -> None:
        self.s = s
        self.facts = facts
        spans = s.index.spans
        self.loop_ids = [spans[loop.pos].span_id if loop.pos != NO_PARENT else "" for loop in s.loops]
        self.edge_ids = [self._edge_id(edge) for edge in s.edges]

    def _edge_id(self, edge: Edge) -> str:
        """The tool (or handoff) span, else the first attempt's span (what the map links to)."""
        if edge.tool_pos != NO_PARENT:
            return self.s.index.spans[edge.tool_pos].span_id
        return self.loop_ids[edge.attempts[0]] if edge.attempts else ""

    def loop_row(self, number: int, loop: Loop) -> LinkRow:
        s = self.s
        span = s.index.spans[loop.pos] if loop.pos != NO_PARENT else None
        own = _own_usage(s, loop.calls, self.facts.agents[number])
        via = self.edge_ids[loop.via] if loop.via is not None else ""
        attempt = None
        if loop.via is not None:
            recorded = attr_int(span.attributes, c.JANUX_HANDOFF_ATTEMPT) if span is not None else None
            attempt = recorded if recorded is not None else s.edges[loop.via].attempts.index(number) + 1
        if span is None:  # the stand-in for rounds outside any loop starts with the trace
            start = s.index.spans[s.index.order[0]].start_ns if s.index.order else 0
            duration, status, error_type = 0, "ok", None
        else:
            start, duration = span.start_ns, span.duration_ns
            status, error_type = loop_status(s, loop), attr_str(span.attributes, c.ERROR_TYPE)
        parent = self.loop_ids[loop.parent] if loop.parent is not None else ""
        return _row(LinkRow, (
            s.index.trace_id, self.loop_ids[number], parent, ROLE_AGENT, start, duration, loop.name, status,
            error_type, None, attempt, False, own.input_tokens, own.output_tokens, own.cost,
            own.unpriced_tokens, True, None, None, False, c.KIND_DELEGATE, "", None, None, None, False, False,
            via, True,
        ))  # fmt: skip

    def edge_row(self, number: int, edge: Edge, read: EdgeFacts) -> LinkRow:
        s = self.s
        error_type = None
        if edge.tool_pos != NO_PARENT:
            span: SpanRecord | None = s.index.spans[edge.tool_pos]
            assert span is not None
            error_type = attr_str(span.attributes, c.ERROR_TYPE)
        else:  # an agent nested in another, or reached by a transfer: the edge is its first attempt
            span = s.index.spans[s.loops[edge.attempts[0]].pos] if edge.attempts else None
        start, duration = (span.start_ns, span.duration_ns) if span is not None else (0, -1)
        caller = self.loop_ids[edge.caller] if edge.caller is not None else ""
        kind = c.KIND_TRANSFER if read.kind == "transfer" else c.KIND_DELEGATE
        shared = len(edge.attempts) if edge.shares_run else None  # recorded, not owned: see the docstring
        return _row(LinkRow, (
            s.index.trace_id, self.edge_ids[number], caller, ROLE_TOOL, start, duration, read.tool,
            read.status, error_type, None, shared, False, None, None, None, None, False, None, None, True,
            kind, read.target, None, read.error, None, False, False, "", True,
        ))  # fmt: skip


def foreign_rows(s: Structure, facts: StructureFacts) -> list[LinkRow]:
    """The resolved rows of a built structure and its facts (`facts_of(s)`)."""
    writer = _Writer(s, facts)
    rows = [writer.loop_row(number, loop) for number, loop in enumerate(s.loops)]
    rows += [writer.edge_row(n, edge, facts.edges[n]) for n, edge in enumerate(s.edges)]
    return rows


def foreign_links(trace_id: str, spans: Sequence[SpanRecord]) -> TraceLinks:
    """The links of one trace without Janux accounting, read whole."""
    s = structure(build_index(spans))
    return TraceLinks(trace_id, foreign_rows(s, facts_of(s, janux=False)))


def resolved_trace(links: TraceLinks) -> MapFacts:
    """The loops and delegations of resolved rows: every relation is in the rows, nothing is walked."""
    loops: dict[str, MapLoop] = {}
    edges: dict[str, MapDelegation] = {}
    sharing: dict[tuple[str, str], MapDelegation] = {}  # edges sharing another's run: no attempt rows
    for row in links.rows:
        if not row.resolved:
            continue
        if row.role == ROLE_AGENT:
            loops.setdefault(row.span_id, MapLoop(row, own=turn_usage(row)))
        elif row.attempt is not None:
            sharing.setdefault((row.span_id, row.parent_span_id), MapDelegation(row, None))
        else:
            edges.setdefault(row.span_id, MapDelegation(row, None))
    for loop in loops.values():
        row = loop.row
        loop.parent = loops.get(row.parent_span_id) if row.parent_span_id else None
        edge = edges.get(row.via) if row.via else None
        if edge is not None:
            edge.attempts.append(loop)
    every = [*edges.values(), *sharing.values()]
    for edge in every:
        parent = edge.tool.parent_span_id if edge.tool is not None else ""
        edge.caller = loops.get(parent) if parent else None
    found = list(loops.values())
    fold_inclusive(found)
    return loop_facts(links.trace_id, found), [delegation_facts(edge) for edge in every]
