"""A `TraceSource` over spans held in memory: uploaded files, JSON-lines files, tests.

Same semantics as the embedded store's summaries: delegations, attempts, transfers, failed
handoffs and coverage are the trace's facts (`janux.tracing.foreign.facts`, read once for every
convention), so pages behave the same on either. Duplicates are stored once and counted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Literal

from janux.tracing import conventions as c
from janux.tracing.foreign.facts import TraceFacts, trace_facts
from janux.tracing.records import STATUS_ERROR, SpanRecord, attr_float, attr_int, attr_str
from janux.tracing.sources.agentmap.model import AgentMap, MapUsage
from janux.tracing.sources.agentmap.spans import agent_map_of_traces
from janux.tracing.sources.aggregate import aggregate_usage, turn_sums
from janux.tracing.sources.protocol import (
    IngestStats,
    TraceFilter,
    TraceSummary,
    UsageAggregate,
    UsageDimension,
)
from janux.tracing.sources.store.timeline import model_timeline_of
from janux.tracing.sources.usage import bill_reconciled, bill_sums

MAX_RECENT_ERRORS = 20
"""How many rejection messages `ingest_stats` keeps."""


def _op(span: SpanRecord) -> str:
    value = span.attributes.get(c.GEN_AI_OPERATION_NAME)
    return value if isinstance(value, str) else ""


def _is_failing_tool(span: SpanRecord) -> bool:
    return _op(span) == c.OP_EXECUTE_TOOL and attr_str(span.attributes, c.JANUX_HANDOFF_STATUS) in (
        c.FAILING_STATUSES
    )


def _failed_edge_spans(facts: TraceFacts, by_id: dict[str, SpanRecord]) -> list[SpanRecord]:
    """The tool (else last attempt) span of every failed delegation or transfer."""
    found = []
    for edge in facts.edges:
        if not edge.failed:
            continue
        span_id = edge.tool_span_id
        if span_id is None and edge.attempt_agents:
            span_id = facts.agents[edge.attempt_agents[-1]].span_id
        if span_id in by_id:
            found.append(by_id[span_id])
    return found


def summarize(trace_id: str, spans: Sequence[SpanRecord]) -> TraceSummary:
    """The trace-list row of one trace (spans in any order, each once)."""
    facts = trace_facts(spans)
    first = min(spans, key=lambda s: s.start_ns)
    roots = [s for s in spans if not s.parent_span_id]
    root = min(roots, key=lambda s: s.start_ns) if roots else None
    ends = [s.end_ns for s in spans if s.duration_ns >= 0] or [first.start_ns]
    attrs = root.attributes if root is not None else {}
    has_bill = any(attrs.get(key) is not None for key in c.BILL_KEYS)
    return TraceSummary(
        trace_id=trace_id,
        start_ns=first.start_ns,
        duration_ns=max(ends) - first.start_ns,
        service_name=(root or first).service_name,
        root_name=root.name if root is not None else "",
        root_agent=attr_str(attrs, c.GEN_AI_AGENT_NAME),
        conversation_id=attr_str(attrs, c.GEN_AI_CONVERSATION_ID),
        span_count=len(spans),
        delegations=facts.delegations,
        attempts=facts.attempts,
        failed_handoffs=facts.failed_handoffs,
        error_spans=sum(1 for s in spans if s.status_code == STATUS_ERROR),
        bill_cost=attr_float(attrs, c.JANUX_BILL_COST) if has_bill else None,
        bill_input_tokens=attr_int(attrs, c.JANUX_BILL_INPUT_TOKENS) if has_bill else facts.input_tokens,
        bill_output_tokens=attr_int(attrs, c.JANUX_BILL_OUTPUT_TOKENS) if has_bill else facts.output_tokens,
        bill_unpriced_tokens=attr_int(attrs, c.JANUX_BILL_UNPRICED_TOKENS) if has_bill else None,
        transfers=facts.transfers,
        inference_spans=facts.inference_spans,
        usage_read_spans=facts.usage_read_spans,
        unrecognised_spans=facts.unrecognised_spans,
        bill_reconciled=bill_reconciled(has_bill, bill_sums(attrs), turn_sums(spans)),
    )


def matches(summary: TraceSummary, flt: TraceFilter) -> bool:
    """True when a trace summary passes every filter of `flt`."""
    checks = (
        flt.start_ns is None or summary.start_ns >= flt.start_ns,
        flt.end_ns is None or summary.start_ns < flt.end_ns,
        flt.service is None or summary.service_name == flt.service,
        flt.root_agent is None or summary.root_agent == flt.root_agent,
        flt.conversation_id is None or summary.conversation_id == flt.conversation_id,
        flt.status != "error" or summary.error_spans > 0,
        flt.status != "ok" or summary.error_spans == 0,
        not flt.has_failed_handoffs or summary.failed_handoffs > 0,
        flt.min_cost is None or (summary.bill_cost is not None and summary.bill_cost >= flt.min_cost),
        flt.trace_id is None or summary.trace_id.startswith(flt.trace_id.strip().lower()),
    )
    return all(checks)


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
            found.extend(_failed_edge_spans(trace_facts(spans), trace))
        found.sort(key=lambda s: -s.start_ns)
        return found[: max(0, limit)]

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
