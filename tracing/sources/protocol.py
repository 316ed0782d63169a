"""The query layer the dashboard reads through: one protocol, served by the embedded store and ClickHouse.

Each query the dashboard needs is one method. Both `janux.tracing.sources.store` (embedded) and
`janux.tracing.sources.clickhouse` (the Collector's `otel_traces` table) implement `TraceSource`, so every
page works the same on either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, MapKey, MapRefs
from janux.tracing.analysis.facts import (
    USAGE_DIMENSIONS,
    TraceFilter,
    TraceSummary,
    UsageAggregate,
    UsageDimension,
)
from janux.tracing.analysis.trace_find import FoundTraces, TraceQuery
from janux.tracing.analysis.trace_links import TraceLink
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.records import SpanRecord

__all__ = [
    "USAGE_DIMENSIONS",
    "FoundTraces",
    "IngestStats",
    "TraceFilter",
    "TraceQuery",
    "TraceSource",
    "TraceSummary",
    "UsageAggregate",
    "UsageDimension",
]


@dataclass(slots=True)
class IngestStats:
    """What the store has taken in and what it refused, so nothing is dropped silently."""

    spans: int = 0
    """Spans stored."""
    traces: int = 0
    """Distinct traces stored."""
    duplicates: int = 0
    """Spans received again (same trace id and span id) and stored once."""
    rejected: int = 0
    """Spans or records refused as malformed."""
    truncated: int = 0
    """Spans stored with an oversized value (attribute, name, event) cut to the store's limit; the
    span's `janux.store.truncated` attribute lists what was cut."""
    repaired: int = 0
    """Spans stored with text that was not valid Unicode replaced by U+FFFD."""
    recent_errors: list[str] = field(default_factory=list)
    """The latest rejection messages, newest first."""


class TraceSource(Protocol):
    """A queryable set of traces. Implementations never raise on bad stored data."""

    def list_traces(self, flt: TraceFilter, limit: int = 50, offset: int = 0) -> list[TraceSummary]:
        """Trace summaries matching `flt`, newest first."""
        ...

    def count_traces(self, flt: TraceFilter) -> int:
        """How many traces match `flt`."""
        ...

    def find_traces(
        self, flt: TraceFilter, query: TraceQuery, limit: int = 50, offset: int = 0
    ) -> FoundTraces:
        """The traces matching `flt` that have what `query` asks for inside them
        (`janux.tracing.analysis.trace_find`), over the whole filtered range: one page, newest
        first, and how many match in all. Raises `trace_find.FindError` for a field no trace could
        match as meant (`key=`)."""
        ...

    def get_trace(self, trace_id: str) -> list[SpanRecord]:
        """All spans of one trace (each span once), in start order."""
        ...

    def get_traces(self, trace_ids: list[str]) -> dict[str, list[SpanRecord]]:
        """All spans of several traces, keyed by trace id."""
        ...

    def trace_links(self, trace_ids: list[str]) -> list[TraceLink]:
        """The link index rows (`janux.tracing.analysis.trace_links`) that have one of `trace_ids` on
        either side: one indexed query, never a scan of the spans."""
        ...

    def failed_handoff_spans(self, flt: TraceFilter, limit: int = 500) -> list[SpanRecord]:
        """`execute_tool` spans whose final handoff status is failing, plus ERROR
        `invoke_agent` spans of other runtimes, newest first."""
        ...

    def distinct_values(self, what: Literal["service", "root_agent", "conversation"]) -> list[str]:
        """Values to offer in a filter drop-down."""
        ...

    def usage_by(self, dimension: UsageDimension, flt: TraceFilter, limit: int = 100) -> list[UsageAggregate]:
        """Tokens and cost grouped by agent, delegation tool, model or conversation over the traces
        matching `flt` (use `start_ns` / `end_ns` for a time range), most expensive first; each token
        and cent counted once (see `UsageAggregate`). Raises ValueError for an unknown dimension."""
        ...

    def agent_map(self, flt: TraceFilter, bucket_ns: int | None = None) -> AgentMap:
        """Agents (nodes) and delegations/transfers between them (edges) over every trace matching
        `flt`, with the Trace page's accounting (see `janux.tracing.analysis.agentmap`); `bucket_ns`
        also fills the map's timeline (own usage per agent per bucket)."""
        ...

    def map_refs(self, flt: TraceFilter, key: MapKey) -> MapRefs:
        """The newest traces of one node (`key`: the agent) or edge ((caller, target, kind)) of
        `agent_map(flt)`, and an edge's newest failed delegations (`agentmap.sums.newest_refs`):
        read when the node or edge is inspected, not with every map."""
        ...

    def model_timeline(self, flt: TraceFilter, bucket_ns: int) -> list[tuple[int, str, Usage]]:
        """Usage per (time bucket of the trace start, requested model) over the traces matching `flt`:
        every inference round once, unpriced rounds as unpriced tokens (see `model_timeline`)."""
        ...

    def ingest_stats(self) -> IngestStats:
        """Counts of what was stored and refused."""
        ...
