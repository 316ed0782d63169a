"""Retention: delete traces that ended before a cutoff, in short transactions."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from janux.tracing.sources.store.lock import WriteLock

PRUNE_CHUNK_TRACES = 200
"""Traces deleted per transaction, so a concurrent writer is never held up for long."""


@dataclass(slots=True)
class PruneResult:
    """What a prune removed."""

    traces: int = 0
    """Traces deleted."""
    spans: int = 0
    """Spans deleted."""


def prune_before(conn: sqlite3.Connection, cutoff_ns: int, lock: WriteLock) -> PruneResult:
    """Delete every trace whose last span ended before `cutoff_ns` (Unix ns)."""
    result = PruneResult()
    while True:
        with lock.held():
            deleted = _prune_chunk(conn, cutoff_ns)
        if deleted is None:
            return result
        result.traces += deleted[0]
        result.spans += deleted[1]


def _prune_chunk(conn: sqlite3.Connection, cutoff_ns: int) -> tuple[int, int] | None:
    """Delete one chunk of old traces in one transaction; None when nothing is left."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        rows = conn.execute(
            "SELECT TraceId FROM trace_summary WHERE EndNs < ? LIMIT ?", (cutoff_ns, PRUNE_CHUNK_TRACES)
        ).fetchall()
        if not rows:
            conn.execute("COMMIT")
            return None
        ids = [r[0] for r in rows]
        marks = ", ".join("?" * len(ids))
        spans = conn.execute(f"DELETE FROM otel_traces WHERE TraceId IN ({marks})", ids).rowcount
        conn.execute(f"DELETE FROM trace_summary WHERE TraceId IN ({marks})", ids)
        conn.execute(f"DELETE FROM span_usage WHERE TraceId IN ({marks})", ids)
        conn.execute(f"DELETE FROM agent_links WHERE TraceId IN ({marks})", ids)
        conn.execute(f"DELETE FROM span_errors WHERE TraceId IN ({marks})", ids)
        conn.execute(f"DELETE FROM trace_links WHERE TraceId IN ({marks})", ids)
        conn.execute("UPDATE store_counters SET Value = max(0, Value - ?) WHERE Name = 'spans'", (spans,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return len(ids), spans
