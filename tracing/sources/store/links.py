"""The embedded store's `agent_links` table: one `agentmap.classify` row per agent and tool span.

Rows are written with their spans (`rows.batch_rows` -> `ingest.apply_batch`), so the agent map
reads a few typed columns instead of decoding span JSON (`links_migrate` adds the table to older stores).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from janux.tracing.records import SpanRecord
from janux.tracing.sources.agentmap.build import TraceLinks
from janux.tracing.sources.agentmap.classify import ROLE_AGENT, LinkRow, classify_span
from janux.tracing.sources.agentmap.model import MapUsage

LINK_COLUMNS = tuple("".join(part.title() for part in name.split("_")) for name in LinkRow._fields)
"""Columns of `agent_links`, in `LinkRow` field order (`trace_id` -> `TraceId`)."""

_REAL = {"Cost", "HandoffMs"}
_INTEGER = {"Attempt", "InputTokens", "OutputTokens", "UnpricedTokens"}
_REQUIRED_INTEGER = {"StartNs", "DurationNs", "Janux", "HasTurn", "Delegating", "HasStart", "HasEnd"}
_REQUIRED_TEXT = {"TraceId", "SpanId", "ParentSpanId", "Role", "Name", "Status", "Kind", "Target"}


def _column(name: str) -> str:
    """Column definition of one `LINK_COLUMNS` name."""
    if name in _REQUIRED_INTEGER:
        return f"{name} INTEGER NOT NULL"
    if name in _REQUIRED_TEXT:
        return f"{name} TEXT NOT NULL"
    return f"{name} {'REAL' if name in _REAL else 'INTEGER' if name in _INTEGER else 'TEXT'}"


LINKS_DDL = f"""
CREATE TABLE IF NOT EXISTS agent_links (
    {", ".join(_column(name) for name in LINK_COLUMNS)},
    PRIMARY KEY (TraceId, SpanId)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agent_links_children
    ON agent_links (TraceId, ParentSpanId) WHERE Role = '{ROLE_AGENT}';
"""

INSERT_LINKS = f"INSERT OR IGNORE INTO main.agent_links ({', '.join(LINK_COLUMNS)})"
"""Head of the write path's insert (the rows follow, see `bulk.insert_rows`)."""


def link_values(span: SpanRecord) -> LinkRow | None:
    """The `agent_links` row of a span, or None (what the write path stores)."""
    return classify_span(span)


# Agent rows, delegating tool rows, and plain tool rows with an agent child (another runtime's
# delegation through an ordinary tool): everything the builder needs.
_LINKS = f"""
SELECT l.* FROM agent_links l WHERE l.TraceId IN ({{traces}}) AND (
    l.Role = '{ROLE_AGENT}' OR l.Delegating = 1 OR EXISTS (
        SELECT 1 FROM agent_links a WHERE a.TraceId = l.TraceId AND a.ParentSpanId = l.SpanId
            AND a.Role = '{ROLE_AGENT}'))
ORDER BY l.TraceId
"""

# Inference sums per parent span, except under loops whose own usage is recorded (`janux.turn.*`).
_INFERENCE = """
SELECT u.TraceId, u.ParentSpanId, sum(u.InputTokens), sum(u.OutputTokens), sum(u.Cost), sum(u.Unpriced)
FROM span_usage u WHERE u.Dim = 'model' AND u.TraceId IN ({traces}) AND NOT EXISTS (
    SELECT 1 FROM agent_links a WHERE a.TraceId = u.TraceId AND a.SpanId = u.ParentSpanId AND a.HasTurn = 1)
GROUP BY u.TraceId, u.ParentSpanId
"""


def read_links(conn: sqlite3.Connection, where: str, params: list[object]) -> list[TraceLinks]:
    """The link rows, inference sums and parent links of the traces `trace_summary{where}` selects,
    read in one transaction (one committed snapshot)."""
    conn.execute("BEGIN")
    try:
        return _read_links(conn, where, params)
    finally:
        conn.execute("COMMIT")


def _read_links(conn: sqlite3.Connection, where: str, params: list[object]) -> list[TraceLinks]:
    traces_sql = f"SELECT TraceId FROM trace_summary{where}"
    by_trace: dict[str, TraceLinks] = {}
    current: TraceLinks | None = None
    make = LinkRow._make
    for row in conn.execute(_LINKS.format(traces=traces_sql), params):
        if current is None or current.trace_id != row[0]:
            current = by_trace[row[0]] = TraceLinks(row[0], [])
        current.rows.append(make(row))  # type: ignore[attr-defined]
    for trace_id, parent, tokens_in, tokens_out, cost, unpriced in conn.execute(
        _INFERENCE.format(traces=traces_sql), params
    ):
        links = by_trace.get(trace_id)
        if links is None:
            links = by_trace[trace_id] = TraceLinks(trace_id, [])
        links.inference[parent] = MapUsage(tokens_in or 0, tokens_out or 0, cost, unpriced or 0)
    _resolve_parents(conn, by_trace)
    return list(by_trace.values())


def _unresolved(links: TraceLinks) -> Iterator[str]:
    """Parent ids the builder would have to walk through but cannot see yet."""
    known = {row.span_id for row in links.rows}
    wanted = [row.parent_span_id for row in links.rows] + list(links.inference)
    wanted += list(links.parents.values())
    for span_id in wanted:
        if span_id and span_id not in known and span_id not in links.parents:
            yield span_id


def _resolve_parents(conn: sqlite3.Connection, by_trace: dict[str, TraceLinks], rounds: int = 64) -> None:
    """Fill each trace's `parents` with the spans between its link rows (other runtimes nest agents
    under chains and tasks), one level per round; a parent not stored stays unresolved (missing)."""
    missing: set[tuple[str, str]] = set()
    for _ in range(rounds):
        pending = [(t, s) for t, links in by_trace.items() for s in set(_unresolved(links))]
        pending = [key for key in pending if key not in missing]
        if not pending:
            return
        found = set()
        for start in range(0, len(pending), 400):
            chunk = pending[start : start + 400]
            marks = " OR ".join("(TraceId = ? AND SpanId = ?)" for _ in chunk)
            args = [value for key in chunk for value in key]
            for trace_id, span_id, parent in conn.execute(
                f"SELECT TraceId, SpanId, ParentSpanId FROM otel_traces WHERE {marks}", args
            ):
                by_trace[trace_id].parents[span_id] = parent
                found.add((trace_id, span_id))
        missing.update(key for key in pending if key not in found)
