"""The agent map read from its hourly rollup (`schema.MAP_HOURLY`, schema 3; rows: `map_parts`).

The same add/take-back scheme as the usage rollup: each facts row carries the trace's loops and
delegations as arrays (`schema.MAP_FACTS_COLUMNS`) and, when it replaces an earlier version of the
trace, that version's (`replaced_*`); views add the first and take back the second, so a query sums
what is there without `FINAL`. Reads split the range at hours as `usage_rollup` does: the rollup for
the whole hours, the same rows computed from the loops and delegations the current facts rows of
the partial hours carry (`rows_parts`; `janux_loops`/`janux_delegations` only for facts rows written
before schema 3), all summed in one query (`read_sql`); `derived_map.RolledMap`
turns the groups into the `AgentMap`.
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


def rows_parts(rows_of: RowsOf) -> list[str]:
    """Rollup rows computed from the per-trace rows `rows_of` names; hours are not set (reads sum
    them away)."""
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
    return [
        map_parts.loop_parts(loops),
        map_parts.delegation_parts(" UNION ALL ".join(delegations)),
        map_parts.trace_parts(" UNION ALL ".join(traces)),
    ]


@dataclass(frozen=True, slots=True)
class EdgePlan:
    """How a range split at hours (`usage_rollup.HourSplit`) reads its partial hours. A partial
    hour longer than half an hour is read as its whole rollup hour minus the rows of the rest of
    that hour (taken back, as the rollup's views take back a replaced version), so at most half an
    hour of per-trace rows is read at each edge of a range."""

    rollup_where: str
    """The rollup hours summed."""
    added: str | None
    """The partial hours' rows added (a condition on the facts' start_ns), None when none."""
    taken: str | None
    """The rows taken back from the whole hours summed, None when none."""


def edge_plan(lo: int | None, hi: int | None, start: int | None, end: int | None) -> EdgePlan:
    """The plan of a range [`start`, `end`) whose whole hours are [`lo`, `hi`) (None: unbounded)."""
    added, taken = [], []
    if start is not None and lo is not None and start < lo:
        if lo - start > HOUR_NS // 2:
            lo -= HOUR_NS
            taken.append(f"(start_ns >= {lo} AND start_ns < {start})")
        else:
            added.append(f"(start_ns >= {start} AND start_ns < {lo})")
    if end is not None and hi is not None and end > hi:
        if end - hi > HOUR_NS // 2:
            hi += HOUR_NS
            taken.append(f"(start_ns >= {end} AND start_ns < {hi})")
        else:
            added.append(f"(start_ns >= {hi} AND start_ns < {end})")
    where = " AND ".join(["1", *([f"hour_ns >= {lo}"] if lo is not None else []),
                          *([f"hour_ns < {hi}"] if hi is not None else [])])  # fmt: skip
    return EdgePlan(where, " OR ".join(added) or None, " OR ".join(taken) or None)


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


def read_sql(parts: Iterable[str], timeline: bool) -> str:
    """The groups of the rollup rows `parts` (SELECTs of the rollup's columns), summed."""
    inner = " UNION ALL ".join(parts)
    sums = ", ".join(f"sum({n})" for n in map_parts.MAP_SUMS)
    where = "" if timeline else " WHERE part != 'timeline'"
    return (
        f"SELECT part, key, at_ns, {sums}, "
        "arrayMap(k -> reinterpretAsFloat64(k), mapKeys(sumMap(vals))) AS vk, mapValues(sumMap(vals)), "
        f"sumMap(failures), sumMap(reasons) FROM ({inner}){where} "
        "GROUP BY part, key, at_ns HAVING sum(rows) > 0"
    )


def rollup_rows(where: str) -> str:
    """The rollup's rows of the hours `where` selects."""
    return f"SELECT {', '.join(n for n, _ in map_parts.MAP_COLUMNS)} FROM {s.MAP_HOURLY} WHERE {where}"


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
