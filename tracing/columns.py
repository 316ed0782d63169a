"""Named access to query rows: every position is derived from the one tuple of column names that
also writes the SELECT (or the INSERT), so reordering a column list cannot shift a value silently.

A query declares its columns once, as names (`("TraceId", "StartNs", ...)`) or as
`(name, SQL expression)` pairs; `select_list` writes the SELECT from them and `positions` /
`picker` read the rows back by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

Row = Sequence[Any]
"""One result row, as a database driver returns it."""


def positions(columns: Sequence[str]) -> dict[str, int]:
    """Column name -> position in a row; raises ValueError when a name is repeated."""
    found: dict[str, int] = {}
    for position, name in enumerate(columns):
        if name in found:
            raise ValueError(f"column {name!r} is listed twice")
        found[name] = position
    return found


def names(columns: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """The names of `(name, expression)` pairs, in order."""
    return tuple(name for name, _ in columns)


def select_list(columns: Sequence[tuple[str, str]], prefix: str = "") -> str:
    """`expression AS name, ...` for `(name, expression)` pairs (just `name` when both are equal);
    `prefix` (a table alias and a dot) goes before every bare column name."""
    return ", ".join(
        f"{prefix}{name}" if expression == name else f"{expression} AS {name}" for name, expression in columns
    )


def picker(columns: Sequence[str], wanted: Sequence[str]) -> Callable[[Row], tuple[Any, ...]]:
    """A function returning the values of `wanted` (in that order) from a row shaped like
    `columns`: one C call per row, for hot loops that unpack many fields."""
    at = positions(columns)
    missing = [name for name in wanted if name not in at]
    if missing:
        raise ValueError(f"columns {missing} are not in {list(columns)}")
    if len(wanted) == 1:  # itemgetter of one index returns the value, not a 1-tuple
        only = at[wanted[0]]
        return lambda row: (row[only],)
    return itemgetter(*(at[name] for name in wanted))
