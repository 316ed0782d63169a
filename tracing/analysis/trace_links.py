"""Runs split across traces: the link index and the traces read together as one run.

Some runtimes start a new trace for each agent (or each message between agents) and join the traces
only by span links. Each such link, from a span of one trace to a span of another, is one row of the
link index (`TraceLink`); every source keeps these rows where it keeps the spans and answers
`TraceSource.trace_links` with one indexed query (rows on either side of the named traces).

A run is a trace and every trace reachable from it through the index, read together (one analysis
over the union of their spans: `readers.links` then finds the handoff from one trace's agent to the
next). Its first trace is the one that started first (ties: the smaller id). In the trace list a
trace linked to a trace that started before it is a continuation, listed under its run's first
trace (`LISTED_RULE`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import NamedTuple

from janux.tracing.analysis.facts import TraceSummary
from janux.tracing.records import SpanRecord


class TraceLink(NamedTuple):
    """One row of the link index: a span link from a span of one trace to a span of another."""

    trace_id: str
    """The trace of the span that carries the link."""
    span_id: str
    """The span that carries the link."""
    linked_trace_id: str
    """The trace the link points into (never `trace_id`)."""
    linked_span_id: str
    """The span the link points at."""


LinkLookup = Callable[[list[str]], list[TraceLink]]
"""The index rows that have one of the given trace ids on either side (`TraceSource.trace_links`)."""

MAX_RUN_TRACES = 200
"""Traces read as one run at most: a fan-in of links (a batch consumer linking to every producer)
must not make one page read the whole store. A larger run is cut there (`Run.cut`)."""

LISTED_RULE = "not linked to a trace that started before it"
"""Which traces the trace list shows (the others are continuations, counted on their run's row)."""


class Run(NamedTuple):
    """The traces of one run, as read from the link index."""

    trace_ids: tuple[str, ...]
    """Every trace of the run, the asked one first, then in the order they were reached."""
    links: tuple[TraceLink, ...]
    """The index rows between them."""
    cut: bool
    """True when the run has more than `MAX_RUN_TRACES` traces (only that many are read)."""


def cross_trace_links(spans: Iterable[SpanRecord]) -> list[TraceLink]:
    """The link index rows of `spans`: one per span link into another trace (each once)."""
    found: dict[TraceLink, None] = {}
    for span in spans:
        for link in span.links:
            if link.trace_id and link.span_id and link.trace_id != span.trace_id:
                found[TraceLink(span.trace_id, span.span_id, link.trace_id, link.span_id)] = None
    return list(found)


def linked_runs(trace_ids: list[str], lookup: LinkLookup, most: int = MAX_RUN_TRACES) -> dict[str, Run]:
    """The run of each of `trace_ids`: the traces reachable through the index, walked together (one
    lookup per step away for all of them)."""
    reached = {trace_id: {trace_id: None} for trace_id in trace_ids}
    links: dict[str, dict[TraceLink, None]] = {trace_id: {} for trace_id in trace_ids}
    cut = dict.fromkeys(trace_ids, False)
    frontier = {trace_id: [trace_id] for trace_id in trace_ids}
    while any(frontier.values()):
        rows = lookup(sorted({t for wave in frontier.values() for t in wave}))
        by_trace: dict[str, list[TraceLink]] = {}
        for row in rows:
            by_trace.setdefault(row.trace_id, []).append(row)
            by_trace.setdefault(row.linked_trace_id, []).append(row)
        for trace_id, wave in frontier.items():
            seen, step = reached[trace_id], []
            for current in wave:
                for row in by_trace.get(current, ()):
                    links[trace_id][row] = None
                    other = row.linked_trace_id if row.trace_id == current else row.trace_id
                    if other in seen:
                        continue
                    if len(seen) >= most:
                        cut[trace_id] = True
                        continue
                    seen[other] = None
                    step.append(other)
            frontier[trace_id] = step
    return {t: Run(tuple(reached[t]), tuple(links[t]), cut[t]) for t in trace_ids}


def linked_run(trace_id: str, lookup: LinkLookup, most: int = MAX_RUN_TRACES) -> Run:
    """The run of `trace_id` (`linked_runs`)."""
    return linked_runs([trace_id], lookup, most)[trace_id]


def linked_counts(trace_ids: list[str], lookup: LinkLookup, most: int = MAX_RUN_TRACES) -> dict[str, int]:
    """How many other traces each of `trace_ids` is read with (its run's size less one)."""
    return {t: len(run.trace_ids) - 1 for t, run in linked_runs(trace_ids, lookup, most).items()}


def is_continuation(trace_id: str, starts: Mapping[str, int], links: Iterable[TraceLink]) -> bool:
    """True when `trace_id` is linked (either way) to a trace that started before it (`starts`:
    start of each trace known; ties go to the smaller id): it is listed under its run's first trace."""
    own = (starts[trace_id], trace_id)
    for row in links:
        if trace_id not in (row.trace_id, row.linked_trace_id):
            continue
        other = row.linked_trace_id if row.trace_id == trace_id else row.trace_id
        if other in starts and (starts[other], other) < own:
            return True
    return False


def with_linked_counts(rows: list[TraceSummary], lookup: LinkLookup) -> list[TraceSummary]:
    """`rows` with `linked_traces` filled from the index (one lookup per step away, for the page)."""
    if not rows:
        return rows
    counts = linked_counts([row.trace_id for row in rows], lookup)
    return [replace(row, linked_traces=counts[row.trace_id]) if counts[row.trace_id] else row for row in rows]


def run_spans(
    trace_ids: list[str], lookup: LinkLookup, read: Callable[[list[str]], Mapping[str, list[SpanRecord]]]
) -> dict[str, list[SpanRecord]]:
    """The spans of each trace's run (`linked_run`), keyed by the asked trace: the traces of every
    run are read in one `read` call (`TraceSource.get_traces`). A trace joined by no link is read
    alone, as before; an unknown id gives []."""
    asked = list(dict.fromkeys(t.strip().lower() for t in trace_ids))
    runs = {trace_id: run.trace_ids for trace_id, run in linked_runs(asked, lookup).items()}
    spans = read(list(dict.fromkeys(t for run in runs.values() for t in run)))
    return {trace_id: [span for t in run for span in spans.get(t, [])] for trace_id, run in runs.items()}


def continuation_text(spans: Iterable[SpanRecord], asked: str) -> tuple[list[str], list[str]]:
    """(traces the run was continued from, traces it continues in) as seen from trace `asked`: the
    run's other traces (among `spans`, joined to it by links) that started before it, and after it,
    each in start order. What the Trace page says ("continued from ... / continues in ...")."""
    starts: dict[str, int] = {}
    for span in spans:
        starts[span.trace_id] = min(starts.get(span.trace_id, span.start_ns), span.start_ns)
    if asked not in starts:
        return [], []
    own = (starts[asked], asked)
    ordered = sorted((start, trace_id) for trace_id, start in starts.items() if trace_id != asked)
    return [t for start, t in ordered if (start, t) < own], [t for start, t in ordered if (start, t) > own]
