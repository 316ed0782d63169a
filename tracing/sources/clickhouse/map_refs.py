"""The newest references of one node or edge of the agent map, read from the derived rows when it is
inspected (`TraceSource.map_refs`), as `analysis.agentmap.sums.newest_refs` picks them.

A map carries no references: reading `TRACE_REFS_KEPT` of them for every group with every map
was most of a map's time at 10M spans. One group's are read in two bounded steps:

1. the bound: the start of the group's k-th newest row among all its rows (current or replaced,
   any filter; of an edge's failed rows too), from two number columns (`schema.GROUP_HASH`,
   `start_ns`), no join;
2. the rows: the group's rows starting at or after the bound whose (trace, version) is the current
   facts of a trace matching the filter (looked up for those rows' traces only; a row written
   twice counts once), newest first.

When at least `TRACE_REFS_KEPT` rows come back from at or after the bound they hold the newest
(every row before the bound is older than each of them); when fewer do (the filter, replaced
versions or rows written twice left them out), k grows `_GROWTH` times, until the bound takes the
whole group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from janux.tracing.analysis.agentmap.fleet_stats import (
    TRACE_REFS_KEPT,
    FailureRef,
    MapKey,
    MapRefs,
    TraceRef,
)
from janux.tracing.sources.clickhouse import map_parts
from janux.tracing.sources.clickhouse import schema as s

Rows = Callable[[str, dict[str, Any]], list[Any]]
"""Runs SQL with parameters and returns the result rows."""

_NO_FAILURE = "CAST(NULL, 'Nullable(String)') AS failure, '' AS reason"
"""A loop row's (missing) failure and reason, so both tables' rows read alike."""
_GROWTH = 16
"""How much k grows when the rows past a bound were too few."""


@dataclass(frozen=True, slots=True)
class _Group:
    """One node's or edge's rows: the table, their key and the parameters naming it."""

    table: str
    key: str
    """The rollup key over a row (`map_parts.NODE_KEY`/`EDGE_KEY`)."""
    named: str
    """The same key from the parameters (what the rows' hash is compared to)."""
    equal: str
    """The rows' names equal the parameters (a hash names a group; the names prove it)."""
    parameters: dict[str, Any]
    failures: bool
    """An edge: its failed delegations are kept too."""


def _group(key: MapKey) -> _Group:
    if isinstance(key, str):
        return _Group(s.LOOPS, map_parts.NODE_KEY, "[{agent:String}]", "agent = {agent:String}",
                      {"agent": key}, failures=False)  # fmt: skip
    caller, target, kind = key
    return _Group(
        s.DELEGATIONS, map_parts.EDGE_KEY, "[{caller:String}, {target:String}, {kind:String}]",
        "caller = {caller:String} AND target = {target:String} AND toString(kind) = {kind:String}",
        {"caller": caller, "target": target, "kind": kind}, failures=True,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Bound:
    """The start of the k-th newest row of a group (of its failed rows), and their counts."""

    start: int
    rows: int
    failed_start: int
    failed: int


class GroupRefs:
    """`map_refs` over the loop and delegation rows of the current facts (`current(extra, days)`:
    the (trace_id, version) of the facts matching the filter and the SQL condition `extra`, read in
    the partitions the query `days` gives)."""

    def __init__(self, rows: Rows, current: Callable[[str, str], str], parameters: dict[str, Any],
                 group_hash: bool = True) -> None:  # fmt: skip
        self._rows = rows
        self._current = current
        self._parameters = parameters
        self._group_hash = group_hash
        """True when the rows carry `schema.GROUP_HASH` (schema 4); else the key is hashed per row."""

    def _hashed(self, group: _Group) -> str:
        row_hash = s.GROUP_HASH if self._group_hash else f"cityHash64({group.key})"
        return f"{row_hash} = cityHash64({group.named})"

    def _bound(self, group: _Group, k: int) -> _Bound:
        failed = "failure IS NOT NULL" if group.failures else "0"
        sql = (
            f"SELECT -arrayMax(groupArraySorted({k})(-start_ns)), count(), "
            f"-arrayMax(groupArraySortedIf({k})(-start_ns, {failed})), countIf({failed}) "
            f"FROM {group.table} WHERE {self._hashed(group)}"
        )
        found = self._rows(sql, {**self._parameters, **group.parameters})
        start, rows, failed_start, failed_rows = found[0] if found else (0, 0, 0, 0)
        return _Bound(int(start), int(rows), int(failed_start), int(failed_rows))

    def _newest(self, group: _Group, bound: _Bound) -> list[tuple[int, str, str, str | None, str]]:
        """(start, trace, span, failure, reason) of the group's current rows past `bound`, newest
        first: at most `TRACE_REFS_KEPT` rows, and as many failed ones."""
        past = "start_ns >= {bound:Int64}"
        if group.failures:
            past = f"({past} OR (failure IS NOT NULL AND start_ns >= {{failed_bound:Int64}}))"
        past = f"{self._hashed(group)} AND {past}"
        failure = "failure, reason" if group.failures else _NO_FAILURE
        found = f"SELECT trace_id, day FROM {group.table} WHERE {past}"
        current = self._current(f"trace_id IN (SELECT trace_id FROM ({found}))", f"SELECT day FROM ({found})")
        rows = (
            f"SELECT start_ns, trace_id, span_id, {failure}, version, seq "
            f"FROM {group.table} PREWHERE {past} WHERE {group.equal} AND (trace_id, version) IN ({current}) "
            "LIMIT 1 BY trace_id, version, seq"
        )
        sql = (
            f"SELECT start_ns, trace_id, span_id, failure, reason FROM ({rows}) "
            f"ORDER BY start_ns DESC, trace_id DESC, span_id DESC LIMIT {TRACE_REFS_KEPT} BY failure IS NULL"
        )
        parameters = {**self._parameters, **group.parameters, "bound": bound.start,
                      "failed_bound": bound.failed_start}  # fmt: skip
        return [
            (int(start), str(t), str(span), None if failed is None else str(failed), str(reason))
            for start, t, span, failed, reason in self._rows(sql, parameters)
        ]

    def map_refs(self, key: MapKey) -> MapRefs:
        """The newest references of the node (agent) or edge (caller, target, kind) `key`."""
        group, k = _group(key), TRACE_REFS_KEPT
        while True:
            bound = self._bound(group, k)
            found = self._newest(group, bound)
            recent = [r for r in found if r[0] >= bound.start][:TRACE_REFS_KEPT]
            failed = [r for r in found if r[3] is not None][:TRACE_REFS_KEPT]
            if (bound.rows <= k or len(recent) >= TRACE_REFS_KEPT) and (
                bound.failed <= k or len(failed) >= TRACE_REFS_KEPT
            ):
                return MapRefs(
                    [TraceRef(t, start, span) for start, t, span, _, _ in recent],
                    [FailureRef(t, span, start, str(why), reason) for start, t, span, why, reason in failed],
                )
            k *= _GROWTH
