"""The agent map added up in ClickHouse from the derived loop and delegation rows.

SQL that mirrors `analysis.agentmap.sums.MapSums` (held to it by the parity tests of
`tests/tracing/sources/test_clickhouse_derived.py`, which compare whole maps): per path, runs,
errors and own/inclusive usage summed (NULL cost + x = x); per node, the path sums of its paths,
nearest-rank p50/p95 of closed loops' durations (`sums.percentile`), distinct traces and the
`TRACE_REFS_KEPT` newest (start, trace, span) references; the sorted priced turn costs and the
unpriced turns; per edge (caller, target, kind), counts, attempts, inclusive usage, failures by
kind and by reason, percentiles, distinct traces and the newest references and failures; the
timeline as own usage per (bucket of loop start, agent). The newest references are read in two
passes: the group queries keep only the start of each group's `TRACE_REFS_KEPT`-th newest row, and
one more query reads the rows at or after it (about `TRACE_REFS_KEPT` per group, ties included),
which Python orders as `sums` does. So only groups and those rows come back to Python, never a row
per loop: the map costs what it shows plus a few scans of the rows in the range.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any

from janux.tracing.analysis.agentmap.fleet_stats import (
    TRACE_REFS_KEPT,
    AgentMap,
    AgentStats,
    EdgeStats,
    FailureRef,
    PathStats,
    TraceRef,
)
from janux.tracing.analysis.agentmap.sums import edge_order, node_order, nodes_of_paths, path_order
from janux.tracing.sources.clickhouse import map_parts
from janux.tracing.sources.clickhouse import schema as s
from janux.tracing.sources.clickhouse.map_rollup import (
    MapGroup,
    counted_percentile,
    expand,
    groups,
    read_sql,
    rollup_rows,
    rows_parts,
)
from janux.tracing.sources.clickhouse.schema import HOUR_NS
from janux.tracing.sources.clickhouse.usage_rollup import HourSplit
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


def _threshold(condition: str = "1") -> str:
    """The start of the `TRACE_REFS_KEPT`-th newest row of the group meeting `condition` (of the
    oldest when fewer; 0 when none): every row of the newest references starts at or after it.
    Only numbers are kept per group, so this costs little more than a count; the references are
    then read from the rows past it (`MapQueries._recent_*`)."""
    return f"-arrayMax(groupArraySortedIf({TRACE_REFS_KEPT})(-start_ns, {condition}))"


def _newest_refs(rows: list[tuple[Any, ...]]) -> list[Any]:
    """`heapq.nlargest` of the references, as `agentmap.sums` keeps them."""
    return heapq.nlargest(TRACE_REFS_KEPT, rows)


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
            f"SELECT agent, {_percentiles('duration_ms', 'duration_ms IS NOT NULL')}, uniqExact(trace_id), "
            f"{_threshold()} FROM {self._loops} GROUP BY agent"
        )
        thresholds: dict[str, int] = {}
        for agent, p50, p95, traces, threshold in self._query(sql):
            found = nodes.get(str(agent))
            if found is None:
                continue
            node = found
            node.p50_ms, node.p95_ms, node.traces = _float(p50), _float(p95), int(traces)
            thresholds[str(agent)] = int(threshold)
        for name, refs in self._recent_loops(thresholds).items():
            nodes[name].recent = [TraceRef(t, start, span) for start, t, span in _newest_refs(refs)]
        for node in nodes.values():
            node.own, node.inclusive = node.own.rounded(), node.inclusive.rounded()
        return sorted(nodes.values(), key=node_order)

    def _recent_loops(self, thresholds: dict[str, int]) -> dict[str, list[tuple[int, str, str]]]:
        """(start, trace, span) of every loop of each agent starting at or after its threshold."""
        if not thresholds:
            return {}
        names = sorted(thresholds)
        parameters = {**self._parameters, "agents": names, "starts": [thresholds[n] for n in names]}
        sql = (
            f"SELECT agent, start_ns, trace_id, span_id FROM {self._loops} WHERE "
            "start_ns >= transform(agent, {agents:Array(String)}, {starts:Array(Int64)}, toInt64(0))"
        )
        found: dict[str, list[tuple[int, str, str]]] = {}
        for agent, start, trace_id, span_id in self._rows(sql, parameters):
            found.setdefault(str(agent), []).append((int(start), str(trace_id), str(span_id)))
        return found

    def _recent_delegations(self, thresholds: dict[tuple[str, str, str], tuple[int, int, int]]) -> dict[
        tuple[str, str, str], list[tuple[Any, ...]]
    ]:  # fmt: skip
        """(start, trace, span, failure, reason) of every delegation of each edge starting at or
        after its threshold, or failed and starting at or after its failures' threshold."""
        if not thresholds:
            return {}
        keys = sorted(thresholds)
        parameters = {
            **self._parameters, "groups": [thresholds[k][2] for k in keys],
            "starts": [thresholds[k][0] for k in keys], "failed_starts": [thresholds[k][1] for k in keys],
        }  # fmt: skip
        group = "cityHash64(caller, target, kind)"
        at = f"transform({group}, {{groups:Array(UInt64)}}, {{%s:Array(Int64)}}, toInt64(0))"
        sql = (
            "SELECT caller, target, kind, start_ns, trace_id, span_id, failure, reason "
            f"FROM {self._delegations} WHERE start_ns >= {at % 'starts'} "
            f"OR (failure IS NOT NULL AND start_ns >= {at % 'failed_starts'})"
        )
        found: dict[tuple[str, str, str], list[tuple[Any, ...]]] = {}
        for caller, target, kind, start, trace_id, span_id, failure, reason in self._rows(sql, parameters):
            ref = (
                int(start),
                str(trace_id),
                str(span_id),
                None if failure is None else str(failure),
                str(reason),
            )
            found.setdefault((str(caller), str(target), str(kind)), []).append(ref)
        return found

    def _edges(self) -> list[EdgeStats]:
        failed = "failure IS NOT NULL"
        sql = (
            f"SELECT caller, target, kind, count(), sum(attempts), {_sums('cost')}, countIf({failed}), "
            f"{_percentiles('duration_ms', 'duration_ms IS NOT NULL')}, uniqExact(trace_id), {_threshold()}, "
            f"{_threshold(failed)}, "
            f"sumMapIf([assumeNotNull(failure)], [toUInt64(1)], {failed}), "
            f"sumMapIf([reason], [toUInt64(1)], {failed}), cityHash64(caller, target, kind) "
            f"FROM {self._delegations} GROUP BY caller, target, kind"
        )
        edges = {}
        thresholds: dict[tuple[str, str, str], tuple[int, int, int]] = {}
        for row in self._query(sql):
            edge = EdgeStats(str(row[0]), str(row[1]), str(row[2]), count=int(row[3]), attempts=int(row[4]))
            edge.cost, edge.failed = _usage(row[5:9]).rounded(), int(row[9])
            edge.p50_ms, edge.p95_ms, edge.traces = _float(row[10]), _float(row[11]), int(row[12])
            thresholds[edge.key] = (int(row[13]), int(row[14]), int(row[17]))
            edge.failures = _counts(row[15])
            edge.reasons = _counts(row[16])
            edges[edge.key] = edge
        for key, refs in self._recent_delegations(thresholds).items():
            edge, (start_at, failed_at, _) = edges[key], thresholds[key]
            recent = [(start, t, span) for start, t, span, _, _ in refs if start >= start_at]
            edge.recent = [TraceRef(t, start, span) for start, t, span in _newest_refs(recent)]
            failures = [ref for ref in refs if ref[3] is not None and ref[0] >= failed_at]
            edge.recent_failures = [
                FailureRef(t, span, start, kind, reason)
                for start, t, span, kind, reason in _newest_refs(failures)
            ]
        return sorted(edges.values(), key=edge_order)

    def timeline(self, bucket_ns: int) -> dict[tuple[int, str], Usage]:
        """Own usage per (bucket of loop start, agent), from the loop rows."""
        sql = (
            f"SELECT intDiv(start_ns, {int(bucket_ns)}) * {int(bucket_ns)} AS b, agent, {_sums('own')} "
            f"FROM {self._loops} GROUP BY b, agent ORDER BY b, agent"
        )
        return {(int(row[0]), str(row[1])): _usage(row[2:6]).rounded() for row in self._query(sql)}


_NEVER = "toInt64(9223372036854775807)"
"""The start bound of a group not in the map (its rows are never references)."""


def _group_usage(sums: dict[str, float], prefix: str) -> Usage:
    """Usage `prefix` (`a`/`b`) of a rollup group (cost NULL when no row had one)."""
    cost = sums[f"{prefix}_cost"] if sums[f"{prefix}_cost_n"] else None
    return Usage(int(sums[f"{prefix}_input"]), int(sums[f"{prefix}_output"]), cost,
                 int(sums[f"{prefix}_unpriced"]))  # fmt: skip


def _percentile_pair(vals: Sequence[tuple[float, int]]) -> tuple[float | None, float | None]:
    return counted_percentile(vals, 50), counted_percentile(vals, 95)


class RolledMap:
    """The agent map from the hourly rollup (`map_rollup`): the whole hours of a range from
    `janux_map_hourly`, its partial hours from the per-trace rows, summed in one query; the newest
    references from the per-trace rows, `LIMIT k BY` group."""

    def __init__(
        self, rows: Rows, split: HourSplit, current: Callable[[str], str], group_hash: bool = True
    ) -> None:
        self._rows = rows
        self._split = split
        self._current = current
        """`current(extra)`: (trace_id, version) of the current facts matching the filter and `extra`."""
        self._group_hash = group_hash
        """True when the loop and delegation rows carry `schema.GROUP_HASH` (schema 4): the newest
        references find their groups by it (a column of numbers) instead of hashing strings per row."""

    def _group(self, key: str) -> str:
        """How a loop (delegation) row names its group in the newest references' bounds: the rollup
        key's hash (`key`: `map_parts.NODE_KEY` or `EDGE_KEY`)."""
        return s.GROUP_HASH if self._group_hash else f"cityHash64({key})"

    def build(self, bucket_ns: int | None, parameters: dict[str, Any]) -> AgentMap:
        """The whole map (the timeline too when `bucket_ns` is set)."""
        hourly = bucket_ns is not None and bucket_ns % HOUR_NS == 0
        parts = [rollup_rows(self._split.rollup_where())]
        if self._split.has_edges():
            parts += rows_parts(self._current(self._split.edge_condition()))
        found = groups(self._rows(read_sql(parts, hourly), dict(parameters)))
        by_part: dict[str, list[MapGroup]] = {}
        for group in found:
            by_part.setdefault(group.part, []).append(group)
        paths = [
            PathStats(g.key, int(g.sums["runs"]), int(g.sums["errors"]), _group_usage(g.sums, "a"),
                      _group_usage(g.sums, "b"))
            for g in by_part.get("path", [])
        ]  # fmt: skip
        nodes = self._nodes(paths, by_part.get("node", []), parameters)
        for path in paths:
            path.own, path.inclusive = path.own.rounded(), path.inclusive.rounded()
        turns = by_part.get("turn", [])
        timeline: dict[tuple[int, str], Usage] = {}
        if bucket_ns and hourly:
            timeline = _rolled_timeline(by_part.get("timeline", []), bucket_ns)
        elif bucket_ns:
            timeline = MapQueries(self._rows, self._current("1"), parameters).timeline(bucket_ns)
        return AgentMap(
            nodes=nodes,
            edges=self._edges(by_part.get("edge", []), parameters),
            paths=sorted(paths, key=path_order),
            traces=sum(int(g.sums["rows"]) for g in by_part.get("trace", [])),
            turn_costs=expand(turns[0].vals) if turns else [],
            unpriced_turns=int(turns[0].sums["unpriced_turns"]) if turns else 0,
            timeline=timeline,
        )

    def _nodes(
        self, paths: list[PathStats], found: list[MapGroup], parameters: dict[str, Any]
    ) -> list[AgentStats]:
        nodes = nodes_of_paths(paths)
        for group in found:
            named = nodes.get(group.key[0])
            if named is not None:
                named.p50_ms, named.p95_ms = _percentile_pair(group.vals)
                named.traces = int(group.sums["traces"])
        shown = sorted((g for g in found if g.key[0] in nodes), key=lambda g: g.key)
        bounds = {**parameters, "groups": [g.hash for g in shown],
                  "starts": [g.newest_hour for g in shown]}  # fmt: skip
        hashed = self._group(map_parts.NODE_KEY)
        past = f"start_ns >= transform({hashed}, {{groups:Array(UInt64)}}, {{starts:Array(Int64)}}, {_NEVER})"
        for agent, start, trace_id, span_id in self._rows(
            self._newest(s.LOOPS, "agent", "agent", past), bounds
        ):
            if str(agent) in nodes:
                nodes[str(agent)].recent.append(TraceRef(str(trace_id), int(start), str(span_id)))
        for node in nodes.values():
            node.own, node.inclusive = node.own.rounded(), node.inclusive.rounded()
        return sorted(nodes.values(), key=node_order)

    def _newest(self, table: str, names: str, group: str, past: str, extra: str = "") -> str:
        """(`names`, start, trace, span, `extra`) of the `TRACE_REFS_KEPT` newest rows of `table`
        per `group` among those `past` keeps (the
        rows from each group's `MapGroup.newest_hour` on), of the current facts; the current facts
        are looked up by the trace ids of those rows only, and rows written twice count once.
        `PREWHERE`: the bound first (a column scan), the tuple `IN` only on the rows past it (left
        to the optimizer, the `IN` ran over every row: 2.5x slower at 10M spans)."""
        columns = f"{names}, start_ns, trace_id, span_id{extra}"
        current = self._current(f"trace_id IN (SELECT trace_id FROM {table} WHERE {past})")
        rows = (
            f"SELECT {columns}, version, seq FROM {table} PREWHERE {past} "
            f"WHERE (trace_id, version) IN ({current}) LIMIT 1 BY trace_id, version, seq"
        )
        return (
            f"SELECT {columns} FROM ({rows}) ORDER BY start_ns DESC, trace_id DESC, span_id DESC "
            f"LIMIT {TRACE_REFS_KEPT} BY {group}"
        )

    def _edges(self, found: list[MapGroup], parameters: dict[str, Any]) -> list[EdgeStats]:
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
        self._edge_refs(found, edges, parameters)
        return sorted(edges.values(), key=edge_order)

    def _edge_refs(
        self, found: list[MapGroup], edges: dict[tuple[str, str, str], EdgeStats], parameters: dict[str, Any]
    ) -> None:
        """Each edge's newest delegations and newest failed ones, from its rollup hours on."""
        by_key = {g.key: g for g in found}
        keys = sorted(edges)
        bounds = {
            **parameters, "groups": [by_key[k].hash for k in keys],
            "starts": [by_key[k].newest_hour for k in keys],
            "failed_starts": [by_key[k].newest_failed_hour for k in keys],
        }  # fmt: skip
        group = self._group(map_parts.EDGE_KEY)
        at = f"transform({group}, {{groups:Array(UInt64)}}, {{%s:Array(Int64)}}, {_NEVER})"
        past = (
            f"(start_ns >= {at % 'starts'} OR (failure IS NOT NULL AND start_ns >= {at % 'failed_starts'}))"
        )
        names = "caller, target, kind"
        sql = self._newest(s.DELEGATIONS, names, f"{names}, failure IS NULL", past, ", failure, reason")
        # The rows come newest first, ordered as `agentmap.sums` orders references (start, trace,
        # span; strings compared as bytes, which for UTF-8 is the order Python compares them in), so
        # each edge keeps its first rows as they come (no list and re-sort per edge: that cost more
        # than the query at 23,000 rows).
        for caller, target, kind, start, trace_id, span_id, failure, reason in self._rows(sql, bounds):
            edge = edges.get((caller, target, kind))
            if edge is None:
                continue
            if len(edge.recent) < TRACE_REFS_KEPT:
                edge.recent.append(TraceRef(trace_id, int(start), span_id))
            if failure is not None and len(edge.recent_failures) < TRACE_REFS_KEPT:
                edge.recent_failures.append(FailureRef(trace_id, span_id, int(start), failure, reason))


def _rolled_timeline(found: list[MapGroup], bucket_ns: int) -> dict[tuple[int, str], Usage]:
    """Own usage per (bucket of loop start, agent) from the rollup's hourly `timeline` groups."""
    timeline: dict[tuple[int, str], Usage] = {}
    for group in found:
        key = (group.at_ns // bucket_ns * bucket_ns, group.key[0])
        timeline.setdefault(key, Usage()).add(_group_usage(group.sums, "a"))
    return {key: usage.rounded() for key, usage in sorted(timeline.items())}
