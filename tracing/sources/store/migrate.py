"""Upgrade of an older store: its spans stored again through today's write path.

`schema.ensure_schema` moves the old spans aside and calls `rebuild_from_old_spans` inside its
transaction, under the write lock, so the usage rows, summaries and everything the current rules
derive (other runtimes' conventions included) are exactly what a fresh write would give.
"""

from __future__ import annotations

import logging
import sqlite3

from janux.tracing.sources.store.ingest import apply_batch
from janux.tracing.sources.store.rows import SELECT_SPAN_COLUMNS, RowReader, batch_rows
from janux.tracing.sources.store.schema import OLD_SPANS_TABLE

logger = logging.getLogger(__name__)

CHUNK_SPANS = 5_000
"""Spans read and stored again per step (memory stays bounded by this, not by the store)."""


def rebuild_from_old_spans(conn: sqlite3.Connection) -> int:
    """Store every span of `OLD_SPANS_TABLE` again (trace by trace); returns the spans stored."""
    cursor = conn.execute(f"SELECT {SELECT_SPAN_COLUMNS} FROM {OLD_SPANS_TABLE} ORDER BY TraceId, Timestamp")
    reader = RowReader()
    stored = 0
    while chunk := cursor.fetchmany(CHUNK_SPANS):
        stored += apply_batch(conn, batch_rows(reader.span(row) for row in chunk))[0]
    if stored:
        logger.info("trace store upgraded: %d spans stored again under the current schema", stored)
    return stored
