"""ClickHouse: the traces without Janux accounting that match a filter, read whole.

Such a trace's delegations, attempts, failed handoffs, transfers and own usage come from its whole
structure (`janux.tracing.analysis.readers.structure`), which SQL cannot sum span by span. So SQL only names
the candidates, on what does not depend on reading them (time range, service, conversation, trace
id prefix), with their span counts; each candidate is read whole, in chunks, summarized with
`summaries.summarize` and kept or dropped by `summaries.matches`: the memory source's rule, so
every filter is exact. A trace's summary is kept per span count (stored spans never change: a
trace that grew is read again), so a page's list and count read each trace once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

from janux.tracing.analysis.summary import matches, summarize
from janux.tracing.records import SpanRecord
from janux.tracing.sources.protocol import TraceFilter, TraceSummary

TRACES_PER_READ = 200
"""Traces fetched per query when they are read whole."""
MAX_KEPT = 100_000
"""Summaries kept between calls; beyond this the oldest are dropped (and read again if needed)."""

Candidates = Callable[[TraceFilter], dict[str, int]]
"""Trace id -> distinct span count of every trace without Janux accounting the filter may match."""
ReadTraces = Callable[[list[str]], dict[str, list[SpanRecord]]]
"""All spans of several traces (each span once)."""


def reading_independent(flt: TraceFilter) -> TraceFilter:
    """The part of `flt` SQL can decide without reading a trace's structure."""
    return TraceFilter(
        start_ns=flt.start_ns, end_ns=flt.end_ns, service=flt.service,
        conversation_id=flt.conversation_id, trace_id=flt.trace_id,
    )  # fmt: skip


class ForeignTraces:
    """Summaries of the traces without Janux accounting, and their spans, for one ClickHouse table."""

    def __init__(self, candidates: Candidates, read: ReadTraces, max_kept: int = MAX_KEPT) -> None:
        self._candidates = candidates
        self._read = read
        self._kept: dict[str, tuple[int, TraceSummary]] = {}
        self._lock = threading.Lock()
        self._max = max_kept

    def matching(self, flt: TraceFilter) -> list[TraceSummary]:
        """Summaries of the traces without Janux accounting matching `flt`, newest first."""
        if flt.min_cost is not None:
            return []  # such a trace has no bill: its cost is unknown, never at least a minimum
        versions = self._candidates(reading_independent(flt))
        with self._lock:
            known = {t: entry[1] for t, entry in self._kept.items() if versions.get(t) == entry[0]}
        stale = [t for t in versions if t not in known]
        for spans in self.read_whole(stale):
            trace_id = spans[0].trace_id
            known[trace_id] = summarize(trace_id, spans)
            self._keep(trace_id, len(spans), known[trace_id])
        found = [summary for t, summary in known.items() if t in versions and matches(summary, flt)]
        found.sort(key=lambda s: (-s.start_ns, s.trace_id))
        return found

    def _keep(self, trace_id: str, span_count: int, summary: TraceSummary) -> None:
        with self._lock:
            self._kept.pop(trace_id, None)
            self._kept[trace_id] = (span_count, summary)
            while len(self._kept) > self._max:
                self._kept.pop(next(iter(self._kept)))

    def read_whole(self, trace_ids: Sequence[str]) -> Iterator[list[SpanRecord]]:
        """The spans of each named trace that has any, `TRACES_PER_READ` traces per query."""
        for start in range(0, len(trace_ids), TRACES_PER_READ):
            chunk = self._read(list(trace_ids[start : start + TRACES_PER_READ]))
            yield from (spans for spans in chunk.values() if spans)
