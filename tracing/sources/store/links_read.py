"""The agent map's read of the embedded store: `agent_links` rows, inference sums, parent links.

One transaction per read (one committed snapshot); what the builder must walk through that is not
an agent or delegating tool span is looked up in `otel_traces` only when a trace needs it. A trace
without Janux accounting needs neither inference sums nor look-ups: its rows are resolved
(`agentmap.foreign_rows`, written by `derive.py`).
"""

from __future__ import annotations

import sqlite3

from janux.tracing.analysis.agentmap.classify import LinkRow, classify_span
from janux.tracing.analysis.agentmap.loops import TraceLinks
from janux.tracing.analysis.agentmap.parents import resolve_parents
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.conventions import OP_EXECUTE_TOOL
from janux.tracing.sources.store.rows import SELECT_SPAN_COLUMNS, RowReader

# Every row (a trace's rows come from several batches: the reader groups them). A plain tool span
# the builder walks through (a Janux run nested in a tool function) is classified then.
_LINKS = "SELECT * FROM agent_links{traces}"

# Inference sums per parent span, except under loops whose own usage is recorded (`janux.turn.*`,
# the common case, tested first) and in traces without Janux accounting (their rows carry it).
_INFERENCE = """
SELECT u.TraceId, u.ParentSpanId, sum(u.InputTokens), sum(u.OutputTokens), sum(u.Cost), sum(u.Unpriced)
FROM span_usage u WHERE u.Dim = 'model'{inference_traces}
GROUP BY u.TraceId, u.ParentSpanId
HAVING NOT EXISTS (
    SELECT 1 FROM agent_links a WHERE a.TraceId = u.TraceId AND a.SpanId = u.ParentSpanId AND a.HasTurn = 1)
AND NOT EXISTS (SELECT 1 FROM trace_summary t WHERE t.TraceId = u.TraceId AND t.Janux = 0)
"""


def read_links(conn: sqlite3.Connection, where: str, params: list[object]) -> list[TraceLinks]:
    """The link rows, inference sums and parent links of the traces `trace_summary{where}` selects,
    read in one transaction (one committed snapshot)."""
    conn.execute("BEGIN")
    try:
        return _read_links(conn, where, params)
    finally:
        conn.execute("COMMIT")


def read_links_of(conn: sqlite3.Connection, trace_ids: list[str]) -> list[TraceLinks]:
    """`read_links` of the named traces (in chunks of one statement's worth of parameters)."""
    found: list[TraceLinks] = []
    for start in range(0, len(trace_ids), 500):
        chunk = trace_ids[start : start + 500]
        found += read_links(conn, f" WHERE TraceId IN ({', '.join('?' * len(chunk))})", list(chunk))
    return found


def _read_links(conn: sqlite3.Connection, where: str, params: list[object]) -> list[TraceLinks]:
    # No filter: scan (every trace is wanted) instead of probing trace by trace.
    traces_sql = f" WHERE TraceId IN (SELECT TraceId FROM trace_summary{where})" if where else ""
    by_trace: dict[str, TraceLinks] = {}
    make = LinkRow._make
    for row in conn.execute(_LINKS.format(traces=traces_sql), params):
        links = by_trace.get(row[0])
        if links is None:  # a trace's rows are scattered over the batches that brought them
            links = by_trace[row[0]] = TraceLinks(row[0], [])
        links.rows.append(make(row))  # type: ignore[attr-defined]
    for trace_id, parent, tokens_in, tokens_out, cost, unpriced in conn.execute(
        _INFERENCE.format(inference_traces=traces_sql.replace(" WHERE ", " AND ", 1)), params
    ):
        links = by_trace.get(trace_id)
        if links is None:
            links = by_trace[trace_id] = TraceLinks(trace_id, [])
        links.inference[parent] = Usage(tokens_in or 0, tokens_out or 0, cost, unpriced or 0)
    resolve_parents(by_trace, lambda keys: _lookup(conn, keys))
    return list(by_trace.values())


Found = list[tuple[str, str, str, LinkRow | None]]
"""(trace, span, parent, link row) of looked-up spans."""


def _lookup(conn: sqlite3.Connection, keys: list[tuple[str, str]]) -> Found:
    """(trace, span, parent, link row) of the stored spans among `keys`; a tool span is classified
    (agents below a plain tool are its delegation), every other span is only a link in the chain."""
    found: Found = []
    reader = RowReader()
    for start in range(0, len(keys), 400):
        chunk = keys[start : start + 400]
        marks = " OR ".join("(TraceId = ? AND SpanId = ?)" for _ in chunk)
        args = [value for key in chunk for value in key]
        sql = f"SELECT Op, {SELECT_SPAN_COLUMNS} FROM otel_traces WHERE {marks}"
        for op, *row in conn.execute(sql, args):
            link = classify_span(reader.span(tuple(row))) if op == OP_EXECUTE_TOOL else None
            found.append((row[1], row[2], row[3], link))
    return found
