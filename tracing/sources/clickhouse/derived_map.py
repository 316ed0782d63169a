"""The agent map added up in ClickHouse from the derived loop and delegation rows.

SQL that mirrors `analysis.agentmap.sums.MapSums` (held to it by the parity tests of
`tests/tracing/sources/test_clickhouse_derived.py`, which compare whole maps): per path, runs,
errors and own/inclusive usage summed (NULL cost + x = x); per node, the path sums of its paths,
nearest-rank p50/p95 of closed loops' durations (`sums.percentile`) and distinct traces; the
sorted priced turn costs and the unpriced turns; per edge (caller, target, kind), counts, attempts,
inclusive usage, failures by kind and by reason, percentiles and distinct traces; the timeline as
own usage per (bucket of loop start, agent). Only groups come back to Python, never a row per loop:
the map costs what it shows plus a few scans of the rows in the range. A node's or edge's newest
traces are read when it is inspected (`map_refs`), not with the map.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from janux.tracing.analysis.agentmap.fleet_stats import (
    AgentMap,
    AgentStats,
    EdgeStats,
    PathStats,
)
from janux.tracing.analysis.agentmap.sums import edge_order, node_order, nodes_of_paths, path_order
from janux.tracing.sources.clickhouse import schema as s
from janux.tracing.sources.clickhouse.map_rollup import (
    MINUTE_NS,
    UNITS,
    MapGroup,
    Piece,
    RowsOf,
    counted_percentile,
    cover,
    expand,
    facts_conditions,
    groups,
    read_sql,
    rollup_parts,
    rows_parts,
    timeline_loops,
)
from janux.tracing.sources.clickhouse.schema import HOUR_NS
from janux.usage import Usage

Rows = Callable[[str, dict[str, Any]], list[Any]]
"""Runs SQL with parameters and returns the result rows."""


def _sums(prefix: str) -> str:
    return ", ".join(f"sum({prefix}_{part})" for part in ("input", "output", "cost", "unpriced"))


def _usage(values: Sequence[Any]) -> Usage:
    tokens_in, tokens_out, cost, unpriced = values
    return Usage(int(tokens_in or 0), int(tokens_out or 0), None if cost is None else float(cost),
                    int(unpriced or 0))  # fmt: skip


def _percentiles(column: str, condition: str) -> str:
    """p50 and p95 of `column` by `sums.percentile`'s nearest rank: sorted[max(1, ceil(q/100 * n))]."""
    values = f"arraySort(groupArrayIf({column}, {condition}))"
    rank = "least(length({v}), greatest(1, toUInt64(ceil({q} / 100 * length({v})))))"
    return ", ".join(
        f"if(length({values}) = 0, NULL, {values}[{rank.format(v=values, q=q)}])" for q in (50, 95)
    )


def _counts(summed: Sequence[Any]) -> dict[str, int]:
    """A `sumMap` result (keys, counts) as a dict."""
    keys, counts = summed
    return {str(key): int(count) for key, count in zip(keys, counts, strict=True) if int(count)}


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


class MapQueries:
    """The agent map of the traces whose current facts `current` selects (trace_id, version)."""

    def __init__(self, rows: Rows, current: str, parameters: dict[str, Any]) -> None:
        self._rows = rows
        self._parameters = parameters
        self._loops = f"(SELECT * FROM {s.LOOPS} FINAL WHERE (trace_id, version) IN ({current}))"
        self._delegations = f"(SELECT * FROM {s.DELEGATIONS} FINAL WHERE (trace_id, version) IN ({current}))"
        self._current = current

    def _query(self, sql: str) -> list[Any]:
        return self._rows(sql, dict(self._parameters))

    def build(self, bucket_ns: int | None) -> AgentMap:
        """The whole map (the timeline too when `bucket_ns` is set)."""
        paths = self._paths()
        turns = self._query(
            "SELECT arraySort(groupArrayIf(inclusive_cost, top AND inclusive_cost IS NOT NULL)), "
            f"countIf(top AND inclusive_cost IS NULL) FROM {self._loops}"
        )
        traces = self._query(f"SELECT count() FROM ({self._current})")
        nodes = self._nodes(paths)
        for path in paths:
            path.own, path.inclusive = path.own.rounded(), path.inclusive.rounded()
        return AgentMap(
            nodes=nodes,
            edges=self._edges(),
            paths=sorted(paths, key=path_order),
            traces=int(traces[0][0]) if traces else 0,
            turn_costs=[float(c) for c in turns[0][0]] if turns else [],
            unpriced_turns=int(turns[0][1]) if turns else 0,
            timeline=self.timeline(bucket_ns) if bucket_ns else {},
        )

    def _paths(self) -> list[PathStats]:
        sql = (
            f"SELECT path, count(), countIf(error), {_sums('own')}, {_sums('inclusive')} FROM {self._loops} "
            "GROUP BY path"
        )
        return [
            PathStats(
                tuple(str(p) for p in row[0]), int(row[1]), int(row[2]), _usage(row[3:7]), _usage(row[7:11])
            )
            for row in self._query(sql)
        ]

    def _nodes(self, paths: list[PathStats]) -> list[AgentStats]:
        nodes = nodes_of_paths(paths)
        sql = (
            f"SELECT agent, {_percentiles('duration_ms', 'duration_ms IS NOT NULL')}, uniqExact(trace_id) "
            f"FROM {self._loops} GROUP BY agent"
        )
        for agent, p50, p95, traces in self._query(sql):
            found = nodes.get(str(agent))
            if found is not None:
                found.p50_ms, found.p95_ms, found.traces = _float(p50), _float(p95), int(traces)
        for node in nodes.values():
            node.own, node.inclusive = node.own.rounded(), node.inclusive.rounded()
        return sorted(nodes.values(), key=node_order)

    def _edges(self) -> list[EdgeStats]:
        failed = "failure IS NOT NULL"
        sql = (
            f"SELECT caller, target, kind, count(), sum(attempts), {_sums('cost')}, countIf({failed}), "
            f"{_percentiles('duration_ms', 'duration_ms IS NOT NULL')}, uniqExact(trace_id), "
            f"sumMapIf([assumeNotNull(failure)], [toUInt64(1)], {failed}), "
            f"sumMapIf([reason], [toUInt64(1)], {failed}) "
            f"FROM {self._delegations} GROUP BY caller, target, kind"
        )
        edges = {}
        for row in self._query(sql):
            edge = EdgeStats(str(row[0]), str(row[1]), str(row[2]), count=int(row[3]), attempts=int(row[4]))
            edge.cost, edge.failed = _usage(row[5:9]).rounded(), int(row[9])
            edge.p50_ms, edge.p95_ms, edge.traces = _float(row[10]), _float(row[11]), int(row[12])
            edge.failures = _counts(row[13])
            edge.reasons = _counts(row[14])
            edges[edge.key] = edge
        return sorted(edges.values(), key=edge_order)

    def timeline(self, bucket_ns: int) -> dict[tuple[int, str], Usage]:
        """Own usage per (bucket of loop start, agent), from the loop rows."""
        return _timeline(self._query, self._loops, bucket_ns)


def _timeline(query: Callable[[str], list[Any]], loops: str, bucket_ns: int) -> dict[tuple[int, str], Usage]:
    """Own usage per (bucket of loop start, agent) of the loop rows `loops` (a table or a query in
    parentheses)."""
    sql = (
        f"SELECT intDiv(start_ns, {int(bucket_ns)}) * {int(bucket_ns)} AS b, agent, {_sums('own')} "
        f"FROM {loops} GROUP BY b, agent ORDER BY b, agent"
    )
    return {(int(row[0]), str(row[1])): _usage(row[2:6]).rounded() for row in query(sql)}


def _group_usage(sums: dict[str, float], prefix: str) -> Usage:
    """Usage `prefix` (`a`/`b`) of a rollup group (cost NULL when no row had one)."""
    cost = sums[f"{prefix}_cost"] if sums[f"{prefix}_cost_n"] else None
    return Usage(int(sums[f"{prefix}_input"]), int(sums[f"{prefix}_output"]), cost,
                 int(sums[f"{prefix}_unpriced"]))  # fmt: skip


def _percentile_pair(vals: Sequence[tuple[float, int]]) -> tuple[float | None, float | None]:
    return counted_percentile(vals, 50), counted_percentile(vals, 95)


RowsOfFacts = Callable[[str, bool, int], RowsOf]
"""`rows_of(extra, filtered, sign)`: the per-trace rows of the current facts matching `extra` (and
the map's filter when `filtered`), counted `sign` times."""


class RolledMap:
    """The agent map from the rollups (`map_rollup`) over a range [`start`, `end`) of trace start
    with no other filter: its pieces (`map_rollup.cover`: whole hours of `janux_map_hourly`, whole
    minutes of `janux_map_minute` at its edges, the partial minutes from the facts rows; each added
    or taken back), summed in one query."""

    def __init__(
        self, rows: Rows, start: int | None, end: int | None, rows_of: RowsOfFacts, minutes: bool = True
    ) -> None:
        self._rows = rows
        self._start, self._end = start, end
        self._rows_of = rows_of
        self._units = UNITS if minutes else (HOUR_NS,)
        """The rollups there are: the minute one since schema 6."""

    def _parts(self, pieces: list[Piece], parts: str, traces_only: bool = False) -> list[str]:
        """The rollup rows of `pieces` (of the parts the condition `parts` keeps)."""
        found = rollup_parts(pieces, parts)
        for sign, condition in facts_conditions(pieces).items():
            computed = rows_parts(self._rows_of(condition, False, sign), traces_only)
            found += [f"SELECT * FROM ({part}) WHERE {parts}" for part in computed]
        return found

    def trace_count(self, parameters: dict[str, Any]) -> int:
        """How many traces the range holds: the `trace` rows of its pieces."""
        parts = self._parts(cover(self._start, self._end, self._units), "part = 'trace'", traces_only=True)
        found = self._rows(f"SELECT sum(rows) FROM ({' UNION ALL '.join(parts)})", dict(parameters))
        return int(found[0][0] or 0) if found else 0

    def build(self, bucket_ns: int | None, parameters: dict[str, Any]) -> AgentMap:
        """The whole map (the timeline too when `bucket_ns` is set). A timeline by whole hours is
        read with the map; by whole minutes (15, 30) from the minute rollup's timeline rows of the
        range's whole minutes (and the facts rows of its partial ones), so no loop is read."""
        hourly = bucket_ns is not None and bucket_ns % HOUR_NS == 0
        by_minute = bucket_ns is not None and not hourly and bucket_ns % MINUTE_NS == 0 \
            and MINUTE_NS in self._units  # fmt: skip
        pieces = cover(self._start, self._end, self._units)
        parts = self._parts(pieces, "1" if hourly else "part != 'timeline'")
        if by_minute:
            parts += self._parts(cover(self._start, self._end, (MINUTE_NS,)), "part = 'timeline'")
        at_unit = int(bucket_ns) if by_minute and bucket_ns is not None else HOUR_NS
        found = groups(self._rows(read_sql(parts, at_unit), dict(parameters)))
        by_part: dict[str, list[MapGroup]] = {}
        for group in found:
            by_part.setdefault(group.part, []).append(group)
        paths = [
            PathStats(g.key, int(g.sums["runs"]), int(g.sums["errors"]), _group_usage(g.sums, "a"),
                      _group_usage(g.sums, "b"))
            for g in by_part.get("path", [])
        ]  # fmt: skip
        nodes = self._nodes(paths, by_part.get("node", []))
        for path in paths:
            path.own, path.inclusive = path.own.rounded(), path.inclusive.rounded()
        turns = by_part.get("turn", [])
        timeline: dict[tuple[int, str], Usage] = {}
        if bucket_ns and (hourly or by_minute):
            timeline = _rolled_timeline(by_part.get("timeline", []), bucket_ns)
        elif bucket_ns:
            timeline = self._timeline(bucket_ns, parameters)
        return AgentMap(
            nodes=nodes,
            edges=self._edges(by_part.get("edge", [])),
            paths=sorted(paths, key=path_order),
            traces=sum(int(g.sums["rows"]) for g in by_part.get("trace", [])),
            turn_costs=expand(turns[0].vals) if turns else [],
            unpriced_turns=int(turns[0].sums["unpriced_turns"]) if turns else 0,
            timeline=timeline,
        )

    def _timeline(self, bucket_ns: int, parameters: dict[str, Any]) -> dict[tuple[int, str], Usage]:
        """The timeline by a bucket the rollup's hours cannot place: from the loops the range's
        current facts rows carry (`map_rollup.timeline_loops`)."""
        loops = timeline_loops(self._rows_of("1", True, 1))
        if loops is None:
            return {}
        return _timeline(lambda sql: self._rows(sql, dict(parameters)), f"({loops})", bucket_ns)

    def _nodes(self, paths: list[PathStats], found: list[MapGroup]) -> list[AgentStats]:
        nodes = nodes_of_paths(paths)
        for group in found:
            named = nodes.get(group.key[0])
            if named is not None:
                named.p50_ms, named.p95_ms = _percentile_pair(group.vals)
                named.traces = int(group.sums["traces"])
        for node in nodes.values():
            node.own, node.inclusive = node.own.rounded(), node.inclusive.rounded()
        return sorted(nodes.values(), key=node_order)

    def _edges(self, found: list[MapGroup]) -> list[EdgeStats]:
        edges: dict[tuple[str, str, str], EdgeStats] = {}
        for g in found:
            caller, target, kind = g.key
            edge = EdgeStats(
                caller, target, kind, count=int(g.sums["runs"]), attempts=int(g.sums["attempts"])
            )
            edge.cost, edge.failed = _group_usage(g.sums, "a").rounded(), int(g.sums["failed"])
            edge.p50_ms, edge.p95_ms = _percentile_pair(g.vals)
            edge.traces, edge.failures, edge.reasons = int(g.sums["traces"]), g.failures, g.reasons
            edges[edge.key] = edge
        return sorted(edges.values(), key=edge_order)


def _rolled_timeline(found: list[MapGroup], bucket_ns: int) -> dict[tuple[int, str], Usage]:
    """Own usage per (bucket of loop start, agent) from the rollup's hourly `timeline` groups."""
    timeline: dict[tuple[int, str], Usage] = {}
    for group in found:
        key = (group.at_ns // bucket_ns * bucket_ns, group.key[0])
        timeline.setdefault(key, Usage()).add(_group_usage(group.sums, "a"))
    return {key: usage.rounded() for key, usage in sorted(timeline.items())}
