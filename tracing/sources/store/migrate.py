"""Upgrades of an existing store's schema, run once by `schema.ensure_schema` under the write lock."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from janux.tracing.conventions import INFERENCE_OPERATIONS, OP_EXECUTE_TOOL, OP_INVOKE_AGENT
from janux.tracing.sources.store.usage import span_usage

_CHUNK = 5_000


def _attributes(text: str) -> dict[str, Any]:
    """Stored attribute JSON as a dict; unreadable JSON counts as no attributes."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def backfill_usage(conn: sqlite3.Connection) -> int:
    """Fill `span_usage` from the spans stored before it existed (schema 1 -> 2); returns rows added.

    Runs inside the caller's transaction, with the same per-span rule as the write path.
    """
    ops = [OP_INVOKE_AGENT, OP_EXECUTE_TOOL, *sorted(INFERENCE_OPERATIONS)]
    cursor = conn.execute(
        "SELECT TraceId, SpanId, ParentSpanId, Op, SpanAttributes, StatusCode FROM otel_traces "
        f"WHERE Op IN ({', '.join('?' * len(ops))})",
        ops,
    )
    added = 0
    while chunk := cursor.fetchmany(_CHUNK):
        rows = []
        for trace_id, span_id, parent, op, attributes, status in chunk:
            usage = span_usage(op, _attributes(attributes), status)
            if usage is not None:
                rows.append((trace_id, span_id, parent, *usage))
        conn.executemany(f"INSERT OR IGNORE INTO span_usage VALUES ({', '.join('?' * 10)})", rows)
        added += len(rows)
    return added
