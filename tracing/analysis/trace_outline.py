"""The Trace page's tree: every span of a trace as one row, in tree order, named for what it is in
the handoff tree (agent loop, delegation, attempt, model round, tool), with its outcome and cost.

The rows carry the meanings of `outcomes` (an attempt's own duration and outcome), so the tree,
the graph and the tables cannot disagree; `matches` is the search inside a trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Literal

from janux.tracing import conventions as c
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import outcomes
from janux.tracing.analysis import spanread as sr
from janux.tracing.analysis.readers.structure import loop_id
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.records import SpanRecord

RowKind = Literal["loop", "attempt", "delegation", "transfer", "round", "tool", "other"]
"""What a span is in the handoff tree."""
KINDS: tuple[RowKind, ...] = ("loop", "attempt", "delegation", "transfer", "round", "tool", "other")
"""Every row kind, outermost first."""


@dataclass(slots=True)
class OutlineRow:
    """One span as a row of the tree."""

    span_id: str
    """The span."""
    depth: int
    """Depth below the trace's top span(s)."""
    kind: RowKind
    """What the span is in the handoff tree."""
    label: str
    """`researcher`, `attempt 2/2 · researcher`, `delegate.researcher → researcher`, `chat gpt-4o`."""
    outcome: str
    """`completed`, `failed: model_error`, `timeout`, `denied: max_depth`, `ok`, `error`, `open`."""
    duration_ms: float | None
    """The span's own wall clock (an attempt's, not its delegation's); None while open."""
    cost: str
    """Inclusive cost of a loop or delegation, the round's cost for a model round, else "—"."""
    agent: str
    """Agent loop the span belongs to ("" when none)."""


_Ref = tuple[Literal["loop", "attempt", "tool"], int, int]
"""What the handoff tree says a span is: ("loop", node, -1), ("attempt", delegation, attempt) or
("tool", delegation, -1) (the delegating tool call)."""


def _handoff_refs(view: TraceView) -> dict[str, _Ref]:
    """The spans the handoff tree names (loops, attempts, delegating tool calls), by span id; where
    a span is more than one, the last named wins (a delegation over an attempt over a loop)."""
    refs: dict[str, _Ref] = {}
    for i, node in enumerate(view.nodes):
        if node.span_id and node.segment == 0:  # a later agent segment has a row of its own
            refs[node.span_id] = ("loop", i, -1)
    for i, d in enumerate(view.delegations):
        for j, attempt in enumerate(d.attempts):
            if view.nodes[attempt.node].segment == 0:
                refs[attempt.span_id] = ("attempt", i, j)
        if d.tool_span_id:
            refs[d.tool_span_id] = ("tool", i, -1)
    return refs


def _named(view: TraceView, ref: _Ref) -> tuple[RowKind, str, str, str]:
    """(kind, label, outcome, cost) of a span the handoff tree names."""
    what, i, j = ref
    if what == "loop":
        node = view.nodes[i]
        outcome: str = c.STATUS_COMPLETED if node.status == "ok" else node.status
        return "loop", node.agent, outcome, fmt.usage_cost(node.inclusive)
    d = view.delegations[i]
    if what == "attempt":
        attempt = d.attempts[j]
        cost = fmt.usage_cost(view.nodes[attempt.node].inclusive)
        label = f"attempt {attempt.number}/{d.attempt_count} · {d.target}"
        return "attempt", label, outcomes.attempt_outcome(attempt), cost
    reason = d.deny_reason or d.stop_reason
    outcome = d.status + (f": {outcomes.reason_name(reason)}" if reason else "")  # final status
    kind: RowKind = "transfer" if d.kind == "transfer" else "delegation"
    return kind, f"{d.tool} → {d.target}", outcome, fmt.usage_cost(d.cost)


def _plain_kind(span: SpanRecord) -> tuple[RowKind, str, str]:
    """(kind, label, cost) of a span the handoff tree does not name."""
    op = sr.operation(span)
    if sr.is_inference(op):
        cost = sr.round_cost(span)
        model = sr.round_model(span)
        return "round", f"{op} {model}".strip(), fmt.usd(cost) if cost is not None else outcomes.NONE_SHOWN
    if op == c.OP_EXECUTE_TOOL:
        return "tool", sr.tool_name(span), outcomes.NONE_SHOWN
    return "other", span.name, outcomes.NONE_SHOWN


def _row(view: TraceView, refs: dict[str, _Ref], pos: int, depth: int) -> OutlineRow:
    """The tree row of the span at `pos` of the trace's index."""
    span = view.index.spans[pos]
    ref = refs.get(span.span_id)
    if ref is not None:
        kind, label, outcome, cost = _named(view, ref)
    else:
        kind, label, cost = _plain_kind(span)
        outcome = sr.span_status(span)
    loop_of = view.tree.node_of_span
    node = loop_of[pos] if pos < len(loop_of) else -1
    return OutlineRow(
        span_id=span.span_id, depth=depth, kind=kind, label=label, outcome=outcome,
        duration_ms=sr.duration_ms(span), cost=cost, agent=view.nodes[node].agent if node >= 0 else "",
    )  # fmt: skip


def iter_outline(view: TraceView) -> Iterator[OutlineRow]:
    """`outline`, one row at a time: the first rows of a big trace cost only what they hold (all
    10,000 rows of a 10,000-span trace take 60-90 ms; its first 100, about 3 ms)."""
    index = view.index
    refs = _handoff_refs(view)
    segments = _segments_after(view)
    depth = [0] * len(index.spans)
    for pos in index.order:
        parent = index.parent[pos]
        depth[pos] = depth[parent] + 1 if parent >= 0 else 0
        row = _row(view, refs, pos, depth[pos])
        yield row
        node = segments.get(row.span_id)
        if node is not None:
            yield _segment_row(view, node, max(depth[pos] - 1, 0))


def _segments_after(view: TraceView) -> dict[str, int]:
    """Transfer tool span id -> the agent segment it started (a loop that transferred is one node
    per agent: the target's rounds follow the transfer under a row of their own)."""
    found = {}
    for d in view.delegations:
        for attempt in d.attempts:
            if d.tool_span_id and view.nodes[attempt.node].segment > 0:
                found[d.tool_span_id] = attempt.node
    return found


def _segment_row(view: TraceView, number: int, depth: int) -> OutlineRow:
    """The row of an agent segment after a transfer: named after the agent that took over, with its
    own time and inclusive cost; its id is the segment's (`structure.loop_id`), which `TraceView.span`
    resolves to the loop's span."""
    node = view.nodes[number]
    outcome = c.STATUS_COMPLETED if node.status == "ok" else node.status
    return OutlineRow(
        span_id=loop_id(node.span_id, node.segment), depth=depth, kind="loop", label=node.agent,
        outcome=outcome, duration_ms=node.duration_ns / 1e6 if node.duration_ns >= 0 else None,
        cost=fmt.usage_cost(node.inclusive), agent=node.agent,
    )  # fmt: skip


def outline(view: TraceView) -> list[OutlineRow]:
    """Every span of the trace as a tree row, parents before children, siblings by start time."""
    return list(iter_outline(view))


def outline_head(view: TraceView, count: int) -> list[OutlineRow]:
    """The first `count` rows of `outline(view)`, computed alone."""
    return list(islice(iter_outline(view), max(count, 0)))


def outline_row(view: TraceView, span_id: str) -> OutlineRow | None:
    """The tree row of one span (as in `outline(view)`), computed alone; None when not in the trace."""
    index = view.index
    pos = index.by_id.get(span_id)
    if pos is None:
        return None
    depth, up = 0, index.parent[pos]
    while up >= 0 and depth < len(index.spans):  # the index breaks cycles; the bound is a guard
        depth, up = depth + 1, index.parent[up]
    return _row(view, _handoff_refs(view), pos, depth)


def matches(view: TraceView, row: OutlineRow, text: str) -> bool:
    """True when `text` (any case) is in the row's span name, label, agent, span id or any
    attribute (key=value): the search inside a trace."""
    needle = text.strip().lower()
    if not needle:
        return True
    span = view.span(row.span_id)
    haystack = [row.label, row.agent, row.outcome, row.span_id]
    if span is not None:
        haystack.append(span.name)
        haystack.extend(f"{k}={v}" for k, v in span.attributes.items())
    return any(needle in str(item).lower() for item in haystack)


def headline(view: TraceView) -> list[tuple[str, str]]:
    """(label, value) of the Trace page's header: root agent, conversation, start, duration, status."""
    spans = view.index.spans
    start = min(s.start_ns for s in spans)
    ends = [s.end_ns for s in spans if s.duration_ns >= 0]
    duration = (max(ends) - start) / 1e6 if ends else None
    conversation = next((n.conversation_id for n in view.nodes if n.conversation_id), None)
    roots = view.roots or view.nodes
    status = outcomes.trace_status(view.failures, len(view.issues.open_spans))
    return [
        ("Root agent", roots[0].agent if roots else outcomes.NONE_SHOWN),
        ("Conversation", conversation or outcomes.NONE_SHOWN),
        ("Started (UTC)", fmt.utc(start)),
        ("Duration", fmt.ms(duration)),
        ("Status", status),
    ]
