"""The write path inside one transaction: store a staged batch and keep `trace_summary` current.

Spans go straight into `otel_traces` with multi-row `INSERT OR IGNORE` statements (`bulk.py`);
a span already stored (same trace id and span id) is skipped and counted. New rows get rowids
above the largest one before the batch (SQLite assigns max(rowid) + 1, and the write lock keeps
other writers out), so "the spans of this batch" is a rowid range: no staging table. Only when
some spans were skipped does the batch go back to the database to learn which.

Summary rows (counts, sums, first service, root columns) are computed from the staged rows
(`summary.py`) and upserted in one statement; attempts and other runtimes' failed handoffs need
the spans stored before and are joined in SQL against the rowid range.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from janux.tracing.conventions import OP_EXECUTE_TOOL, OP_INVOKE_AGENT
from janux.tracing.records import STATUS_ERROR
from janux.tracing.sources.store.bulk import insert_rows
from janux.tracing.sources.store.derive import derive, to_derive
from janux.tracing.sources.store.links import INSERT_LINKS, LINK_COLUMNS
from janux.tracing.sources.store.rows import StagedBatch
from janux.tracing.sources.store.schema import SPAN_AT, SPAN_COLUMNS, USAGE_COLUMNS
from janux.tracing.sources.store.summary_rows import ROOT_FIRST, SUMMARY_COLUMNS

_STORE = f"INSERT OR IGNORE INTO main.otel_traces ({', '.join(SPAN_COLUMNS)})"

_STORE_USAGE = f"INSERT INTO main.span_usage ({', '.join(USAGE_COLUMNS)})"
_STORE_ERRORS = "INSERT OR IGNORE INTO main.span_errors (TraceId, Text)"
_STORE_TRACE_LINKS = "INSERT OR IGNORE INTO main.trace_links (TraceId, SpanId, LinkedTraceId, LinkedSpanId)"

_SUMMARY = f"INSERT INTO main.trace_summary ({', '.join(SUMMARY_COLUMNS)})"

# A stored row's root columns are replaced only by an earlier root; a root whose span was a
# duplicate was not counted, so it never gets here.
_NEWER_ROOT = (
    "excluded.RootStartNs IS NOT NULL AND (RootStartNs IS NULL OR excluded.RootStartNs < RootStartNs)"
)
_ROOT_UPDATES = ",\n    ".join(
    f"{column} = iif({_NEWER_ROOT}, excluded.{column}, {column})" for column in SUMMARY_COLUMNS[ROOT_FIRST:]
)
_SUMMARY_MERGE = f"""
ON CONFLICT (TraceId) DO UPDATE SET
    FirstService = CASE WHEN excluded.StartNs < StartNs THEN excluded.FirstService ELSE FirstService END,
    StartNs = min(StartNs, excluded.StartNs),
    EndNs = max(EndNs, excluded.EndNs),
    SpanCount = SpanCount + excluded.SpanCount,
    Delegations = Delegations + excluded.Delegations,
    FailedHandoffs = FailedHandoffs + excluded.FailedHandoffs,
    ErrorSpans = ErrorSpans + excluded.ErrorSpans,
    Janux = max(Janux, excluded.Janux),
    Transfers = Transfers + excluded.Transfers,
    InferenceSpans = InferenceSpans + excluded.InferenceSpans,
    UsageReadSpans = UsageReadSpans + excluded.UsageReadSpans,
    UnrecognisedSpans = UnrecognisedSpans + excluded.UnrecognisedSpans,
    InferenceInput = CASE WHEN excluded.InferenceInput IS NULL THEN InferenceInput
        ELSE coalesce(InferenceInput, 0) + excluded.InferenceInput END,
    InferenceOutput = CASE WHEN excluded.InferenceOutput IS NULL THEN InferenceOutput
        ELSE coalesce(InferenceOutput, 0) + excluded.InferenceOutput END,
    {_ROOT_UPDATES}
"""

# The operation names are literals (not parameters) so the planner can use the partial index
# `otel_traces_agent_children`. The batch's spans are read by their rowid range (NOT INDEXED: else
# the planner may scan the whole partial index instead) and CROSS JOIN pins the join order: walk
# the batch, probe the big table by key. `rowid <= :before` means "stored before this batch".
_AGENT = f"'{OP_INVOKE_AGENT}'"
_TOOL = f"'{OP_EXECUTE_TOOL}'"
_ERROR = f"'{STATUS_ERROR}'"

_ATTEMPTS = f"""
UPDATE main.trace_summary SET Attempts = Attempts + d.n
FROM (
    SELECT TraceId, sum(n) AS n FROM (
        SELECT c.TraceId, count(*) AS n FROM main.otel_traces c NOT INDEXED
        CROSS JOIN main.otel_traces p ON p.TraceId = c.TraceId AND p.SpanId = c.ParentSpanId
        WHERE c.rowid > :before AND c.Op = {_AGENT} AND p.Op = {_TOOL}
        GROUP BY c.TraceId
        UNION ALL
        SELECT p.TraceId, count(*) AS n FROM main.otel_traces p NOT INDEXED
        CROSS JOIN main.otel_traces c
            ON c.TraceId = p.TraceId AND c.ParentSpanId = p.SpanId AND c.Op = {_AGENT}
        WHERE p.rowid > :before AND p.Op = {_TOOL} AND c.rowid <= :before
        GROUP BY p.TraceId
    ) GROUP BY TraceId
) AS d
WHERE trace_summary.TraceId = d.TraceId
"""

# A tool span of another runtime (no janux.handoff.status) counts once it has an ERROR agent child:
# counted when the tool span arrives after such a child, or when its first such child arrives.
_FOREIGN_FAILED = f"""
UPDATE main.trace_summary SET ForeignFailed = ForeignFailed + d.n
FROM (
    SELECT TraceId, count(*) AS n FROM (
        SELECT t.TraceId, t.SpanId FROM main.otel_traces t NOT INDEXED
        WHERE t.rowid > :before AND t.Op = {_TOOL} AND t.HandoffStatus = '' AND EXISTS (
            SELECT 1 FROM main.otel_traces c WHERE c.TraceId = t.TraceId AND c.ParentSpanId = t.SpanId
                AND c.Op = {_AGENT} AND c.StatusCode = {_ERROR})
        UNION
        SELECT t.TraceId, t.SpanId FROM main.otel_traces c NOT INDEXED
        CROSS JOIN main.otel_traces t ON t.TraceId = c.TraceId AND t.SpanId = c.ParentSpanId
        WHERE c.rowid > :before AND c.Op = {_AGENT} AND c.StatusCode = {_ERROR} AND t.Op = {_TOOL}
            AND t.HandoffStatus = '' AND t.rowid <= :before
            AND NOT EXISTS (
                SELECT 1 FROM main.otel_traces o WHERE o.TraceId = t.TraceId AND o.ParentSpanId = t.SpanId
                    AND o.Op = {_AGENT} AND o.StatusCode = {_ERROR} AND o.rowid <= :before)
    ) GROUP BY TraceId
) AS d
WHERE trace_summary.TraceId = d.TraceId
"""

_LINKED_OPS = frozenset({OP_INVOKE_AGENT, OP_EXECUTE_TOOL})
_OP, _TRACE, _SPAN = SPAN_AT["Op"], SPAN_AT["TraceId"], SPAN_AT["SpanId"]


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
            stored, _ = _apply(conn, batch)
        except UnicodeEncodeError:
            conn.execute("ROLLBACK TO batch")
            batch.repair_text()
            stored, _ = _apply(conn, batch)
    except BaseException:
        conn.execute("ROLLBACK TO batch")
        conn.execute("RELEASE batch")
        raise
    conn.execute("RELEASE batch")
    return stored, len(batch.rows) - stored


def apply_batches(conn: sqlite3.Connection, batches: Sequence[StagedBatch]) -> list[tuple[int, int]]:
    """Store several staged batches as one, with the result of storing them one after the other:
    (spans stored, duplicates skipped) per batch.

    One set of statements for the whole group: each statement hands the GIL back and forth once,
    and the group holds the inter-process write lock meanwhile. A group with text to repair is
    stored batch by batch (the repair is counted per batch).
    """
    if len(batches) == 1:
        return [apply_batch(conn, batches[0])]
    merged = StagedBatch.merge(batches)
    if not merged.rows:
        return [(0, 0) for _ in batches]
    conn.execute("SAVEPOINT batches")
    try:
        _, stored_keys = _apply(conn, merged)
    except UnicodeEncodeError:
        conn.execute("ROLLBACK TO batches")
        conn.execute("RELEASE batches")
        return [apply_batch(conn, batch) for batch in batches]
    except BaseException:
        conn.execute("ROLLBACK TO batches")
        conn.execute("RELEASE batches")
        raise
    conn.execute("RELEASE batches")
    return _shares(batches, stored_keys)


def _shares(
    batches: Sequence[StagedBatch], stored_keys: set[tuple[str, str]] | None
) -> list[tuple[int, int]]:
    """Stored and skipped spans of each batch; `stored_keys` None means every span was stored."""
    if stored_keys is None:
        return [(len(batch.rows), 0) for batch in batches]
    seen: set[tuple[str, str]] = set()
    shares = []
    for batch in batches:
        stored = 0
        for row in batch.rows:
            key = (row[_TRACE], row[_SPAN])
            if key in stored_keys and key not in seen:  # the first copy is the one stored
                seen.add(key)
                stored += 1
        shares.append((stored, len(batch.rows) - stored))
    return shares


def _apply(conn: sqlite3.Connection, batch: StagedBatch) -> tuple[int, set[tuple[str, str]] | None]:
    """Store the batch; returns the spans stored and, when some were skipped, the stored keys."""
    before = conn.execute("SELECT coalesce(max(rowid), 0) FROM main.otel_traces").fetchone()[0]
    stored = insert_rows(conn, _STORE, len(SPAN_COLUMNS), batch.rows)
    if stored == 0:
        return 0, set()
    stored_keys = None
    if stored < len(batch.rows):
        new = conn.execute("SELECT TraceId, SpanId FROM main.otel_traces WHERE rowid > ?", (before,))
        stored_keys = set(new.fetchall())
        batch = batch.only(stored_keys)
    insert_rows(conn, _STORE_USAGE, len(USAGE_COLUMNS), batch.usage)
    insert_rows(conn, _STORE_ERRORS, 2, batch.errors)
    insert_rows(conn, _STORE_TRACE_LINKS, 4, batch.trace_links)
    insert_rows(conn, _SUMMARY, len(SUMMARY_COLUMNS), batch.traces, _SUMMARY_MERGE)
    wanted = to_derive(conn, {row[_TRACE] for row in batch.rows})
    # A trace read whole below gets all its agent_links rows there: store only the others' here.
    whole = {trace_id for trace_id, _, _ in wanted}
    links = [row for row in batch.links if row[0] not in whole] if whole else batch.links
    insert_rows(conn, INSERT_LINKS, len(LINK_COLUMNS), links)
    if any(row[_OP] in _LINKED_OPS for row in batch.rows):
        conn.execute(_ATTEMPTS, {"before": before})
        conn.execute(_FOREIGN_FAILED, {"before": before})
    derive(conn, wanted, batch.spans if stored_keys is None else [])
    return stored, stored_keys
