"""Adds `agent_links` to a store created before it (or renews a table of an older layout), filled
from the spans already stored.

Its own step (not a `SCHEMA_VERSION` bump): `TraceStore` runs it under the write lock after
`schema.ensure_schema`; on a store whose table has every column it is two catalogue lookups.
Janux traces get one row per agent and delegating tool span; every trace without Janux accounting
is then read whole once, as after a batch (`derive.derive_traces`), which gives it its resolved rows.
"""

from __future__ import annotations

import sqlite3

from janux.tracing.sources.store.derive import NEEDS_READING, derive_traces
from janux.tracing.sources.store.links import INSERT_LINKS, LINK_COLUMNS, LINKS_DDL, link_values
from janux.tracing.sources.store.rows import SELECT_SPAN_COLUMNS, RowReader

_CHUNK = 5_000


def _columns(conn: sqlite3.Connection) -> set[str]:
    return {row[1] for row in conn.execute("PRAGMA table_info(agent_links)")}


def ensure_links(conn: sqlite3.Connection) -> bool:
    """Create and fill `agent_links` when the store has none, or one without every column of
    `LINK_COLUMNS` (an older layout: dropped and filled anew); True when it was (re)created."""
    if set(LINK_COLUMNS) <= _columns(conn):
        return False
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DROP TABLE IF EXISTS agent_links")
        for statement in LINKS_DDL.split(";"):
            if statement.strip():
                conn.execute(statement)
        reader = RowReader()
        cursor = conn.execute(f"SELECT {SELECT_SPAN_COLUMNS} FROM otel_traces")
        insert = f"{INSERT_LINKS} VALUES ({', '.join('?' * len(LINK_COLUMNS))})"
        while chunk := cursor.fetchmany(_CHUNK):
            rows = [link_values(reader.span(row)) for row in chunk]
            conn.executemany(insert, [row for row in rows if row is not None])
        foreign = [row[0] for row in conn.execute(f"SELECT TraceId FROM trace_summary WHERE {NEEDS_READING}")]
        derive_traces(conn, foreign)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return True
