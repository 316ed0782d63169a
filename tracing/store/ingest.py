"""The write path's SQL: stage a batch, drop duplicates, store spans, update trace summaries.

Everything after staging runs inside SQLite (no per-span Python). Must be called inside a write
transaction opened by the caller, so a batch and its summary changes commit together or not at all.

Summary counts that depend on a parent and its child (attempts: `invoke_agent` under
`execute_tool`; failed handoffs of other runtimes: an `execute_tool` span with an ERROR
`invoke_agent` child) are counted exactly once, by whichever of the two spans arrives second,
so they stay right when a child is exported before its parent, in a later batch or twice.
"""

from __future__ import annotations

import sqlite3

from tracing.conventions import OP_EXECUTE_TOOL, OP_INVOKE_AGENT
from tracing.records import STATUS_ERROR
from tracing.store.rows import StagedBatch
from tracing.store.schema import BATCH_COLUMNS, FLAG_DELEGATION, FLAG_FAILING, ROOT_COLUMNS, SPAN_COLUMNS

_STAGE = (
    f"INSERT OR IGNORE INTO temp.batch ({', '.join(BATCH_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(BATCH_COLUMNS))})"
)

_STAGE_ROOTS = (
    f"INSERT INTO temp.batch_roots ({', '.join(ROOT_COLUMNS)}) VALUES ({', '.join('?' * len(ROOT_COLUMNS))})"
)

_DROP_DUPLICATES = """
DELETE FROM temp.batch WHERE EXISTS (
    SELECT 1 FROM main.otel_traces o WHERE o.TraceId = batch.TraceId AND o.SpanId = batch.SpanId)
"""

_STORE = (
    f"INSERT INTO main.otel_traces ({', '.join(SPAN_COLUMNS)}) "
    f"SELECT {', '.join(SPAN_COLUMNS)} FROM temp.batch"
)

_SUMMARY_UPSERT = """
INSERT INTO main.trace_summary (
    TraceId, StartNs, EndNs, SpanCount, Delegations, Attempts, FailedHandoffs, ForeignFailed,
    ErrorSpans, FirstService, InferenceInput, InferenceOutput)
SELECT b.TraceId, min(b.Timestamp), max(b.Timestamp + b.Duration), count(*),
    sum((b.Flags & :delegation) != 0), 0, sum((b.Flags & :failing) != 0), 0, sum(b.StatusCode = :error),
    (SELECT f.ServiceName FROM temp.batch f WHERE f.TraceId = b.TraceId ORDER BY f.Timestamp LIMIT 1),
    sum(iif(b.UsageDim = 'model', b.UsageIn, NULL)), sum(iif(b.UsageDim = 'model', b.UsageOut, NULL))
FROM temp.batch b WHERE true GROUP BY b.TraceId
ON CONFLICT (TraceId) DO UPDATE SET
    FirstService = CASE WHEN excluded.StartNs < StartNs THEN excluded.FirstService ELSE FirstService END,
    StartNs = min(StartNs, excluded.StartNs),
    EndNs = max(EndNs, excluded.EndNs),
    SpanCount = SpanCount + excluded.SpanCount,
    Delegations = Delegations + excluded.Delegations,
    FailedHandoffs = FailedHandoffs + excluded.FailedHandoffs,
    ErrorSpans = ErrorSpans + excluded.ErrorSpans,
    InferenceInput = CASE WHEN excluded.InferenceInput IS NULL THEN InferenceInput
        ELSE coalesce(InferenceInput, 0) + excluded.InferenceInput END,
    InferenceOutput = CASE WHEN excluded.InferenceOutput IS NULL THEN InferenceOutput
        ELSE coalesce(InferenceOutput, 0) + excluded.InferenceOutput END
"""

_STORE_USAGE = """
INSERT INTO main.span_usage (
    TraceId, SpanId, ParentSpanId, Dim, Key, InputTokens, OutputTokens, Cost, Unpriced, Failed)
SELECT TraceId, SpanId, ParentSpanId, UsageDim, UsageKey, UsageIn, UsageOut, UsageCost, UsageUnpriced,
    UsageFailed
FROM temp.batch WHERE UsageDim IS NOT NULL
"""

# CROSS JOIN pins the join order: always walk the (small) batch and probe the big table by key.

# The earliest root of the batch replaces the stored root only when it started earlier; a root
# whose span was a duplicate has the same start and so changes nothing.
_ROOTS = """
UPDATE main.trace_summary SET
    RootStartNs = r.Timestamp, RootName = r.SpanName, RootService = r.ServiceName,
    RootAgent = r.Agent, ConversationId = r.Conversation, RootHasBill = r.HasBill,
    BillCost = r.BillCost, BillInput = r.BillInput, BillOutput = r.BillOutput,
    BillUnpriced = r.BillUnpriced
FROM (
    SELECT b.* FROM temp.batch_roots b WHERE b.Timestamp = (
        SELECT min(x.Timestamp) FROM temp.batch_roots x WHERE x.TraceId = b.TraceId)
) AS r
WHERE trace_summary.TraceId = r.TraceId
    AND (trace_summary.RootStartNs IS NULL OR r.Timestamp < trace_summary.RootStartNs)
"""

_ATTEMPTS = """
UPDATE main.trace_summary SET Attempts = Attempts + d.n
FROM (
    SELECT TraceId, sum(n) AS n FROM (
        SELECT c.TraceId, count(*) AS n FROM temp.batch c
        CROSS JOIN main.otel_traces p ON p.TraceId = c.TraceId AND p.SpanId = c.ParentSpanId
        WHERE c.Op = :agent AND p.Op = :tool
        GROUP BY c.TraceId
        UNION ALL
        SELECT p.TraceId, count(*) AS n FROM temp.batch p
        CROSS JOIN main.otel_traces c ON c.TraceId = p.TraceId AND c.ParentSpanId = p.SpanId AND c.Op = :agent
        WHERE p.Op = :tool AND NOT EXISTS (
            SELECT 1 FROM temp.batch x WHERE x.TraceId = c.TraceId AND x.SpanId = c.SpanId)
        GROUP BY p.TraceId
    ) GROUP BY TraceId
) AS d
WHERE trace_summary.TraceId = d.TraceId
"""

# A tool span of another runtime (no janux.handoff.status) counts once it has an ERROR agent child:
# counted when the tool span arrives after such a child, or when its first such child arrives.
_FOREIGN_FAILED = """
UPDATE main.trace_summary SET ForeignFailed = ForeignFailed + d.n
FROM (
    SELECT TraceId, count(*) AS n FROM (
        SELECT t.TraceId, t.SpanId FROM temp.batch t
        WHERE t.Op = :tool AND t.HandoffStatus = '' AND EXISTS (
            SELECT 1 FROM main.otel_traces c WHERE c.TraceId = t.TraceId AND c.ParentSpanId = t.SpanId
                AND c.Op = :agent AND c.StatusCode = :error)
        UNION
        SELECT t.TraceId, t.SpanId FROM temp.batch c
        CROSS JOIN main.otel_traces t ON t.TraceId = c.TraceId AND t.SpanId = c.ParentSpanId
        WHERE c.Op = :agent AND c.StatusCode = :error AND t.Op = :tool AND t.HandoffStatus = ''
            AND NOT EXISTS (SELECT 1 FROM temp.batch x WHERE x.TraceId = t.TraceId AND x.SpanId = t.SpanId)
            AND NOT EXISTS (
                SELECT 1 FROM main.otel_traces o WHERE o.TraceId = t.TraceId AND o.ParentSpanId = t.SpanId
                    AND o.Op = :agent AND o.StatusCode = :error
                    AND NOT EXISTS (
                        SELECT 1 FROM temp.batch y WHERE y.TraceId = o.TraceId AND y.SpanId = o.SpanId))
    ) GROUP BY TraceId
) AS d
WHERE trace_summary.TraceId = d.TraceId
"""

_PARAMS = {
    "agent": OP_INVOKE_AGENT,
    "tool": OP_EXECUTE_TOOL,
    "error": STATUS_ERROR,
    "delegation": FLAG_DELEGATION,
    "failing": FLAG_FAILING,
}


def apply_batch(conn: sqlite3.Connection, batch: StagedBatch) -> tuple[int, int]:
    """Store a staged batch (from `rows.batch_rows`); returns (spans stored, duplicates skipped).

    Text SQLite cannot take (lone UTF-16 surrogates, which JSON `\\ud800` escapes decode to) is
    replaced and the batch stored again; `batch.repaired` and `batch.notes` say so.
    """
    if not batch.rows:
        return 0, 0
    conn.execute("SAVEPOINT batch")
    try:
        try:
            result = _apply(conn, batch)
        except UnicodeEncodeError:
            conn.execute("ROLLBACK TO batch")
            batch.repair_text()
            result = _apply(conn, batch)
    except BaseException:
        conn.execute("ROLLBACK TO batch")
        conn.execute("RELEASE batch")
        raise
    conn.execute("RELEASE batch")
    return result


def _apply(conn: sqlite3.Connection, batch: StagedBatch) -> tuple[int, int]:
    conn.execute("DELETE FROM temp.batch")
    conn.execute("DELETE FROM temp.batch_roots")
    staged = conn.executemany(_STAGE, batch.rows).rowcount
    in_batch_duplicates = len(batch.rows) - staged
    stored_before = conn.execute(_DROP_DUPLICATES).rowcount
    new = staged - stored_before
    if new > 0:
        if batch.roots:
            conn.executemany(_STAGE_ROOTS, batch.roots)
        conn.execute(_STORE)
        conn.execute(_STORE_USAGE)
        conn.execute(_SUMMARY_UPSERT, _PARAMS)
        if batch.roots:
            conn.execute(_ROOTS)
        conn.execute(_ATTEMPTS, _PARAMS)
        conn.execute(_FOREIGN_FAILED, _PARAMS)
    conn.execute("DELETE FROM temp.batch")
    conn.execute("DELETE FROM temp.batch_roots")
    return new, in_batch_duplicates + stored_before
