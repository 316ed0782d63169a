"""Retention: delete traces that ended before a cutoff, in short transactions."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

PRUNE_CHUNK_TRACES = 200
"""Traces deleted per transaction, so a concurrent writer is never held up for long."""


@dataclass(slots=True)
class PruneResult:
    """What a prune removed."""

    traces: int = 0
    """Traces deleted."""
    spans: int = 0
    """Spans deleted."""


def prune_before(conn: sqlite3.Connection, cutoff_ns: int) -> PruneResult:
    """Delete every trace whose last span ended before `cutoff_ns` (Unix ns)."""
    result = PruneResult()
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            rows = conn.execute(
                "SELECT TraceId FROM trace_summary WHERE EndNs < ? LIMIT ?", (cutoff_ns, PRUNE_CHUNK_TRACES)
            ).fetchall()
            if not rows:
                conn.execute("COMMIT")
                return result
            ids = [r[0] for r in rows]
            marks = ", ".join("?" * len(ids))
            spans = conn.execute(f"DELETE FROM otel_traces WHERE TraceId IN ({marks})", ids).rowcount
            conn.execute(f"DELETE FROM trace_summary WHERE TraceId IN ({marks})", ids)
            conn.execute("UPDATE store_counters SET Value = max(0, Value - ?) WHERE Name = 'spans'", (spans,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        result.traces += len(ids)
        result.spans += spans
