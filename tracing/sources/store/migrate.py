"""Upgrades of an existing store's schema, run once by `schema.ensure_schema` under the write lock."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from janux.tracing.conventions import INFERENCE_OPERATIONS, OP_EXECUTE_TOOL, OP_INVOKE_AGENT
from janux.tracing.sources.columns import picker
from janux.tracing.sources.store.usage import USAGE_COLUMNS, span_usage

_CHUNK = 5_000
_READ = ("TraceId", "SpanId", "ParentSpanId", "Op", "SpanAttributes", "StatusCode")
_READ_FIELDS = picker(_READ, _READ)


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
        f"SELECT {', '.join(_READ)} FROM otel_traces WHERE Op IN ({', '.join('?' * len(ops))})", ops
    )
    insert = (
        f"INSERT OR IGNORE INTO span_usage ({', '.join(USAGE_COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(USAGE_COLUMNS))})"
    )
    added = 0
    while chunk := cursor.fetchmany(_CHUNK):
        rows = []
        for row in chunk:
            trace_id, span_id, parent, op, attributes, status = _READ_FIELDS(row)
            usage = span_usage(op, _attributes(attributes), status)
            if usage is not None:  # a usage row is the span's ids, then its UsageRow (USAGE_COLUMNS)
                rows.append((trace_id, span_id, parent, *usage))
        conn.executemany(insert, rows)
        added += len(rows)
    return added
