"""The agent map read from its rollups (`schema.MAP_HOURLY`, schema 3, and `schema.MAP_MINUTE`,
schema 6; rows: `map_parts`).

The same add/take-back scheme as the usage rollup: each facts row carries the trace's loops and
delegations as arrays (`schema.MAP_FACTS_COLUMNS`) and, when it replaces an earlier version of the
trace, that version's (`replaced_*`); views add the first and take back the second, so a query sums
what is there without `FINAL`. Reads cover a range with pieces (`cover`): the rollup's whole hours,
the minute rollup's whole minutes at its edges, and the partial minutes left from the loops and
delegations the current facts rows of those seconds carry (`rows_parts`;
`janux_loops`/`janux_delegations` only for facts rows written before schema 3), each piece added or
taken back, all summed in one query (`read_sql`); `derived_map.RolledMap` turns the groups into the
`AgentMap`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any

from janux.tracing.sources.clickhouse import map_parts
from janux.tracing.sources.clickhouse import schema as s

HOUR_NS = 3_600 * 10**9
MINUTE_NS = map_parts.MINUTE_NS


def _rows_source(table: str, fields: Sequence[str], group: str, rows_of: RowsOf) -> str:
    """The rows of `table` of the current facts written before schema 3 (`rows_of.old`),
    deduplicated (a row written twice after a kill is one identical row) without `FINAL`, as a
    rollup source. The partitions of those traces' days only (a trace's rows share its facts row's
    day), in them the rows of the candidate traces first (by the primary key: granules of other
    traces are skipped), then the current (trace, version) pairs."""
    rows = (
        f"SELECT trace_id, version, seq, {', '.join(fields)} FROM {table} "
        f"PREWHERE day IN (SELECT day FROM ({rows_of.old_candidates})) "
        f"AND trace_id IN (SELECT trace_id FROM ({rows_of.old_candidates})) "
        f"WHERE (trace_id, version) IN ({rows_of.old}) LIMIT 1 BY trace_id, version, seq"
    )
    return map_parts.numbered(rows, fields, group, "0", rows_of.sign)


@dataclass(frozen=True, slots=True)
class RowsOf:
    """Per-trace rows to add up as rollup rows, each counted `sign` times: of the current facts
    rows written at schema 3 or later (`map_rows` = 1), the loops and delegations they carry as
    arrays (`schema.MAP_FACTS_COLUMNS`); of older ones, their rows in `janux_loops` and
    `janux_delegations`."""

    facts: str | None
    """The current facts rows with `map_rows` = 1: their `start_ns` and loop and delegation
    arrays; None when there is none. Facts are one row per trace, so a range of them is the
    range's traces, where the per-trace tables (ordered by trace id) are read for every trace of
    their days."""
    old: str | None
    """(trace_id, version) of the current facts rows with `map_rows` = 0; None when there is none
    (the normal case: only a database upgraded from schema 2 has such rows)."""
    old_candidates: str | None
    """(trace_id, day) of every facts row with `map_rows` = 0 (any version, no `FINAL`) matching
    the same conditions: a superset of `old`'s traces, and their partitions (a trace's day never
    changes)."""
    sign: int = 1


def loop_sources(rows_of: RowsOf) -> str | None:
    """The loops of the per-trace rows `rows_of` names, as a `map_parts.loop_parts` source (None:
    there is none)."""
    found = []
    if rows_of.facts is not None:
        found.append(map_parts.carried_loops(f"({rows_of.facts})", s.MAP_LOOP_FIELDS, "0", rows_of.sign))
    if rows_of.old is not None:
        found.append(_rows_source(s.LOOPS, s.MAP_LOOP_FIELDS, "agent", rows_of))
    return " UNION ALL ".join(found) or None


_TIMELINE_FIELDS = "start_ns, agent, own_input, own_output, own_cost, own_unpriced"


def timeline_loops(rows_of: RowsOf) -> str | None:
    """The loops of the per-trace rows `rows_of` names, their start, agent and own usage (what a
    timeline sums; None: there is none). Loops of facts rows written before schema 3 are read as
    before schema 3: the loop rows of their (trace, version) (`FINAL`: a timeline reads the
    whole range, not an edge of it)."""
    found = []
    if rows_of.facts is not None:
        carried = map_parts.carried_loops(f"({rows_of.facts})", s.MAP_LOOP_FIELDS, "0", rows_of.sign)
        found.append(f"SELECT {_TIMELINE_FIELDS} FROM ({carried})")
    if rows_of.old is not None:
        found.append(
            f"SELECT {_TIMELINE_FIELDS} FROM {s.LOOPS} FINAL WHERE (trace_id, version) IN ({rows_of.old})"
        )
    return " UNION ALL ".join(found) or None


def rows_parts(rows_of: RowsOf, traces_only: bool = False) -> list[str]:
    """Rollup rows computed from the per-trace rows `rows_of` names (only their `trace` rows when
    `traces_only`); buckets of trace start are not set (reads sum them away), the timeline's are
    minutes of loop start (`read_sql` folds them into its buckets)."""
    loops, sign = loop_sources(rows_of), int(rows_of.sign)
    if loops is None:
        return []
    delegations, traces = [], []
    counted = f"SELECT toInt64(0) AS s, toInt64({sign}) AS g FROM"
    if rows_of.facts is not None:
        facts = f"({rows_of.facts})"
        delegations.append(map_parts.carried_delegations(facts, s.MAP_DELEGATION_FIELDS, "0", sign))
        traces.append(f"{counted} {facts}")
    if rows_of.old is not None:
        delegations.append(
            _rows_source(s.DELEGATIONS, s.MAP_DELEGATION_FIELDS, "caller, target, kind", rows_of)
        )
        traces.append(f"{counted} ({rows_of.old})")
    counted_traces = map_parts.trace_parts(" UNION ALL ".join(traces), MINUTE_NS)
    if traces_only:
        return [counted_traces]
    return [
        map_parts.loop_parts(loops, MINUTE_NS),
        map_parts.delegation_parts(" UNION ALL ".join(delegations), MINUTE_NS),
        counted_traces,
    ]


@dataclass(frozen=True, slots=True)
class Piece:
    """A range [`lo`, `hi`) of trace start (None: unbounded on that side) read from the rollup of
    buckets `unit` long (`HOUR_NS`, `MINUTE_NS`; 0: the facts rows), added (`sign` 1) or taken
    back (-1)."""

    unit: int
    lo: int | None
    hi: int | None
    sign: int

    def where(self, column: str) -> str:
        """The rows of this piece by the time in `column`."""
        bounds = [*([f"{column} >= {self.lo}"] if self.lo is not None else []),
                  *([f"{column} < {self.hi}"] if self.hi is not None else [])]  # fmt: skip
        return "(" + (" AND ".join(bounds) or "1") + ")"


UNITS = (HOUR_NS, MINUTE_NS)
"""The rollups' bucket lengths, coarsest first (then the facts rows)."""


def cover(start: int | None, end: int | None, units: Sequence[int] = UNITS) -> list[Piece]:
    """Pieces whose signed sum is the range [`start`, `end`): the whole buckets of the coarsest
    rollup in it, and at each edge the rest, covered the same way by the next finer one (the facts
    rows last). An edge longer than half a bucket is read as that whole bucket with the rest of it
    taken back, so each edge reads at most half a bucket of each finer level: at most 30 minutes
    of minute buckets and 30 seconds of facts rows."""
    return _cover(start, end, 1, tuple(units))


def _cover(a: int | None, b: int | None, sign: int, units: tuple[int, ...]) -> list[Piece]:
    if a is not None and b is not None and a >= b:
        return []
    if not units:
        return [Piece(0, a, b, sign)]
    unit, finer = units[0], units[1:]
    lo = None if a is None else -(-a // unit) * unit
    hi = None if b is None else b // unit * unit
    if lo is not None and hi is not None and lo > hi:  # inside one bucket
        return _cover(a, b, sign, finer)
    pieces = [Piece(unit, lo, hi, sign)] if lo is None or hi is None or lo < hi else []
    if a is not None and lo is not None and a < lo:
        if lo - a > unit // 2:
            pieces += [Piece(unit, lo - unit, lo, sign), *_cover(lo - unit, a, -sign, finer)]
        else:
            pieces += _cover(a, lo, sign, finer)
    if b is not None and hi is not None and b > hi:
        if b - hi > unit // 2:
            pieces += [Piece(unit, hi, hi + unit, sign), *_cover(b, hi + unit, -sign, finer)]
        else:
            pieces += _cover(hi, b, sign, finer)
    return pieces


def rollup_parts(pieces: Sequence[Piece], parts: str) -> list[str]:
    """The rollup rows (those of the parts the condition `parts` keeps) of the rollup pieces of
    `pieces`, one SELECT per (rollup, sign); a piece taken back has every sum negated."""
    found = []
    for unit in UNITS:
        for sign in (1, -1):
            mine = [p for p in pieces if p.unit == unit and p.sign == sign]
            if mine:
                where = " OR ".join(p.where(map_parts.bucket_column(unit)) for p in mine)
                found.append(rollup_rows(unit, f"({parts}) AND ({where})", sign))
    return found


def facts_conditions(pieces: Sequence[Piece]) -> dict[int, str]:
    """sign -> the condition on the facts' `start_ns` of the facts-row pieces of `pieces` with it."""
    found = {}
    for sign in (1, -1):
        mine = [p.where("start_ns") for p in pieces if p.unit == 0 and p.sign == sign]
        if mine:
            found[sign] = " OR ".join(mine)
    return found


@dataclass(slots=True)
class MapGroup:
    """One summed (part, key, at_ns) group of the rollup."""

    part: str
    key: tuple[str, ...]
    at_ns: int
    sums: dict[str, float]
    vals: list[tuple[float, int]] = field(default_factory=list)
    """(value, count) of the durations (turn costs for `turn`), counts > 0."""
    failures: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)


def read_sql(parts: Iterable[str], at_unit: int = HOUR_NS) -> str:
    """The groups of the rollup rows `parts` (SELECTs of the rollup's columns), summed; timeline
    rows grouped by buckets of loop start `at_unit` long."""
    inner = " UNION ALL ".join(parts)
    sums = ", ".join(f"sum({n})" for n in map_parts.MAP_SUMS)
    return (
        f"SELECT part, key, intDiv(at_ns, {int(at_unit)}) * {int(at_unit)} AS at, {sums}, "
        "arrayMap(k -> reinterpretAsFloat64(k), mapKeys(sumMap(vals))) AS vk, mapValues(sumMap(vals)), "
        f"sumMap(failures), sumMap(reasons) FROM ({inner}) "
        "GROUP BY part, key, at HAVING sum(rows) > 0"
    )


def rollup_rows(unit: int, where: str, sign: int = 1) -> str:
    """The rows of the rollup of buckets `unit` long that `where` selects, every sum times `sign`."""
    columns = []
    for name, _ in map_parts.map_columns(map_parts.bucket_column(unit)):
        if sign < 0 and name in map_parts.MAP_SUMS:
            columns.append(f"-{name} AS {name}")
        elif sign < 0 and name in dict(map_parts.MAP_MAPS):
            columns.append(f"mapApply((k, v) -> (k, -v), {name}) AS {name}")
        else:
            columns.append(name)
    rows = f"SELECT * FROM {s.map_rollup_table(unit)} WHERE {where}"
    if sign > 0:
        return rows
    # negated outside: an alias named like its column would change what `where` selects
    return f"SELECT {', '.join(columns)} FROM ({rows})"


def _counts(summed: Any) -> dict[str, int]:
    pairs = summed.items() if isinstance(summed, dict) else zip(*summed, strict=True)
    return {str(k): int(v) for k, v in pairs if int(v)}


def groups(rows: Iterable[Sequence[Any]]) -> list[MapGroup]:
    """`read_sql`'s rows as groups."""
    found = []
    width = len(map_parts.MAP_SUMS)
    for row in rows:
        part, key, at_ns, *rest = row
        sums = {
            n: float(v) if n.endswith("_cost") else int(v)
            for n, v in zip(map_parts.MAP_SUMS, rest[:width], strict=True)
        }
        keys, counts, failures, reasons = rest[width:]
        vals = [(float(k), int(c)) for k, c in zip(keys, counts, strict=True) if int(c)]
        found.append(MapGroup(str(part), tuple(str(k) for k in key), int(at_ns), sums, vals,
                              _counts(failures), _counts(reasons)))  # fmt: skip
    return found


def expand(vals: Sequence[tuple[float, int]]) -> list[float]:
    """The values, each as many times as counted, sorted."""
    return list(chain.from_iterable(repeat(value, count) for value, count in sorted(vals)))


def counted_percentile(vals: Sequence[tuple[float, int]], q: float) -> float | None:
    """`sums.percentile(expand(vals), q)` without expanding: the nearest-rank value of the counts."""
    total = sum(count for _, count in vals)
    if not total:
        return None
    rank, seen = min(max(1, math.ceil(q / 100 * total)), total), 0
    for value, count in sorted(vals):
        seen += count
        if seen >= rank:
            return value
    return None  # not reached: the counts add up to `total`
