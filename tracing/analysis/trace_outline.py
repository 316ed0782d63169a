"""The Trace page's tree: every span of a trace as one row, in tree order, named for what it is in
the handoff tree (agent loop, delegation, attempt, model round, tool), with its outcome and cost.

The rows carry the meanings of `outcomes` (an attempt's own duration and outcome), so the tree,
the graph and the tables cannot disagree; the search inside a trace is `trace_search`.
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
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.records import SpanRecord, attr_str

RowKind = Literal["loop", "attempt", "delegation", "transfer", "round", "tool", "other"]
"""What a span is in the handoff tree."""
KINDS: tuple[RowKind, ...] = ("loop", "attempt", "delegation", "transfer", "round", "tool", "other")
"""Every row kind, outermost first."""
HANDOFF_KINDS: tuple[RowKind, ...] = ("loop", "attempt", "delegation", "transfer")
"""The kinds of the handoff tree (the tree collapsed to loops and delegations)."""
RowState = Literal["ok", "failed", "timeout", "cut", "denied", "fallback", "retried", "open"]
"""How a row's span ended, one word per icon: `retried` is a handoff that completed after a failed
attempt, `fallback` one served by its fallback, `open` a span without an end yet."""
INCLUSIVE = "incl."
"""The label of a loop's or delegation's cost and tokens in its row: everything below it included."""


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
    state: RowState = "ok"
    """How the span ended (its icon in the tree)."""
    offset_ms: float = 0.0
    """When the span started, ms after the trace's first span did (its bar on the trace's time scale)."""
    tokens: str = ""
    """Tokens in / out: a round's own, a loop's or delegation's inclusive (`scope`); "" for others."""
    scope: str = ""
    """`incl.` when `cost` and `tokens` include what the loop delegated (loops, attempts,
    delegations, transfers); "" when they are the span's own (a model round)."""
    breakdown: str = ""
    """The figures behind the row's cost and tokens (own and inclusive of a loop), read on hover."""
    last: bool = True
    """The last child of its parent (the tree's connector line ends at this row)."""


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


@dataclass(slots=True)
class _Facts:
    """What a row says of its span besides where it sits in the tree."""

    kind: RowKind
    label: str
    outcome: str
    state: RowState
    cost: str = outcomes.NONE_SHOWN
    tokens: str = ""
    scope: str = ""
    breakdown: str = ""


_HANDOFF_STATES: dict[str, RowState] = {
    c.STATUS_FAILED: "failed",
    c.STATUS_DENIED: "denied",
    c.STATUS_CUT: "cut",
    c.STATUS_FALLBACK: "fallback",
    "open": "open",
}
"""A delegation's state by its final status (completed: `ok`, or `retried` after a failed attempt)."""


def _loop_state(status: str, error_type: str | None, stop_reason: str | None) -> RowState:
    """The state of a loop, attempt or plain span from its span status, error type and budget cut."""
    if status == "open":
        return "open"
    if stop_reason:
        return "cut"
    if status == "error":
        return "timeout" if error_type == c.ERROR_TIMEOUT else "failed"
    return "ok"


def _usage_text(name: str, usage: Usage) -> str:
    """`own: $0.3750 + 20 unpriced tokens, 1,500 / 150 tokens, 2 rounds` (one part of a row's
    breakdown)."""
    rounds = f", {fmt.count(usage.rounds, 'round')}" if usage.rounds else ""
    return f"{name}: {fmt.usage_cost_full(usage)}, {fmt.token_pair(usage)} tokens{rounds}"


def _loop_facts(view: TraceView, node_at: int) -> _Facts:
    node = view.nodes[node_at]
    outcome: str = c.STATUS_COMPLETED if node.status == "ok" else node.status
    cost = fmt.usage_cost(node.inclusive)
    own = _usage_text("own", node.own)
    return _Facts(
        "loop", node.agent, outcome, _loop_state(node.status, node.error_type, node.stop_reason),
        cost, fmt.token_pair(node.inclusive), INCLUSIVE,
        f"{own} · {_usage_text('inclusive (with its delegations)', node.inclusive)}",
    )  # fmt: skip


def _named(view: TraceView, ref: _Ref) -> _Facts:
    """What the row says of a span the handoff tree names."""
    what, i, j = ref
    if what == "loop":
        return _loop_facts(view, i)
    d = view.delegations[i]
    if what == "attempt":
        attempt = d.attempts[j]
        facts = _loop_facts(view, attempt.node)
        facts.kind, facts.label = "attempt", f"attempt {attempt.number}/{d.attempt_count} · {d.target}"
        facts.outcome = outcomes.attempt_outcome(attempt)
        facts.state = _loop_state(attempt.status, attempt.error_type, attempt.stop_reason)
        return facts
    reason = d.deny_reason or d.stop_reason
    outcome = d.status + (f": {outcomes.reason_name(reason)}" if reason else "")  # final status
    state = _HANDOFF_STATES.get(d.status, "retried" if len(d.attempts) > 1 else "ok")
    cost = fmt.usage_cost(d.cost)
    return _Facts(
        "transfer" if d.kind == "transfer" else "delegation", f"{d.tool} → {d.target}", outcome, state,
        cost, fmt.token_pair(d.cost), INCLUSIVE,
        _usage_text(f"inclusive (its {fmt.count(d.attempt_count, 'attempt')} and below)", d.cost),
    )  # fmt: skip


def _round_tokens(span: SpanRecord) -> str:
    """A round's `in / out` tokens; `unknown` when it ran and no usage was read; "—" when it failed
    before returning any."""
    state, tokens_in, tokens_out = sr.round_usage(span)
    if state == "read":
        return f"{tokens_in:,} / {tokens_out:,}"
    return outcomes.NONE_SHOWN if state == "failed" else fmt.UNKNOWN


def _plain(span: SpanRecord) -> _Facts:
    """What the row says of a span the handoff tree does not name (a round, a tool, another span)."""
    op = sr.operation(span)
    error_type = attr_str(span.attributes, c.ERROR_TYPE)
    state = _loop_state(span.status, error_type, None)
    if sr.is_inference(op):
        cost = sr.round_cost(span)
        model = sr.round_model(span)
        tokens = _round_tokens(span)
        money = fmt.usd(cost) if cost is not None else outcomes.NONE_SHOWN
        label = f"{op} {model}".strip()
        breakdown = f"{model}: {money if cost is not None else 'no recorded cost'}, {tokens} tokens"
        return _Facts("round", label, sr.span_status(span), state, money, tokens, "", breakdown)
    if op == c.OP_EXECUTE_TOOL:
        return _Facts("tool", sr.tool_name(span), sr.span_status(span), state)
    return _Facts("other", span.name, sr.span_status(span), state)


def _is_last(view: TraceView, pos: int) -> bool:
    """True when the span at `pos` is the last child of its parent (or the last top span)."""
    index = view.index
    parent = index.parent[pos]
    siblings = index.children[parent] if parent >= 0 else index.tops
    return not siblings or siblings[-1] == pos


def _row(view: TraceView, refs: dict[str, _Ref], pos: int, depth: int) -> OutlineRow:
    """The tree row of the span at `pos` of the trace's index."""
    index = view.index
    span = index.spans[pos]
    ref = refs.get(span.span_id)
    facts = _named(view, ref) if ref is not None else _plain(span)
    loop_of = view.tree.node_of_span
    node = loop_of[pos] if pos < len(loop_of) else -1
    duration = sr.duration_ms(span)
    if ref is not None and ref[0] == "loop" and view.nodes[ref[1]].segmented:  # the first agent's part
        held = view.nodes[ref[1]].duration_ns
        duration = held / 1e6 if held >= 0 else None
    return OutlineRow(
        span_id=span.span_id, depth=depth, kind=facts.kind, label=facts.label, outcome=facts.outcome,
        duration_ms=duration, cost=facts.cost, agent=view.nodes[node].agent if node >= 0 else "",
        state=facts.state, offset_ms=(span.start_ns - index.spans[0].start_ns) / 1e6, tokens=facts.tokens,
        scope=facts.scope, breakdown=facts.breakdown, last=_is_last(view, pos),
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
    own time and inclusive figures; its id is the segment's (`structure.loop_id`), which
    `TraceView.span` resolves to the loop's span."""
    node = view.nodes[number]
    facts = _loop_facts(view, number)
    return OutlineRow(
        span_id=loop_id(node.span_id, node.segment), depth=depth, kind=facts.kind, label=facts.label,
        outcome=facts.outcome, duration_ms=node.duration_ns / 1e6 if node.duration_ns >= 0 else None,
        cost=facts.cost, agent=node.agent, state=facts.state,
        offset_ms=(node.start_ns - view.index.spans[0].start_ns) / 1e6, tokens=facts.tokens,
        scope=facts.scope, breakdown=facts.breakdown, last=True,
    )  # fmt: skip


def outline(view: TraceView) -> list[OutlineRow]:
    """Every span of the trace as a tree row, parents before children, siblings by start time."""
    return list(iter_outline(view))


def outline_head(view: TraceView, count: int) -> list[OutlineRow]:
    """The first `count` rows of `outline(view)`, computed alone."""
    return list(islice(iter_outline(view), max(count, 0)))


def outline_row(view: TraceView, span_id: str) -> OutlineRow | None:
    """The tree row of one span, or of an agent segment by its `loop_id` (as in `outline(view)`),
    computed alone; None when not in the trace."""
    index = view.index
    pos = index.by_id.get(span_id)
    if pos is None and ":" in span_id:
        for tool_id, number in _segments_after(view).items():
            node = view.nodes[number]
            if loop_id(node.span_id, node.segment) == span_id:
                tool_row = outline_row(view, tool_id)
                return None if tool_row is None else _segment_row(view, number, max(tool_row.depth - 1, 0))
    if pos is None:
        return None
    depth, up = 0, index.parent[pos]
    while up >= 0 and depth < len(index.spans):  # the index breaks cycles; the bound is a guard
        depth, up = depth + 1, index.parent[up]
    return _row(view, _handoff_refs(view), pos, depth)


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
