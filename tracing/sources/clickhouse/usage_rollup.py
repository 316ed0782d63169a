"""`usage_by` and the model timeline from the usage rollups (`schema.USAGE_HOURLY`, schema 2, and
`schema.USAGE_MINUTE`, schema 9), exact.

A range filter (only `start_ns`/`end_ns` set, or nothing) is covered by pieces (`map_rollup.cover`,
as the agent map's): the whole hours from `janux_usage_hourly`, the whole minutes at its edges from
`janux_usage_minute`, the seconds left from the usage rows the current facts rows of those seconds
carry (their `usage_*` arrays, read through the projection ordered by start; the `janux_usage` rows
of facts rows written before schema 3, whose current version `derived` finds with `FINAL`). An edge
longer than half a bucket is read as the whole bucket with the rest taken back (every sum negated),
so an edge reads at most 30 minute buckets per key and 30 seconds of facts rows, never the day's
facts rows; all pieces are added up in one query. A trace belongs to the bucket its facts row
starts in, the same start the range compares, so the pieces never overlap and miss nothing. Sums
keep `janux_usage`'s NULL rule: a sum is NULL when no row had a value (`*_n` counts them). Any
other filter (service, agent, status, ...) is not in the rollups' key: `usage_pieces` says so and
the caller reads the per-trace rows. Before schema 9 (no minute rollup) the pieces are whole hours
and per-trace rows (`UNITS_BEFORE_9`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from janux.tracing.analysis.facts import TraceFilter
from janux.tracing.sources.clickhouse import schema as s
from janux.tracing.sources.clickhouse.map_parts import bucket_column
from janux.tracing.sources.clickhouse.map_rollup import UNITS, Piece, RowsOf, cover, facts_conditions

_NULLABLE = ("input", "output", "cost", "unpriced")
_UNBOUNDED = TraceFilter()
USAGE_CARRIED = ", ".join(n for n, _ in s.ROLLUP_FACTS_COLUMNS if n.startswith("usage_"))
"""The usage arrays a facts row carries (schema 2), as `RowsOf.facts` selects them."""
UNITS_BEFORE_9 = (s.HOUR_NS,)
"""The rollups' bucket lengths before schema 9 (the hourly one only)."""

RowsOfFacts = Callable[[str, int], RowsOf]
"""`rows_of(extra, sign)`: the current facts rows whose start matches the SQL condition `extra`
(their usage arrays, or their `janux_usage` rows when written before schema 3), counted `sign`
times."""


def range_only(flt: TraceFilter) -> bool:
    """True when `flt` filters on nothing but a range of trace start (what the rollups are keyed by)."""
    return dataclasses.replace(flt, start_ns=None, end_ns=None) == _UNBOUNDED


def usage_pieces(flt: TraceFilter, units: Sequence[int] = UNITS) -> list[Piece] | None:
    """The pieces covering `flt`'s range, or None when the rollups cannot answer it (a filter
    besides the range)."""
    return cover(flt.start_ns, flt.end_ns, units) if range_only(flt) else None


def _rollup_rows(pieces: Sequence[Piece]) -> list[str]:
    """Rows of the rollup pieces, one SELECT per (rollup, sign), every sum times the sign."""
    found = []
    for unit in (s.HOUR_NS, s.MINUTE_NS):
        for sign in (1, -1):
            mine = [p for p in pieces if p.unit == unit and p.sign == sign]
            if not mine:
                continue
            bucket = bucket_column(unit)
            nullable = ", ".join(f"{sign} * {n}_sum AS {n}_sum_, {sign} * {n}_n AS {n}_n_" for n in _NULLABLE)
            where = " OR ".join(p.where(bucket) for p in mine)
            found.append(
                f"SELECT {bucket} AS t, key AS k, {sign} * rows AS r, {sign} * count AS c, "
                f"{sign} * failed AS f, {nullable}, {sign} * unread_sum AS u "
                f"FROM {s.usage_rollup_table(unit)} WHERE dimension = {{dimension:String}} AND ({where})"
            )
    return found


def _signed(sign: int) -> str:
    """The per-trace columns (`u_*` of one usage row) in the rollup's columns, counted `sign` times."""
    nullable = ", ".join(
        f"{sign} * ifNull(u_{n}, 0) AS {n}_sum_, toInt64({sign} * isNotNull(u_{n})) AS {n}_n_"
        for n in _NULLABLE
    )
    return (
        f"toInt64({sign}) AS r, toInt64({sign} * u_count) AS c, toInt64({sign} * u_failed) AS f, {nullable}, "
        f"toInt64({sign} * u_unread) AS u"
    )


def _facts_rows(rows_of: RowsOf) -> list[str]:
    """The usage rows of the current facts rows `rows_of` names: the arrays of those written since
    schema 3, the deduplicated `janux_usage` rows (in their traces' days) of older ones."""
    found = []
    if rows_of.facts is not None:
        arrays = ", ".join(f"usage_{name} AS u_{name}" for name, _ in s.ROLLUP_USAGE_FIELDS)
        found.append(
            f"SELECT start_ns AS t, u_key AS k, {_signed(rows_of.sign)} FROM ({rows_of.facts}) "
            f"ARRAY JOIN {arrays} WHERE u_dimension = {{dimension:String}}"
        )
    if rows_of.old is not None:
        columns = ", ".join(
            f"{column} AS u_{name}"
            for name, column in (("count", "count"), ("failed", "failed"), ("input", "input_sum"),
                                 ("output", "output_sum"), ("cost", "cost_sum"), ("unpriced", "unpriced_sum"),
                                 ("unread", "unread_sum"))
        )  # fmt: skip
        rows = (
            f"SELECT trace_start_ns, key, {columns} FROM {s.USAGE} "
            f"PREWHERE day IN (SELECT day FROM ({rows_of.old_candidates})) "
            f"AND trace_id IN (SELECT trace_id FROM ({rows_of.old_candidates})) "
            f"WHERE dimension = {{dimension:String}} AND (trace_id, version) IN ({rows_of.old}) "
            "LIMIT 1 BY trace_id, version, seq"
        )
        found.append(f"SELECT trace_start_ns AS t, key AS k, {_signed(rows_of.sign)} FROM ({rows})")
    return found


def _union(pieces: Sequence[Piece], rows_of: RowsOfFacts) -> str:
    """Every piece's rows, renamed back to the rollup's column names for the outer sums."""
    parts = _rollup_rows(pieces)
    for sign, condition in facts_conditions(pieces).items():
        parts += _facts_rows(rows_of(condition, sign))
    if not parts:  # an empty range: no row
        parts = [_rollup_rows([Piece(s.HOUR_NS, 0, 0, 1)])[0]]
    renamed = ", ".join(f"{n}_sum_ AS {n}_sum, {n}_n_ AS {n}_n" for n in _NULLABLE)
    inner = " UNION ALL ".join(parts)
    return f"SELECT t, k, r AS rows, c AS count, f AS failed, {renamed}, u AS unread_sum FROM ({inner})"


def _summed() -> str:
    """The outer sums: key columns of a `usage_rows.GROUP_COLUMNS` row after the key."""
    nullable = ", ".join(f"if(sum({n}_n) = 0, NULL, sum({n}_sum))" for n in _NULLABLE)
    return f"sum(count), sum(failed), {nullable}, sum(unread_sum)"


def usage_sql(pieces: Sequence[Piece], rows_of: RowsOfFacts) -> str:
    """`usage_by` rows (key, count, failed, input, output, cost, unpriced, unread) of the pieces;
    parameter `dimension`."""
    return f"SELECT k, {_summed()} FROM ({_union(pieces, rows_of)}) GROUP BY k HAVING sum(rows) > 0"


def timeline_units(bucket_ns: int, units: Sequence[int] = UNITS) -> tuple[int, ...] | None:
    """The rollups (of `units`) that can place a trace in buckets `bucket_ns` long: those whose
    bucket divides it (an hour's for whole hours, a minute's for whole minutes); None when none."""
    fit = tuple(unit for unit in units if bucket_ns % unit == 0)
    return fit or None


def timeline_sql(pieces: Sequence[Piece], rows_of: RowsOfFacts, bucket_ns: int) -> str:
    """Model timeline rows (bucket, model, input, output, cost, unpriced) of the pieces (covered by
    rollups of `timeline_units(bucket_ns)` only: a bucket must hold every piece whole)."""
    bucket = f"intDiv(t, {bucket_ns}) * {bucket_ns}"
    nullable = ", ".join(f"if(sum({n}_n) = 0, NULL, sum({n}_sum))" for n in _NULLABLE)
    return (
        f"SELECT {bucket} AS b, k, {nullable} FROM ({_union(pieces, rows_of)}) GROUP BY b, k "
        "HAVING sum(rows) > 0"
    )
