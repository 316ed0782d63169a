"""The embedded store's `agent_links` table: the agent map's rows, so it reads a few typed columns
instead of decoding span JSON.

A trace with Janux accounting has one `agentmap.classify` row per agent and delegating tool span,
written with its spans (`rows.batch_rows` -> `ingest.apply_batch`). A trace without it is read
whole after each batch that touches it (`derive.py`), which replaces its rows with the resolved
rows of its structure (`agentmap.foreign_rows`). `links_migrate` adds or renews the table in
older stores.
"""

from __future__ import annotations

from janux.tracing.analysis.agentmap.classify import LinkRow, classify_span
from janux.tracing.conventions import (
    EVENT_HANDOFF_END,
    EVENT_HANDOFF_START,
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_TYPE,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    TOOL_TYPE_DELEGATE,
    TOOL_TYPE_HANDOFF,
)
from janux.tracing.records import SpanRecord

LINK_COLUMNS = tuple("".join(part.title() for part in name.split("_")) for name in LinkRow._fields)
"""Columns of `agent_links`, in `LinkRow` field order (`trace_id` -> `TraceId`)."""

_REAL = {"Cost", "HandoffMs"}
_INTEGER = {"Attempt", "InputTokens", "OutputTokens", "UnpricedTokens"}
_REQUIRED_INTEGER = {
    "StartNs", "DurationNs", "Janux", "HasTurn", "Delegating", "HasStart", "HasEnd", "Resolved",
}  # fmt: skip
_REQUIRED_TEXT = {"TraceId", "SpanId", "ParentSpanId", "Role", "Name", "Status", "Kind", "Target", "Via"}


def _column(name: str) -> str:
    """Column definition of one `LINK_COLUMNS` name."""
    if name in _REQUIRED_INTEGER:
        return f"{name} INTEGER NOT NULL"
    if name in _REQUIRED_TEXT:
        return f"{name} TEXT NOT NULL"
    return f"{name} {'REAL' if name in _REAL else 'INTEGER' if name in _INTEGER else 'TEXT'}"


# A rowid table (rows are appended; a clustered key on random trace ids would split pages on
# every batch) with one index by trace. No uniqueness constraint: the write path inserts a span's
# row only after `otel_traces` took the span (`ingest._apply`), so a span is never here twice.
LINKS_DDL = f"""
CREATE TABLE IF NOT EXISTS agent_links (
    {", ".join(_column(name) for name in LINK_COLUMNS)}
);
CREATE INDEX IF NOT EXISTS agent_links_trace ON agent_links (TraceId, SpanId);
"""

INSERT_LINKS = f"INSERT INTO main.agent_links ({', '.join(LINK_COLUMNS)})"
"""Head of the write path's insert (the rows follow, see `bulk.insert_rows`)."""


def link_values(span: SpanRecord) -> LinkRow | None:
    """The `agent_links` row of an agent span or a delegating tool span, else None (what the write
    path stores). A plain tool span is classified only if a read walks through it (`_lookup`)."""
    # The write path's hot loop: most spans are rejected on one or two dict lookups.
    op = span.attributes.get(GEN_AI_OPERATION_NAME)
    if op == OP_EXECUTE_TOOL:
        if span.attributes.get(GEN_AI_TOOL_TYPE) not in _DELEGATING and not any(
            event.name in _HANDOFF_EVENTS for event in span.events
        ):
            return None
    elif op != OP_INVOKE_AGENT:
        return None
    return classify_span(span)


_DELEGATING = frozenset({TOOL_TYPE_DELEGATE, TOOL_TYPE_HANDOFF})
_HANDOFF_EVENTS = frozenset({EVENT_HANDOFF_START, EVENT_HANDOFF_END})
