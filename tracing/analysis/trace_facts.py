"""One trace's facts, computed once per (trace, span count): everything a page or command adds up.

`analyse(trace_id, spans)` reads a trace once (its span index and structure are built once) and
returns its `TraceFacts`: the trace-list row (`summary`), the agent map's loops and delegations,
what it adds to `usage_by` in every dimension, and the spans of its failed handoffs. Every source
keeps these instead of re-reading spans per page: the in-memory source caches them per span count,
the ClickHouse deriver writes them into Janux's tables. The Trace page, which shows one trace in
full, rebuilds it with `trace_view.reconstruct`; both read the same rules of this package.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from janux.tracing.analysis.agentmap.build import map_facts
from janux.tracing.analysis.agentmap.foreign_rows import foreign_rows
from janux.tracing.analysis.agentmap.from_spans import links_of_spans
from janux.tracing.analysis.agentmap.loops import DelegationFacts, LoopFacts, TraceLinks
from janux.tracing.analysis.derived_rows import derived_rows
from janux.tracing.analysis.facts import TraceSummary, UsageDimension
from janux.tracing.analysis.readers.structure import facts_of, is_janux_trace, is_read_whole, structure
from janux.tracing.analysis.span_index import build_index
from janux.tracing.analysis.summary import failed_edge_spans, summarize
from janux.tracing.analysis.usage_aggregate import span_rows, trace_groups
from janux.tracing.records import SpanRecord


@dataclass(slots=True, frozen=True)
class TraceFacts:
    """What one trace adds to every list and aggregate, as of `span_count` spans."""

    trace_id: str
    """The trace id."""
    span_count: int
    """Spans the facts were computed from (a trace that grows is analysed again)."""
    janux: bool
    """True when the trace carries Janux accounting."""
    summary: TraceSummary
    """Its row in the trace list."""
    loops: list[LoopFacts]
    """Its agent loops as the agent map adds them up (own and inclusive usage, paths)."""
    delegations: list[DelegationFacts]
    """Its delegations and transfers (status, failure kind and reason, attempts, inclusive cost)."""
    usage: list[tuple[UsageDimension, tuple[Any, ...]]]
    """What it adds to `usage_by`: (dimension, `usage_rows.GROUP_COLUMNS` row) pairs."""
    failed_span_ids: list[str]
    """The span to open for each failed handoff (its tool span, else its last attempt's)."""

    @property
    def failures(self) -> list[DelegationFacts]:
        """Delegations and transfers that failed (kind and reason set), in trace order."""
        return [d for d in self.delegations if d.failure is not None]


def analyse(trace_id: str, spans: Sequence[SpanRecord]) -> TraceFacts:
    """The facts of one trace's spans (any order, each span once); its structure is read once."""
    built = structure(build_index(spans))
    janux = is_janux_trace(spans)
    facts = facts_of(built, janux)
    whole = is_read_whole(spans)
    links = TraceLinks(trace_id, foreign_rows(built, facts)) if whole else links_of_spans(trace_id, spans)
    loops, delegations = map_facts(links)
    by_id = {span.span_id: span for span in spans}
    rows = span_rows(spans)  # each span's usage row, read once for the summary and `usage_by`
    return TraceFacts(
        trace_id=trace_id,
        span_count=len(spans),
        janux=janux,
        summary=summarize(trace_id, spans, facts, rows),
        loops=loops,
        delegations=delegations,
        usage=trace_groups(spans, whole, derived_rows(facts), facts.failed_handoffs, rows),
        failed_span_ids=[span.span_id for span in failed_edge_spans(facts, by_id)],
    )
