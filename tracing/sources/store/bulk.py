"""Multi-row INSERT statements: many rows per statement instead of one `executemany` step per row.

Python's sqlite3 releases the GIL around every step of a statement. With `executemany` that is
once per row, and when another thread of the process is busy in Python (the receiver decoding the
next request) the writer waits for the GIL again after each row: a 512-span batch took four times
longer than on an idle process, while holding the inter-process write lock. One statement per
chunk of rows steps once per chunk.

Chunks are a fixed size plus powers of two for the rest, so a handful of statement texts serve
every batch size and stay in the connection's statement cache.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain
from typing import Any

MAX_ROWS_PER_STATEMENT = 1024
"""Most rows bound to one statement."""


@lru_cache(maxsize=64)
def _statement(head: str, width: int, count: int, tail: str) -> str:
    """`head VALUES (?, ...), ... tail` for `count` rows of `width` values."""
    row = "(" + ",".join("?" * width) + ")"
    return f"{head} VALUES {','.join([row] * count)}{tail}"


def _chunk_rows(conn: sqlite3.Connection, width: int) -> int:
    """Rows per statement on `conn`: within its bound-parameter limit, a power of two."""
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    rows = MAX_ROWS_PER_STATEMENT
    while rows > 1 and rows * width > limit:
        rows //= 2
    return rows


def insert_rows(
    conn: sqlite3.Connection, head: str, width: int, rows: Sequence[Sequence[Any]], tail: str = ""
) -> int:
    """Run `head VALUES (...), ... tail` over `rows` (each `width` values); returns rows changed.

    `head` is the statement up to VALUES (`INSERT OR IGNORE INTO t (a, b)`), `tail` what follows
    the values (an upsert clause). Row order is kept, so with OR IGNORE the first of two rows with
    the same key is the one stored.
    """
    changed = 0
    size = _chunk_rows(conn, width)
    start = 0
    total = len(rows)
    while start < total:
        left = total - start
        count = size if left >= size else 1 << (left.bit_length() - 1)
        part = rows[start : start + count]
        values = list(chain.from_iterable(part))
        changed += conn.execute(_statement(head, width, count, tail), values).rowcount
        start += count
    return changed
