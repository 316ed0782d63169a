"""The spans between link rows of a trace with Janux accounting: a user's own spans around a run
(a tool function that opens a span and runs another agent inside it), plain tool spans.

A source hands the builder its agent and delegating tool rows; when a row's parent is neither, the
builder must walk through spans it was not given. `resolve_parents` asks the source for those
spans' parents, one level per round, until every chain ends at a link row, a root or a missing
span. Traces without Janux accounting need none of this: their rows are resolved from the whole
trace (`foreign_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from janux.tracing.analysis.agentmap.classify import LinkRow
from janux.tracing.analysis.agentmap.loops import MAX_WALK, TraceLinks

ParentLookup = Callable[[list[tuple[str, str]]], list[tuple[str, str, str, LinkRow | None]]]
"""Given (trace id, span id) keys, (trace id, span id, parent span id, link row) of those stored;
the link row is that of a tool span the source left out of its first read (else None)."""


def _unresolved(links: TraceLinks, known: set[str]) -> Iterator[str]:
    """Span ids the builder would walk through but cannot see yet."""
    parents = links.parents
    for span_id in (*(row.parent_span_id for row in links.rows), *links.inference, *parents.values()):
        if span_id and span_id not in known and span_id not in parents:
            yield span_id


def _needs_parents(links: TraceLinks) -> set[str] | None:
    """The span ids of a trace's rows when some span on its paths is not among them, else None
    (the common case: every row's parent is a row, there is no inference sum and no parent link)."""
    if links.resolved:
        return None
    known = {row.span_id for row in links.rows}
    if links.inference or links.parents:
        return known
    for row in links.rows:
        parent = row.parent_span_id
        if parent and parent not in known:
            return known
    return None


def resolve_parents(by_trace: dict[str, TraceLinks], lookup: ParentLookup) -> None:
    """Fill each trace's `parents` with the spans on the paths between its rows (a span the source
    does not have stays unresolved: the builder treats it as missing, like the Trace page)."""
    known: dict[str, set[str]] = {}
    for trace_id, trace in by_trace.items():
        ids = _needs_parents(trace)
        if ids is not None:
            known[trace_id] = ids
    by_trace = {trace_id: by_trace[trace_id] for trace_id in known}
    missing: set[tuple[str, str]] = set()
    for _ in range(MAX_WALK):
        pending = sorted(
            {(t, s) for t, links in by_trace.items() for s in _unresolved(links, known[t])} - missing
        )
        if not pending:
            return
        found = set()
        for trace_id, span_id, parent, row in lookup(pending):
            links = by_trace.get(trace_id)
            if links is None:
                continue
            if row is not None:
                links.rows.append(row)  # type: ignore[attr-defined]
                known[trace_id].add(span_id)
            else:
                links.parents[span_id] = parent
            found.add((trace_id, span_id))
        missing.update(key for key in pending if key not in found)
