"""`usage_by` and the model timeline from the hourly rollup (`schema.USAGE_HOURLY`), exact.

A range filter (only `start_ns`/`end_ns` set, or nothing) is split at hour boundaries: the whole
hours inside it are read from `janux_usage_hourly` (pre-summed, no `FINAL`), the partial hours at
its edges from the per-trace `janux_usage` rows of the current facts (as `derived.DerivedReads`
reads any filter), and both are added up in one query. A trace belongs to the hour its facts row
starts in, the same start the range compares, so the two parts never overlap and miss nothing.
Sums keep `janux_usage`'s NULL rule: a sum is NULL when no row had a value (`*_n` counts them).
Any other filter (service, agent, status, ...) is not in the rollup's key: `split_hours` says so
and the caller reads the per-trace rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from janux.tracing.analysis.facts import TraceFilter
from janux.tracing.sources.clickhouse import schema as s

_H = s.HOUR_NS
_NULLABLE = ("input", "output", "cost", "unpriced")
_UNBOUNDED = TraceFilter()


@dataclass(frozen=True, slots=True)
class HourSplit:
    """The whole hours [lo, hi) of a range (None: unbounded on that side) and its filter."""

    flt: TraceFilter
    lo: int | None
    hi: int | None

    def rollup_where(self) -> str:
        """The rollup rows of the whole hours."""
        where = ["1"]
        if self.lo is not None:
            where.append(f"hour_ns >= {self.lo}")
        if self.hi is not None:
            where.append(f"hour_ns < {self.hi}")
        return " AND ".join(where)

    def has_edges(self) -> bool:
        """True when the range has partial hours (a bound not on an hour)."""
        return self.lo != self.flt.start_ns or self.hi != self.flt.end_ns

    def edge_condition(self, column: str = "start_ns") -> str:
        """Rows of the partial hours by the trace start in `column` (the filter's own bounds are
        added by `filter_sql` on the facts, by `bounds` elsewhere)."""
        outside = []
        if self.lo is not None:
            outside.append(f"{column} < {self.lo}")
        if self.hi is not None:
            outside.append(f"{column} >= {self.hi}")
        return "(" + " OR ".join(outside) + ")" if outside else "0"

    def bounds(self, column: str) -> str:
        """The filter's own range on the trace start in `column`."""
        where = ["1"]
        if self.flt.start_ns is not None:
            where.append(f"{column} >= {int(self.flt.start_ns)}")
        if self.flt.end_ns is not None:
            where.append(f"{column} < {int(self.flt.end_ns)}")
        return " AND ".join(where)


def range_only(flt: TraceFilter) -> bool:
    """True when `flt` filters on nothing but a range of trace start (what the rollups are keyed by)."""
    return dataclasses.replace(flt, start_ns=None, end_ns=None) == _UNBOUNDED


def split_hours(flt: TraceFilter) -> HourSplit | None:
    """The hour split of `flt`, or None when the rollup cannot answer it (a filter besides the
    range, or a range without a whole hour in it)."""
    if not range_only(flt):
        return None
    lo = None if flt.start_ns is None else -(-flt.start_ns // _H) * _H
    hi = None if flt.end_ns is None else flt.end_ns // _H * _H
    if lo is not None and hi is not None and lo >= hi:
        return None
    return HourSplit(flt, lo, hi)


def _summed() -> str:
    """The outer sums: key columns of a `usage_rows.GROUP_COLUMNS` row after the key."""
    nullable = ", ".join(f"if(sum({n}_n) = 0, NULL, sum({n}_sum))" for n in _NULLABLE)
    return f"sum(count), sum(failed), {nullable}, sum(unread_sum)"


def _edge_rows(split: HourSplit, current: str, bucket: str) -> str:
    """Per-trace usage rows of the partial hours, in the rollup's columns (`bucket` is the time
    column's expression; `current` selects (trace_id, version) of the facts rows).

    Not `FINAL`: the rows are first narrowed by their own trace start (a column scan; a current
    row's `trace_start_ns` is its facts row's start), then kept when their version is current,
    then deduplicated by key (`LIMIT 1 BY`: a row written twice, after a kill, is one identical
    row). `FINAL` would merge every row of the table before any filter."""
    nullable = ", ".join(
        f"ifNull({n}_sum, 0) AS {n}_sum_, toInt64(isNotNull({n}_sum)) AS {n}_n_" for n in _NULLABLE
    )
    rows = (
        f"SELECT * FROM {s.USAGE} WHERE dimension = {{dimension:String}} AND "
        f"{split.bounds('trace_start_ns')} AND {split.edge_condition('trace_start_ns')} "
        f"AND (trace_id, version) IN ({current}) LIMIT 1 BY trace_id, version, seq"
    )
    return (
        f"SELECT {bucket} AS t, key AS k, toInt64(1) AS r, toInt64(count) AS c, toInt64(failed) AS f, "
        f"{nullable}, toInt64(unread_sum) AS u FROM ({rows})"
    )


def _rollup_rows(split: HourSplit) -> str:
    nullable = ", ".join(f"{n}_sum AS {n}_sum_, {n}_n AS {n}_n_" for n in _NULLABLE)
    return (
        f"SELECT hour_ns AS t, key AS k, rows AS r, count AS c, failed AS f, {nullable}, unread_sum AS u "
        f"FROM {s.USAGE_HOURLY} WHERE dimension = {{dimension:String}} AND {split.rollup_where()}"
    )


def _union(split: HourSplit, current: Callable[[str], str], edge_time: str) -> str:
    """Rollup rows of the whole hours and per-trace rows of the partial ones, renamed back to the
    rollup's column names for the outer sums."""
    parts = [_rollup_rows(split)]
    if split.has_edges():
        parts.append(_edge_rows(split, current(split.edge_condition()), edge_time))
    renamed = ", ".join(f"{n}_sum_ AS {n}_sum, {n}_n_ AS {n}_n" for n in _NULLABLE)
    inner = " UNION ALL ".join(parts)
    return f"SELECT t, k, r AS rows, c AS count, f AS failed, {renamed}, u AS unread_sum FROM ({inner})"


def usage_sql(split: HourSplit, current: Callable[[str], str]) -> str:
    """`usage_by` rows (key, count, failed, input, output, cost, unpriced, unread) of the split
    range; parameter `dimension`. `current(extra)` selects the current (trace_id, version) of the
    facts rows matching the filter and the SQL condition `extra`."""
    return (
        f"SELECT k, {_summed()} FROM ({_union(split, current, 'trace_start_ns')}) GROUP BY k "
        "HAVING sum(rows) > 0"
    )


def timeline_sql(split: HourSplit, current: Callable[[str], str], bucket_ns: int) -> str | None:
    """Model timeline rows (bucket, model, input, output, cost, unpriced) of the split range, or
    None when `bucket_ns` is not a whole number of hours (the rollup cannot place a trace then)."""
    if bucket_ns % _H:
        return None
    bucket = f"intDiv(t, {bucket_ns}) * {bucket_ns}"
    nullable = ", ".join(f"if(sum({n}_n) = 0, NULL, sum({n}_sum))" for n in _NULLABLE)
    return (
        f"SELECT {bucket} AS b, k, {nullable} FROM ({_union(split, current, 'trace_start_ns')}) "
        "GROUP BY b, k HAVING sum(rows) > 0"
    )
