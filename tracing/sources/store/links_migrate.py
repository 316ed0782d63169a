"""Adds `agent_links` to a store created before it, filled from the spans already stored.

Its own step (not a `SCHEMA_VERSION` bump): `TraceStore` runs it under the write lock after
`schema.ensure_schema`; on a store that has the table it is one catalogue lookup.
"""

from __future__ import annotations

import sqlite3

from janux.tracing.sources.store.links import INSERT_LINKS, LINK_COLUMNS, LINKS_DDL, link_values
from janux.tracing.sources.store.rows import SELECT_SPAN_COLUMNS, RowReader

_CHUNK = 5_000


def ensure_links(conn: sqlite3.Connection) -> bool:
    """Create and fill `agent_links` when the store has none; True when it was created."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_links'")
    if exists.fetchone() is not None:
        return False
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in LINKS_DDL.split(";"):
            if statement.strip():
                conn.execute(statement)
        reader = RowReader()
        cursor = conn.execute(f"SELECT {SELECT_SPAN_COLUMNS} FROM otel_traces")
        insert = f"{INSERT_LINKS} VALUES ({', '.join('?' * len(LINK_COLUMNS))})"
        while chunk := cursor.fetchmany(_CHUNK):
            rows = [link_values(reader.span(row)) for row in chunk]
            conn.executemany(insert, [row for row in rows if row is not None])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return True
