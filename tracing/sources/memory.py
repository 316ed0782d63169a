"""A `TraceSource` over spans held in memory: uploaded files, JSON-lines files, tests.

Each trace is analysed once per span count (`janux.tracing.analysis.trace_facts.analyse`): its
trace-list row, agent-map loops and delegations, usage groups and failed handoffs are then read
from those facts by every query, so pages behave as on the embedded store and nothing is derived
twice. Duplicates are stored once and counted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Literal

from janux.tracing.analysis.agentmap.build import aggregate
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, MapKey, MapRefs
from janux.tracing.analysis.agentmap.sums import newest_refs
from janux.tracing.analysis.summary import matches, newest_spans
from janux.tracing.analysis.trace_facts import TraceFacts, analyse
from janux.tracing.analysis.trace_find import FoundTraces, TraceQuery, spans_have_attribute
from janux.tracing.analysis.trace_links import (
    TraceLink,
    cross_trace_links,
    is_continuation,
    with_linked_counts,
)
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.analysis.usage_aggregate import merge_groups
from janux.tracing.analysis.usage_rows import check_dimension, finish
from janux.tracing.records import SpanRecord
from janux.tracing.sources.find_cache import FindFactsCache
from janux.tracing.sources.find_scan import scan_find
from janux.tracing.sources.protocol import (
    IngestStats,
    TraceFilter,
    TraceSummary,
    UsageAggregate,
    UsageDimension,
)
from janux.tracing.sources.store.model_timeline import finish_timeline

MAX_RECENT_ERRORS = 20
"""How many rejection messages `ingest_stats` keeps."""


class MemoryTraceSource:
    """A plain `TraceSource` over a list of `SpanRecord`s (thread-safe; `add` for live tails)."""

    def __init__(self, spans: Iterable[SpanRecord] = (), *, rejected: int = 0, errors: Sequence[str] = ()):
        self._lock = threading.Lock()
        self._traces: dict[str, dict[str, SpanRecord]] = {}
        self._facts: dict[str, TraceFacts] = {}
        self._links: dict[str, dict[TraceLink, None]] = {}
        """The link index: its rows by the trace on either side."""
        self._stats = IngestStats()
        self._find = FindFactsCache()
        self.analysed = 0
        """Traces analysed so far (each once per span count)."""
        self.add(spans, rejected=rejected, errors=errors)

    def add(self, spans: Iterable[SpanRecord], *, rejected: int = 0, errors: Sequence[str] = ()) -> int:
        """Store spans (each (trace, span) id once) and count refused ones; returns spans added."""
        added = 0
        with self._lock:
            for span in spans:
                trace = self._traces.setdefault(span.trace_id, {})
                if span.span_id in trace:
                    self._stats.duplicates += 1
                    continue
                trace[span.span_id] = span
                added += 1
                if span.links:
                    for row in cross_trace_links((span,)):
                        self._links.setdefault(row.trace_id, {})[row] = None
                        self._links.setdefault(row.linked_trace_id, {})[row] = None
            self._stats.spans += added
            self._stats.traces = len(self._traces)
            self._stats.rejected += rejected
            self._stats.recent_errors = (list(reversed(errors)) + self._stats.recent_errors)[
                :MAX_RECENT_ERRORS
            ]
        return added

    def _all_facts(self) -> list[TraceFacts]:
        """Every trace's facts, analysing only the traces that are new or grew since last time."""
        with self._lock:
            for trace_id, spans in self._traces.items():
                known = self._facts.get(trace_id)
                if known is None or known.span_count != len(spans):
                    self._facts[trace_id] = analyse(trace_id, list(spans.values()))
                    self.analysed += 1
            return list(self._facts.values())

    def _matching(self, flt: TraceFilter) -> list[TraceFacts]:
        rows = [f for f in self._all_facts() if matches(f.summary, flt)]
        rows.sort(key=lambda f: (-f.summary.start_ns, f.trace_id))
        return rows

    def _listed(self, flt: TraceFilter) -> list[TraceFacts]:
        """`_matching` without the continuations of runs (`trace_links.LISTED_RULE`), unless the
        filter names a trace id."""
        rows = self._matching(flt)
        if flt.trace_id is not None:
            return rows
        starts = {f.trace_id: f.summary.start_ns for f in self._all_facts()}
        with self._lock:
            linked = {trace_id: list(found) for trace_id, found in self._links.items()}
        return [f for f in rows if not is_continuation(f.trace_id, starts, linked.get(f.trace_id, ()))]

    def list_traces(self, flt: TraceFilter, limit: int = 50, offset: int = 0) -> list[TraceSummary]:
        """Trace summaries matching `flt`, newest first, each run once with its linked count."""
        page = self._listed(flt)[max(0, offset) : max(0, offset) + max(0, limit)]
        return with_linked_counts([f.summary for f in page], self.trace_links)

    def count_traces(self, flt: TraceFilter) -> int:
        """How many traces match `flt` (each run once)."""
        return len(self._listed(flt))

    def trace_links(self, trace_ids: list[str]) -> list[TraceLink]:
        """The link index rows with one of `trace_ids` on either side."""
        with self._lock:
            found = {row: None for t in trace_ids for row in self._links.get(t.strip().lower(), {})}
        return list(found)

    def find_traces(
        self, flt: TraceFilter, query: TraceQuery, limit: int = 50, offset: int = 0
    ) -> FoundTraces:
        """The traces matching `flt` with what `query` asks for inside, over all of them: one page
        and the count (`find_scan.scan_find` over the kept facts and the spans in memory)."""
        return scan_find(
            (f.summary for f in self._matching(flt)), query, max(0, limit), max(0, offset),
            cache=self._find, read=self.get_traces, has_attribute=self._with_attribute,
        )  # fmt: skip

    def _with_attribute(self, trace_ids: list[str], attribute: str) -> set[str]:
        return {t for t in trace_ids if spans_have_attribute(self.get_trace(t), attribute)}

    def get_trace(self, trace_id: str) -> list[SpanRecord]:
        """All spans of one trace (each span once), in start order."""
        with self._lock:
            spans = list(self._traces.get(trace_id.strip().lower(), {}).values())
        spans.sort(key=lambda s: (s.start_ns, s.span_id))
        return spans

    def get_traces(self, trace_ids: list[str]) -> dict[str, list[SpanRecord]]:
        """All spans of several traces, keyed by trace id."""
        return {t.strip().lower(): self.get_trace(t) for t in trace_ids}

    def failed_handoff_spans(self, flt: TraceFilter, limit: int = 500) -> list[SpanRecord]:
        """The tool span (else the last attempt's agent span) of every failed delegation or
        transfer, newest first."""
        found: list[SpanRecord] = []
        for facts in self._matching(flt):
            with self._lock:
                trace = self._traces.get(facts.trace_id, {})
                found.extend(trace[span_id] for span_id in facts.failed_span_ids if span_id in trace)
        return newest_spans(found, limit)

    def distinct_values(self, what: Literal["service", "root_agent", "conversation"]) -> list[str]:
        """Sorted distinct non-empty values of one filter field."""
        values: set[str | None]
        rows = [f.summary for f in self._all_facts()]
        if what == "service":
            values = {s.service_name for s in rows}
        elif what == "root_agent":
            values = {s.root_agent for s in rows}
        elif what == "conversation":
            values = {s.conversation_id for s in rows}
        else:
            return []
        return sorted(v for v in values if v)

    def usage_by(self, dimension: UsageDimension, flt: TraceFilter, limit: int = 100) -> list[UsageAggregate]:
        """Tokens and cost by agent, delegation tool, model or conversation over the traces matching
        `flt` (see `janux.tracing.sources.protocol.UsageAggregate`), most expensive first."""
        wanted = check_dimension(dimension)
        rows = (row for facts in self._matching(flt) for dim, row in facts.usage if dim == wanted)
        return finish(merge_groups(rows), limit)

    def agent_map(self, flt: TraceFilter, bucket_ns: int | None = None) -> AgentMap:
        """Agents and the delegations between them over the traces matching `flt`."""
        return aggregate(((f.trace_id, (f.loops, f.delegations)) for f in self._matching(flt)), bucket_ns)

    def map_refs(self, flt: TraceFilter, key: MapKey) -> MapRefs:
        """The newest traces (and failures) of one node or edge of `agent_map(flt)`."""
        return newest_refs(((f.trace_id, (f.loops, f.delegations)) for f in self._matching(flt)), key)

    def model_timeline(self, flt: TraceFilter, bucket_ns: int) -> list[tuple[int, str, Usage]]:
        """Usage per (bucket of trace start, model) over the traces matching `flt`."""
        bucket_ns = max(1, bucket_ns)
        rows = []
        for facts in self._matching(flt):
            bucket = facts.summary.start_ns // bucket_ns * bucket_ns
            for dim, (key, _count, _failed, tokens_in, tokens_out, cost, unpriced, _unread) in facts.usage:
                if dim == "model":
                    rows.append((bucket, key, tokens_in or 0, tokens_out or 0, cost, unpriced or 0))
        return finish_timeline(_summed(rows))

    def ingest_stats(self) -> IngestStats:
        """Counts of what was stored and refused."""
        with self._lock:
            stats = self._stats
            return IngestStats(
                spans=stats.spans,
                traces=stats.traces,
                duplicates=stats.duplicates,
                rejected=stats.rejected,
                recent_errors=list(stats.recent_errors),
            )


def _summed(
    rows: list[tuple[int, str, int, int, float | None, int]],
) -> list[tuple[int, str, int, int, float | None, int]]:
    """(bucket, model) rows added up per bucket and model, costs in the order given."""
    sums: dict[tuple[int, str], Usage] = {}
    for bucket, model, tokens_in, tokens_out, cost, unpriced in rows:
        sums.setdefault((bucket, model), Usage()).add(Usage(tokens_in, tokens_out, cost, unpriced))
    return [(b, m, u.input_tokens, u.output_tokens, u.cost, u.unpriced_tokens) for (b, m), u in sums.items()]
