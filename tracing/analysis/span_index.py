"""Index the raw spans of one trace: each span once, parent links checked, cycles broken.

Linear in the number of spans (plus one sort by start time). Damage is recorded in
`TraceIssues`, never repaired silently: orphans keep their missing parent id, skewed spans keep
their timestamps, cycles are cut at one link which is reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter

from janux.tracing.records import SpanRecord


@dataclass(slots=True)
class TraceIssues:
    """Damage found in the raw spans; each is counted and shown, never silently fixed."""

    duplicates: int = 0
    """Spans received more than once (kept once)."""
    orphans: list[str] = field(default_factory=list)
    """Span ids whose parent is missing (shown under the "incomplete trace" marker)."""
    cycles: list[str] = field(default_factory=list)
    """Span ids whose parent link was cut to break a cycle."""
    clock_skew: list[str] = field(default_factory=list)
    """Span ids that start before their parent (timestamps left as recorded)."""
    open_spans: list[str] = field(default_factory=list)
    """Span ids with no end yet (negative duration)."""
    open_handoffs: list[str] = field(default_factory=list)
    """Tool span ids with HANDOFF_START but no HANDOFF_END."""
    unpaired_ends: list[str] = field(default_factory=list)
    """Tool span ids with HANDOFF_END but no HANDOFF_START."""
    foreign_trace_ids: int = 0
    """Spans whose trace id differs from the trace's (kept, counted)."""

    @property
    def incomplete(self) -> bool:
        """True when spans are missing (orphans, cycles, or unfinished spans)."""
        return bool(self.orphans or self.cycles or self.open_spans or self.open_handoffs)

    def count(self) -> int:
        """Total number of problems found."""
        return (
            self.duplicates
            + len(self.orphans)
            + len(self.cycles)
            + len(self.clock_skew)
            + len(self.open_spans)
            + len(self.open_handoffs)
            + len(self.unpaired_ends)
            + self.foreign_trace_ids
        )


NO_PARENT = -1
"""Parent index of a root, an orphan or a span whose parent link was cut."""

_START_ORDER = attrgetter("start_ns", "span_id")


@dataclass(slots=True)
class SpanIndex:
    """The spans of one trace with their (repaired) parent structure."""

    spans: list[SpanRecord]
    """Each span once, sorted by start time."""
    by_id: dict[str, int]
    """Span id -> position in `spans`."""
    parent: list[int]
    """Parent position per span, NO_PARENT at roots, orphans and cut links."""
    children: list[list[int]]
    """Child positions per span, in start order."""
    order: list[int]
    """Every position, parents before children (depth-first, start order)."""
    tops: list[int]
    """Spans without a usable parent: roots first, then orphans and cut links."""
    top_of: list[int]
    """Position of the top span each span hangs below."""
    incomplete: list[bool]
    """Per span: True when it hangs below an orphan or a cut link."""
    issues: TraceIssues = field(default_factory=TraceIssues)
    """What was wrong with the raw spans."""
    trace_id: str = ""
    """The trace id (of the first span)."""
    linked_trace_ids: tuple[str, ...] = ()
    """The other traces read with this one as one run (joined to it by span links among the spans
    given, see `trace_links`), in start order; empty for a trace read alone."""


def _dedupe(spans: Iterable[SpanRecord], issues: TraceIssues) -> list[SpanRecord]:
    """Each span id once: keep the first copy, unless a later copy has an end and it has not."""
    kept: dict[str, SpanRecord] = {}
    for span in spans:
        previous = kept.get(span.span_id)
        if previous is None:
            kept[span.span_id] = span
            continue
        issues.duplicates += 1
        if previous.duration_ns < 0 <= span.duration_ns:
            kept[span.span_id] = span
    return list(kept.values())


def _break_cycles(spans: list[SpanRecord], parent: list[int], issues: TraceIssues) -> None:
    """Cut one parent link per cycle (at the cycle's earliest span), in linear time."""
    state = [0] * len(spans)  # 0 unseen, 1 on the current walk, 2 resolved
    for first in range(len(spans)):
        if state[first]:
            continue
        walk: list[int] = []
        node = first
        while node != NO_PARENT and state[node] == 0:
            state[node] = 1
            walk.append(node)
            node = parent[node]
        if node != NO_PARENT and state[node] == 1:
            cycle = walk[walk.index(node) :]
            cut = min(cycle, key=lambda i: (spans[i].start_ns, spans[i].span_id))
            parent[cut] = NO_PARENT
            issues.cycles.append(spans[cut].span_id)
        for visited in walk:
            state[visited] = 2


def _link_parents(spans: list[SpanRecord], by_id: dict[str, int], issues: TraceIssues) -> list[int]:
    """Parent position per span; missing parents are recorded as orphans."""
    parent = [NO_PARENT] * len(spans)
    for i, span in enumerate(spans):
        pid = span.parent_span_id
        if not pid:
            continue
        found = by_id.get(pid)
        if found is None or found == i:
            # A span naming itself as parent is a one-span cycle; a missing parent an orphan.
            (issues.cycles if found == i else issues.orphans).append(span.span_id)
            continue
        parent[i] = found
    return parent


def _walk(index: SpanIndex) -> None:
    """Fill `order`, `top_of`, `incomplete` and the skew list in one depth-first pass."""
    spans, children = index.spans, index.children
    real_roots = {i for i in index.tops if not spans[i].parent_span_id}
    for top in index.tops:
        broken = top not in real_roots
        stack = [top]
        while stack:
            node = stack.pop()
            index.order.append(node)
            index.top_of[node] = top
            index.incomplete[node] = broken
            start = spans[node].start_ns
            kids = children[node]
            for kid in kids:
                if spans[kid].start_ns < start:
                    index.issues.clock_skew.append(spans[kid].span_id)
            stack.extend(reversed(kids))


def _joined_traces(spans: list[SpanRecord], trace_id: str) -> set[str]:
    """`trace_id` and the traces among `spans` joined to it by span links (either way): a run read
    across traces. Spans of any other trace id are foreign to the trace."""
    present = {span.trace_id for span in spans}
    if len(present) == 1:
        return present
    partners: dict[str, set[str]] = {}
    for span in spans:
        for link in span.links:
            if link.trace_id != span.trace_id and link.trace_id in present:
                partners.setdefault(span.trace_id, set()).add(link.trace_id)
                partners.setdefault(link.trace_id, set()).add(span.trace_id)
    joined, todo = {trace_id}, [trace_id]
    while todo:
        for other in partners.get(todo.pop(), ()):
            if other not in joined:
                joined.add(other)
                todo.append(other)
    return joined


def build_index(spans: Iterable[SpanRecord]) -> SpanIndex:
    """Index one trace's spans (any order, duplicates allowed)."""
    issues = TraceIssues()
    unique = _dedupe(spans, issues)
    unique.sort(key=_START_ORDER)
    by_id = {span.span_id: i for i, span in enumerate(unique)}
    parent = _link_parents(unique, by_id, issues)
    _break_cycles(unique, parent, issues)
    children: list[list[int]] = [[] for _ in unique]
    roots: list[int] = []
    broken: list[int] = []
    for i, p in enumerate(parent):
        if p != NO_PARENT:
            children[p].append(i)
        elif unique[i].parent_span_id:
            broken.append(i)
        else:
            roots.append(i)
    trace_id = unique[0].trace_id if unique else ""
    joined = _joined_traces(unique, trace_id)
    others = joined - {trace_id}
    issues.foreign_trace_ids = sum(1 for s in unique if s.trace_id not in joined)
    issues.open_spans = [s.span_id for s in unique if s.duration_ns < 0]
    index = SpanIndex(
        spans=unique,
        by_id=by_id,
        parent=parent,
        children=children,
        order=[],
        tops=roots + broken,
        top_of=[NO_PARENT] * len(unique),
        incomplete=[False] * len(unique),
        issues=issues,
        trace_id=trace_id,
        linked_trace_ids=tuple(t for t in dict.fromkeys(span.trace_id for span in unique) if t in others),
    )
    _walk(index)
    return index
