"""The embedded store's `agent_links` table: one `agentmap.classify` row per agent and tool span.

Rows are written with their spans (`rows.batch_rows` -> `ingest.apply_batch`), so the agent map
reads a few typed columns instead of decoding span JSON (`links_migrate` adds the table to older stores).
"""

from __future__ import annotations

import sqlite3

from janux.tracing.records import SpanRecord
from janux.tracing.sources.agentmap.build import TraceLinks
from janux.tracing.sources.agentmap.classify import ROLE_AGENT, LinkRow, classify_span
from janux.tracing.sources.agentmap.model import MapUsage
from janux.tracing.sources.agentmap.parents import resolve_parents

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


# Agent rows and delegating tool rows, in key order (so each trace's rows come together). A plain
# tool span carrying another runtime's delegation is fetched when the builder walks through it.
_LINKS = f"SELECT * FROM agent_links WHERE (Role = '{ROLE_AGENT}' OR Delegating = 1){{traces}}"

# Inference sums per parent span, except under loops whose own usage is recorded (`janux.turn.*`).
_INFERENCE = """
SELECT u.TraceId, u.ParentSpanId, sum(u.InputTokens), sum(u.OutputTokens), sum(u.Cost), sum(u.Unpriced)
FROM span_usage u WHERE u.Dim = 'model'{traces}
GROUP BY u.TraceId, u.ParentSpanId
HAVING NOT EXISTS (
    SELECT 1 FROM agent_links a WHERE a.TraceId = u.TraceId AND a.SpanId = u.ParentSpanId AND a.HasTurn = 1)
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
    # No filter: scan (every trace is wanted) instead of probing trace by trace.
    traces_sql = f" AND TraceId IN (SELECT TraceId FROM trace_summary{where})" if where else ""
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
    resolve_parents(by_trace, lambda keys: _lookup(conn, keys))
    return list(by_trace.values())


def _lookup(
    conn: sqlite3.Connection, keys: list[tuple[str, str]]
) -> list[tuple[str, str, str, LinkRow | None]]:
    """(trace, span, parent, link row) of the stored spans among `keys`: the `agent_links` row of
    a plain tool span the first read left out, else None."""
    found: list[tuple[str, str, str, LinkRow | None]] = []
    for start in range(0, len(keys), 400):
        chunk = keys[start : start + 400]
        marks = " OR ".join("(s.TraceId = ? AND s.SpanId = ?)" for _ in chunk)
        args = [value for key in chunk for value in key]
        sql = (
            "SELECT s.TraceId, s.SpanId, s.ParentSpanId, l.* FROM otel_traces s LEFT JOIN agent_links l "
            f"ON l.TraceId = s.TraceId AND l.SpanId = s.SpanId WHERE {marks}"
        )
        for row in conn.execute(sql, args):
            link = LinkRow._make(row[3:]) if row[3] is not None else None  # type: ignore[attr-defined]
            found.append((row[0], row[1], row[2], link))
    return found
