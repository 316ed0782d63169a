"""A `TraceSource` over spans held in memory: uploaded files, JSON-lines files, tests.

Same semantics as the embedded store's summaries: delegations, attempts, transfers, failed
handoffs and coverage are the trace's facts (`janux.tracing.analysis.readers.structure`, read once for every
convention), so pages behave the same on either. Duplicates are stored once and counted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Literal

from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, MapUsage
from janux.tracing.analysis.agentmap.from_spans import agent_map_of_traces
from janux.tracing.analysis.readers.structure import trace_facts
from janux.tracing.analysis.summary import failed_edge_spans, matches, newest_spans, summarize
from janux.tracing.analysis.usage_aggregate import aggregate_usage
from janux.tracing.records import SpanRecord
from janux.tracing.sources.protocol import (
    IngestStats,
    TraceFilter,
    TraceSummary,
    UsageAggregate,
    UsageDimension,
)
from janux.tracing.sources.store.timeline import model_timeline_of

MAX_RECENT_ERRORS = 20
"""How many rejection messages `ingest_stats` keeps."""


class MemoryTraceSource:
    """A plain `TraceSource` over a list of `SpanRecord`s (thread-safe; `add` for live tails)."""

    def __init__(self, spans: Iterable[SpanRecord] = (), *, rejected: int = 0, errors: Sequence[str] = ()):
        self._lock = threading.Lock()
        self._traces: dict[str, dict[str, SpanRecord]] = {}
        self._summaries: dict[str, TraceSummary] = {}
        self._stats = IngestStats()
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
                self._summaries.pop(span.trace_id, None)
                added += 1
            self._stats.spans += added
            self._stats.traces = len(self._traces)
            self._stats.rejected += rejected
            self._stats.recent_errors = (list(reversed(errors)) + self._stats.recent_errors)[
                :MAX_RECENT_ERRORS
            ]
        return added

    def _all_summaries(self) -> list[TraceSummary]:
        with self._lock:
            for trace_id, spans in self._traces.items():
                if trace_id not in self._summaries:
                    self._summaries[trace_id] = summarize(trace_id, list(spans.values()))
            return list(self._summaries.values())

    def _matching(self, flt: TraceFilter) -> list[TraceSummary]:
        rows = [s for s in self._all_summaries() if matches(s, flt)]
        rows.sort(key=lambda s: (-s.start_ns, s.trace_id))
        return rows

    def list_traces(self, flt: TraceFilter, limit: int = 50, offset: int = 0) -> list[TraceSummary]:
        """Trace summaries matching `flt`, newest first."""
        return self._matching(flt)[max(0, offset) : max(0, offset) + max(0, limit)]

    def count_traces(self, flt: TraceFilter) -> int:
        """How many traces match `flt`."""
        return len(self._matching(flt))

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
        for summary in self._matching(flt):
            if summary.failed_handoffs == 0:
                continue
            with self._lock:
                trace = self._traces.get(summary.trace_id, {})
                spans = list(trace.values())
            found.extend(failed_edge_spans(trace_facts(spans), trace))
        return newest_spans(found, limit)

    def distinct_values(self, what: Literal["service", "root_agent", "conversation"]) -> list[str]:
        """Sorted distinct non-empty values of one filter field."""
        values: set[str | None]
        rows = self._all_summaries()
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
        traces = []
        for summary in self._matching(flt):
            with self._lock:
                traces.append(list(self._traces.get(summary.trace_id, {}).values()))
        return aggregate_usage(dimension, traces, limit)

    def agent_map(self, flt: TraceFilter, bucket_ns: int | None = None) -> AgentMap:
        """Agents and the delegations between them over the traces matching `flt`."""
        traces = []
        for summary in self._matching(flt):
            with self._lock:
                traces.append((summary.trace_id, list(self._traces.get(summary.trace_id, {}).values())))
        return agent_map_of_traces(traces, bucket_ns)

    def model_timeline(self, flt: TraceFilter, bucket_ns: int) -> list[tuple[int, str, MapUsage]]:
        """Usage per (bucket of trace start, model) over the traces matching `flt`."""
        traces = []
        for summary in self._matching(flt):
            with self._lock:
                traces.append(list(self._traces.get(summary.trace_id, {}).values()))
        return model_timeline_of(traces, max(1, bucket_ns))

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
