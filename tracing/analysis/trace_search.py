"""The search inside one trace ("Search this trace" on the Trace page) and the narrowed trees built
on it: which spans a text finds, which spans failed, and either kept with their ancestors so the
tree keeps its shape.

A person looks for what they read on the page or in a log: a span or agent name, an attribute
value, a status message (`upstream returned 503`), an exception's type or message, a handoff
event's attributes, and captured messages or tool arguments. All of it is searched, in any case.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from janux.tracing.analysis import outcomes
from janux.tracing.analysis import spanread as sr
from janux.tracing.analysis.trace_outline import OutlineRow
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.records import Attributes, SpanRecord


def _pairs(attributes: Attributes) -> Iterator[str]:
    """`key=value` of each attribute (a value alone matches too: it is part of the pair)."""
    return (f"{key}={value}" for key, value in attributes.items())


def span_texts(span: SpanRecord) -> Iterator[str]:
    """Every text of one span a search looks in: its name, status message, service, attributes
    (captured content included, when it was captured), and each event's name and attributes
    (exception type and message, HANDOFF_START/END, message events)."""
    yield span.name
    yield span.span_id
    yield span.status_message
    yield span.service_name
    yield from _pairs(span.attributes)
    for event in span.events:
        yield event.name
        yield from _pairs(event.attributes)


def matches(view: TraceView, row: OutlineRow, text: str) -> bool:
    """True when `text` (any case, spaces around it ignored) is in the row's label, agent or outcome,
    or in any text of its span (`span_texts`); an empty text matches every row."""
    needle = text.strip().lower()
    if not needle:
        return True
    if any(needle in item.lower() for item in (row.label, row.agent, row.outcome)):
        return True
    span = view.span(row.span_id)
    return span is not None and any(needle in item.lower() for item in span_texts(span))


def failed_span_ids(view: TraceView) -> set[str]:
    """The spans that failed: every span that ended with status ERROR (a failed round, tool, loop or
    attempt), the tool span of each failed handoff (failed, fallback, denied or cut: it may end OK)
    and every loop a budget line cut."""
    failed = {s.span_id for s in view.index.spans if sr.is_error(s)}
    handoffs = (d for d in view.delegations if outcomes.is_failed_handoff(d))
    failed.update(d.tool_span_id for d in handoffs if d.tool_span_id)
    failed.update(n.span_id for n in view.nodes if n.span_id and n.stop_reason)
    return failed


def with_ancestors(view: TraceView, rows: Iterable[OutlineRow], wanted: set[str]) -> list[OutlineRow]:
    """The rows of `wanted` spans and of every span above them, in the order of `rows` (the tree
    narrowed to them keeps its shape: each kept row still hangs below its parent)."""
    index = view.index
    kept: set[str] = set()
    for span_id in wanted:
        pos = index.by_id.get(span_id)
        while pos is not None and pos >= 0 and index.spans[pos].span_id not in kept:
            kept.add(index.spans[pos].span_id)
            pos = index.parent[pos]
    return relinked([r for r in rows if r.span_id in kept])


def relinked(rows: list[OutlineRow]) -> list[OutlineRow]:
    """`rows` (a tree narrowed to some spans and their ancestors, in tree order) with each row's
    `last` saying whether it is the last child of its parent among the rows kept (copies where it
    changes: the rows given may be shared)."""
    out = list(rows)
    later: set[int] = set()  # depths with a later sibling still to come, read bottom up
    for at in range(len(out) - 1, -1, -1):
        row = out[at]
        last = row.depth not in later
        later = {depth for depth in later if depth < row.depth} | {row.depth}
        if row.last != last:
            out[at] = replace(row, last=last)
    return out
