"""Read side of the embedded store: the `TraceSource` queries as SQL over one connection.

Every query is a single statement, so it reads one committed snapshot: a batch is seen whole or
not at all. Bad stored data never raises here (rows decode leniently in `rows.RowReader`).
"""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from janux.tracing.analysis.readers.structure import structure_facts
from janux.tracing.analysis.summary import failed_edge_spans, newest_spans
from janux.tracing.analysis.trace_links import TraceLink, with_linked_counts
from janux.tracing.analysis.usage_rows import (
    UsageSums,
    bill_reconciled,
    check_dimension,
    finish,
    group_select,
)
from janux.tracing.columns import positions, select_list
from janux.tracing.conventions import FAILING_STATUSES, OP_EXECUTE_TOOL, OP_INVOKE_AGENT
from janux.tracing.records import STATUS_ERROR, SpanRecord
from janux.tracing.sources.protocol import IngestStats, TraceFilter, TraceSummary, UsageAggregate
from janux.tracing.sources.store.rows import SELECT_SPAN_COLUMNS, SPAN_SELECT, RowReader, path_of

MAX_DISTINCT_VALUES = 5_000
"""Most values `distinct_values` returns (a drop-down, not an export)."""
_IDS_PER_QUERY = 500
_HEX = frozenset("0123456789abcdef")

_LIST_COLUMNS = (
    ("TraceId", "TraceId"),
    ("StartNs", "StartNs"),
    ("DurationNs", "EndNs - StartNs"),
    ("Service", "coalesce(RootService, FirstService)"),
    ("RootSpanName", "coalesce(RootName, '')"),
    ("RootAgent", "RootAgent"),
    ("AgentPath", "AgentPath"),
    ("ConversationId", "ConversationId"),
    ("SpanCount", "SpanCount"),
    ("Delegations", "Delegations"),
    ("Attempts", "Attempts"),
    ("FailedAll", "FailedHandoffs + ForeignFailed"),
    ("ErrorSpans", "ErrorSpans"),
    ("RootHasBill", "RootHasBill"),
    ("BillCost", "BillCost"),
    ("BillInput", "BillInput"),
    ("BillOutput", "BillOutput"),
    ("BillUnpriced", "BillUnpriced"),
    ("BillEstimate", "BillEstimate"),
    ("InferenceInput", "InferenceInput"),
    ("InferenceOutput", "InferenceOutput"),
    ("Transfers", "Transfers"),
    ("InferenceSpans", "InferenceSpans"),
    ("UsageReadSpans", "UsageReadSpans"),
    ("UnrecognisedSpans", "UnrecognisedSpans"),
)
"""One page row of the trace list: (name, expression over `trace_summary`)."""

# The turn sums of the bill check, for the rows of one page only (`p` is the page).
_TURN_COLUMNS = tuple(
    (
        f"Turn{column}",
        f"iif(p.RootHasBill, (SELECT sum(u.{column}) FROM span_usage u WHERE u.TraceId = p.TraceId "
        "AND u.Dim = 'agent'), NULL)",
    )
    for column in ("InputTokens", "OutputTokens", "Cost", "Unpriced")
)
_ROW = positions([name for name, _ in _LIST_COLUMNS] + [name for name, _ in _TURN_COLUMNS])


def filter_sql(flt: TraceFilter) -> tuple[str, list[Any]]:
    """WHERE clause (over `trace_summary`) and parameters for `flt`."""
    clauses: list[str] = []
    params: list[Any] = []
    if flt.start_ns is not None:
        clauses.append("StartNs >= ?")
        params.append(flt.start_ns)
    if flt.end_ns is not None:
        clauses.append("StartNs < ?")
        params.append(flt.end_ns)
    for column, value in (
        ("coalesce(RootService, FirstService)", flt.service),
        ("RootAgent", flt.root_agent),
        ("ConversationId", flt.conversation_id),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if flt.status == "error":
        clauses.append("ErrorSpans > 0")
    elif flt.status == "ok":
        clauses.append("ErrorSpans = 0")
    if flt.has_failed_handoffs:
        clauses.append("FailedHandoffs + ForeignFailed > 0")
    if flt.min_cost is not None:
        clauses.append("RootHasBill = 1 AND BillCost >= ?")
        params.append(flt.min_cost)
    if flt.trace_id is not None:
        _trace_prefix(flt.trace_id, clauses, params)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _trace_prefix(prefix: str, clauses: list[str], params: list[Any]) -> None:
    """Prefix match on the primary key as a range (ids are lowercase hex)."""
    prefix = prefix.strip().lower()
    if not set(prefix) <= _HEX:
        clauses.append("0")
        return
    clauses.append("TraceId >= ? AND TraceId < ?")
    params.extend((prefix, prefix + "g"))


def _summary(row: tuple[Any, ...]) -> TraceSummary:
    """A trace-list row (`_LIST_COLUMNS` then `_TURN_COLUMNS`) as a summary."""
    at = _ROW
    has_bill = bool(row[at["RootHasBill"]])
    bill = UsageSums(
        row[at["BillInput"]], row[at["BillOutput"]], row[at["BillCost"]], row[at["BillUnpriced"]]
    )
    turns = UsageSums(
        row[at["TurnInputTokens"]], row[at["TurnOutputTokens"]], row[at["TurnCost"]], row[at["TurnUnpriced"]]
    )
    return TraceSummary(
        trace_id=row[at["TraceId"]],
        start_ns=row[at["StartNs"]],
        duration_ns=row[at["DurationNs"]],
        service_name=row[at["Service"]] or "",
        root_name=row[at["RootSpanName"]],
        root_agent=row[at["RootAgent"]],
        agent_path=path_of(row[at["AgentPath"]]),
        conversation_id=row[at["ConversationId"]],
        span_count=row[at["SpanCount"]],
        delegations=row[at["Delegations"]],
        attempts=row[at["Attempts"]],
        failed_handoffs=row[at["FailedAll"]],
        error_spans=row[at["ErrorSpans"]],
        bill_cost=bill.cost if has_bill else None,
        bill_input_tokens=bill.input_tokens if has_bill else row[at["InferenceInput"]],
        bill_output_tokens=bill.output_tokens if has_bill else row[at["InferenceOutput"]],
        bill_unpriced_tokens=bill.unpriced_tokens if has_bill else None,
        bill_cost_estimate=row[at["BillEstimate"]] if has_bill else None,
        transfers=row[at["Transfers"]],
        inference_spans=row[at["InferenceSpans"]],
        usage_read_spans=row[at["UsageReadSpans"]],
        unrecognised_spans=row[at["UnrecognisedSpans"]],
        bill_reconciled=bill_reconciled(has_bill, bill, turns),
    )


# `trace_links.LISTED_RULE` (held to the memory source's rule by the sources' parity test): a trace
# linked either way to a stored trace that started before it is a continuation, not listed.
_EARLIER = (
    "(o.StartNs < trace_summary.StartNs "
    "OR (o.StartNs = trace_summary.StartNs AND o.TraceId < trace_summary.TraceId))"
)
_LISTED = f"""NOT EXISTS (
    SELECT 1 FROM trace_links l JOIN trace_summary o ON o.TraceId = l.LinkedTraceId
    WHERE l.TraceId = trace_summary.TraceId AND {_EARLIER})
AND NOT EXISTS (
    SELECT 1 FROM trace_links l JOIN trace_summary o ON o.TraceId = l.TraceId
    WHERE l.LinkedTraceId = trace_summary.TraceId AND {_EARLIER})"""

_TRACE_LINKS = """
SELECT TraceId, SpanId, LinkedTraceId, LinkedSpanId FROM trace_links WHERE TraceId IN ({marks})
UNION
SELECT TraceId, SpanId, LinkedTraceId, LinkedSpanId FROM trace_links WHERE LinkedTraceId IN ({marks})
"""


def listed_sql(flt: TraceFilter) -> tuple[str, list[Any]]:
    """`filter_sql` of the trace list: continuations of a run are left out, unless the filter names
    a trace id (a prefix finds every trace)."""
    where, params = filter_sql(flt)
    if flt.trace_id is not None:
        return where, params
    return f"{where} AND {_LISTED}" if where else f" WHERE {_LISTED}", params


def trace_links(conn: sqlite3.Connection, trace_ids: list[str]) -> list[TraceLink]:
    """The link index rows with one of `trace_ids` on either side (two index probes per id)."""
    found: list[TraceLink] = []
    ids = list(dict.fromkeys(t.strip().lower() for t in trace_ids))
    for start in range(0, len(ids), _IDS_PER_QUERY):
        chunk = ids[start : start + _IDS_PER_QUERY]
        sql = _TRACE_LINKS.format(marks=", ".join("?" * len(chunk)))
        found += [TraceLink(*row) for row in conn.execute(sql, [*chunk, *chunk])]
    return found


def list_traces(conn: sqlite3.Connection, flt: TraceFilter, limit: int, offset: int) -> list[TraceSummary]:
    """Summaries matching `flt`, newest first, each run once (`listed_sql`), with its linked count."""
    where, params = listed_sql(flt)
    rows = list_where(conn, where, params, limit, offset)
    return with_linked_counts(rows, lambda ids: trace_links(conn, ids))


def list_where(
    conn: sqlite3.Connection, where: str, params: list[Any], limit: int, offset: int
) -> list[TraceSummary]:
    """Summaries of the `trace_summary` rows a WHERE clause keeps, newest first, one page."""
    page = (
        f"SELECT {select_list(_LIST_COLUMNS)} FROM trace_summary{where} "
        "ORDER BY StartNs DESC, TraceId LIMIT ? OFFSET ?"
    )
    sql = f"SELECT p.*, {select_list(_TURN_COLUMNS)} FROM ({page}) p ORDER BY p.StartNs DESC, p.TraceId"
    rows = conn.execute(sql, [*params, max(0, limit), max(0, offset)]).fetchall()
    return [_summary(r) for r in rows]


def count_traces(conn: sqlite3.Connection, flt: TraceFilter) -> int:
    """Number of traces matching `flt`, each run once (`listed_sql`)."""
    where, params = listed_sql(flt)
    return int(conn.execute(f"SELECT count(*) FROM trace_summary{where}", params).fetchone()[0])


def get_traces(conn: sqlite3.Connection, trace_ids: list[str]) -> dict[str, list[SpanRecord]]:
    """All spans of each trace, in start order, keyed by trace id (unknown ids map to [])."""
    reader = RowReader()
    out: dict[str, list[SpanRecord]] = {}
    ids = list(dict.fromkeys(t.strip().lower() for t in trace_ids))
    for start in range(0, len(ids), _IDS_PER_QUERY):
        chunk = ids[start : start + _IDS_PER_QUERY]
        marks = ", ".join("?" * len(chunk))
        sql = (
            f"SELECT {SELECT_SPAN_COLUMNS} FROM otel_traces WHERE TraceId IN ({marks}) "
            "ORDER BY TraceId, Timestamp, SpanId"
        )
        for row in conn.execute(sql, chunk):
            span = reader.span(row)
            out.setdefault(span.trace_id, []).append(span)
    return {trace_id: out.get(trace_id, []) for trace_id in ids}


def failed_handoff_spans(conn: sqlite3.Connection, flt: TraceFilter, limit: int) -> list[SpanRecord]:
    """The failed handoffs' spans, newest first: of Janux traces, failing tool spans and ERROR agent
    spans under tool spans without a recorded status; of other traces (read whole), the tool (else
    last attempt) span of every failed edge of their facts."""
    where, params = filter_sql(flt)
    traces = f"SELECT TraceId FROM trace_summary{where}{' AND ' if where else ' WHERE '}"
    traces += "FailedHandoffs + ForeignFailed > 0 AND Janux = {janux} ORDER BY StartNs DESC LIMIT ?"
    statuses = sorted(FAILING_STATUSES)
    sql = f"""
        SELECT {", ".join("s." + name for name in SPAN_SELECT)}
        FROM otel_traces s JOIN ({traces.format(janux=1)}) t ON t.TraceId = s.TraceId
        WHERE (s.Op = ? AND s.HandoffStatus IN ({", ".join("?" * len(statuses))}))
           OR (s.Op = ? AND s.StatusCode = ? AND EXISTS (
                SELECT 1 FROM otel_traces p WHERE p.TraceId = s.TraceId AND p.SpanId = s.ParentSpanId
                    AND p.Op = ? AND p.HandoffStatus = ''))
        ORDER BY s.Timestamp DESC LIMIT ?
    """
    args = [
        *params,
        max(0, limit),
        OP_EXECUTE_TOOL,
        *statuses,
        OP_INVOKE_AGENT,
        STATUS_ERROR,
        OP_EXECUTE_TOOL,
    ]
    reader = RowReader()
    found = [reader.span(row) for row in conn.execute(sql, [*args, max(0, limit)])]
    foreign = [row[0] for row in conn.execute(traces.format(janux=0), [*params, max(0, limit)])]
    for spans in get_traces(conn, foreign).values():
        found += failed_edge_spans(structure_facts(spans), {span.span_id: span for span in spans})
    return newest_spans(found, limit)


_DISTINCT_COLUMNS = {
    "service": "coalesce(RootService, FirstService)",
    "root_agent": "RootAgent",
    "conversation": "ConversationId",
}


def distinct_values(
    conn: sqlite3.Connection, what: Literal["service", "root_agent", "conversation"]
) -> list[str]:
    """Sorted distinct non-empty values of one filter column."""
    column = _DISTINCT_COLUMNS.get(what)
    if column is None:
        return []
    sql = (
        f"SELECT DISTINCT {column} AS v FROM trace_summary WHERE v IS NOT NULL AND v != '' "
        f"ORDER BY v LIMIT {MAX_DISTINCT_VALUES}"
    )
    return [str(r[0]) for r in conn.execute(sql)]


def ingest_stats(conn: sqlite3.Connection) -> IngestStats:
    """Counters of what was stored, seen twice and refused, with the latest error messages, all read
    from one snapshot (a commit between the statements would otherwise show half of a batch)."""
    conn.execute("BEGIN")
    try:
        counters = dict(conn.execute("SELECT Name, Value FROM store_counters").fetchall())
        traces = conn.execute("SELECT count(*) FROM trace_summary").fetchone()[0]
        errors = [r[0] for r in conn.execute("SELECT Message FROM ingest_errors ORDER BY Id DESC LIMIT 20")]
    finally:
        conn.execute("COMMIT")
    return IngestStats(
        spans=int(counters.get("spans", 0)),
        traces=int(traces),
        duplicates=int(counters.get("duplicates", 0)),
        rejected=int(counters.get("rejected", 0)),
        truncated=int(counters.get("truncated", 0)),
        repaired=int(counters.get("repaired", 0)),
        recent_errors=errors,
    )


_SUMS = group_select(
    {
        "group_key": "Key", "group_count": "count(*)", "group_failed": "sum(Failed)", "input_sum": "sum(i)",
        "output_sum": "sum(o)", "cost_sum": "sum(c)", "unpriced_sum": "sum(u)", "unread_sum": "sum(Unread)",
    }
)  # fmt: skip

# Per delegate tool span: the own usage of its direct attempts (agent rows whose parent it is),
# found by the (TraceId, ParentSpanId) prefix of the primary key.
_TOOL_USAGE = f"""
SELECT {_SUMS} FROM (
    SELECT tl.TraceId, tl.SpanId, tl.Key, tl.Failed, coalesce(tl.Unread, 0) AS Unread,
        sum(a.InputTokens) AS i, sum(a.OutputTokens) AS o, sum(a.Cost) AS c, sum(a.Unpriced) AS u
    FROM ({{traces}}) t
    JOIN span_usage tl ON tl.TraceId = t.TraceId AND tl.Dim = 'tool'
    LEFT JOIN span_usage a ON a.TraceId = tl.TraceId AND a.ParentSpanId = tl.SpanId AND a.Dim = 'agent'
    GROUP BY tl.TraceId, tl.SpanId
) GROUP BY Key
"""

# Per trace: the root's bill, or (no bill: other runtimes, or the root not received yet) the sum of
# its inference spans.
_CONVERSATION_USAGE = f"""
SELECT {_SUMS} FROM (
    SELECT coalesce(t.ConversationId, '') AS Key, t.FailedHandoffs + t.ForeignFailed > 0 AS Failed,
        NOT t.RootHasBill AND (t.UsageReadSpans < t.InferenceSpans OR t.UnrecognisedSpans > 0) AS Unread,
        iif(t.RootHasBill, t.BillInput, sum(m.InputTokens)) AS i,
        iif(t.RootHasBill, t.BillOutput, sum(m.OutputTokens)) AS o,
        iif(t.RootHasBill, t.BillCost, sum(m.Cost)) AS c,
        iif(t.RootHasBill, t.BillUnpriced, sum(m.Unpriced)) AS u
    FROM ({{traces}}) t
    LEFT JOIN span_usage m ON m.TraceId = t.TraceId AND m.Dim = 'model' AND NOT t.RootHasBill
    GROUP BY t.TraceId
) GROUP BY Key
"""

_SPAN_USAGE = f"""
SELECT {group_select({
    "group_key": "u.Key", "group_count": "count(*)", "group_failed": "sum(u.Failed)",
    "input_sum": "sum(u.InputTokens)", "output_sum": "sum(u.OutputTokens)", "cost_sum": "sum(u.Cost)",
    "unpriced_sum": "sum(u.Unpriced)", "unread_sum": "coalesce(sum(u.Unread), 0)",
})}
FROM ({{traces}}) t JOIN span_usage u ON u.TraceId = t.TraceId AND u.Dim = ?
GROUP BY u.Key
"""


def usage_by(conn: sqlite3.Connection, dimension: str, flt: TraceFilter, limit: int) -> list[UsageAggregate]:
    """Tokens and cost grouped by `dimension` over the traces matching `flt` (see `UsageAggregate`)."""
    wanted = check_dimension(dimension)
    where, params = filter_sql(flt)
    if wanted == "conversation":
        traces = f"SELECT * FROM trace_summary{where}"
        sql = _CONVERSATION_USAGE.format(traces=traces)
    else:
        traces = f"SELECT TraceId FROM trace_summary{where}"
        if wanted == "tool":
            sql = _TOOL_USAGE.format(traces=traces)
        else:
            sql, params = _SPAN_USAGE.format(traces=traces), [*params, wanted]
    return finish(conn.execute(sql, params).fetchall(), limit)
