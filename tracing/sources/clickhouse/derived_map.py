"""The agent map added up in ClickHouse from the derived loop and delegation rows.

SQL that mirrors `analysis.agentmap.sums.MapSums` (held to it by the parity tests of
`tests/tracing/sources/test_clickhouse_derived.py`, which compare whole maps): per path, runs,
errors and own/inclusive usage summed (NULL cost + x = x); per node, the path sums of its paths,
nearest-rank p50/p95 of closed loops' durations (`sums.percentile`), distinct traces and the
`TRACE_REFS_KEPT` newest (start, trace, span) references; the sorted priced turn costs and the
unpriced turns; per edge (caller, target, kind), counts, attempts, inclusive usage, failures by
kind and by reason, percentiles, distinct traces and the newest references and failures; the
timeline as own usage per (bucket of loop start, agent). Only the groups come back to Python,
never a row per loop, so the map costs what it shows plus one scan of the rows in the range.
"""

from __future__ import annotations

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
from janux.tracing.analysis.agentmap.sums import edge_order, node_order, path_order
from janux.tracing.sources.clickhouse import schema as s
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


_FLIP = "'0123456789abcdef', 'fedcba9876543210'"
"""Hex digits mapped to their reverse order (an involution): for ids of one length, the flipped id
sorts in the opposite order, so `groupArraySorted` (the N smallest) finds the N largest."""


def _newest(extra: str = "", condition: str = "1") -> str:
    """The `TRACE_REFS_KEPT` largest (start_ns, trace_id, span_id, *extra) tuples, largest first,
    as `heapq.nlargest` finds them (trace and span ids are lowercase hex of one length)."""
    key = f"(-start_ns, translate(trace_id, {_FLIP}), translate(span_id, {_FLIP}){extra})"
    back = ", x.4, x.5" if extra else ""
    return (
        f"arrayMap(x -> (-x.1, translate(x.2, {_FLIP}), translate(x.3, {_FLIP}){back}), "
        f"groupArraySortedIf({TRACE_REFS_KEPT})({key}, {condition}))"
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
            timeline=self._timeline(bucket_ns) if bucket_ns else {},
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
        nodes: dict[str, AgentStats] = {}
        for path in paths:  # as `MapSums._nodes`: a node is the sum of the paths ending at it
            node = nodes.setdefault(path.path[-1], AgentStats(path.path[-1]))
            node.runs += path.runs
            node.errors += path.errors
            node.own.add(path.own)
            node.inclusive.add(path.inclusive)
        sql = (
            f"SELECT agent, {_percentiles('duration_ms', 'duration_ms IS NOT NULL')}, uniqExact(trace_id), "
            f"{_newest()} FROM {self._loops} GROUP BY agent"
        )
        for agent, p50, p95, traces, recent in self._query(sql):
            found = nodes.get(str(agent))
            if found is None:
                continue
            node = found
            node.p50_ms, node.p95_ms, node.traces = _float(p50), _float(p95), int(traces)
            node.recent = [TraceRef(str(t), int(start), str(span)) for start, t, span in recent]
        for node in nodes.values():
            node.own, node.inclusive = node.own.rounded(), node.inclusive.rounded()
        return sorted(nodes.values(), key=node_order)

    def _edges(self) -> list[EdgeStats]:
        failed = "failure IS NOT NULL"
        sql = (
            f"SELECT caller, target, kind, count(), sum(attempts), {_sums('cost')}, countIf({failed}), "
            f"{_percentiles('duration_ms', 'duration_ms IS NOT NULL')}, uniqExact(trace_id), {_newest()}, "
            f"{_newest(', assumeNotNull(failure), reason', failed)}, "
            f"sumMapIf([assumeNotNull(failure)], [toUInt64(1)], {failed}), "
            f"sumMapIf([reason], [toUInt64(1)], {failed}) "
            f"FROM {self._delegations} GROUP BY caller, target, kind"
        )
        edges = []
        for row in self._query(sql):
            edge = EdgeStats(str(row[0]), str(row[1]), str(row[2]), count=int(row[3]), attempts=int(row[4]))
            edge.cost, edge.failed = _usage(row[5:9]).rounded(), int(row[9])
            edge.p50_ms, edge.p95_ms, edge.traces = _float(row[10]), _float(row[11]), int(row[12])
            edge.recent = [TraceRef(str(t), int(start), str(span)) for start, t, span in row[13]]
            edge.recent_failures = [
                FailureRef(str(t), str(span), int(start), str(kind), str(reason))
                for start, t, span, kind, reason in row[14]
            ]
            edge.failures = _counts(row[15])
            edge.reasons = _counts(row[16])
            edges.append(edge)
        return sorted(edges, key=edge_order)

    def _timeline(self, bucket_ns: int) -> dict[tuple[int, str], Usage]:
        sql = (
            f"SELECT intDiv(start_ns, {int(bucket_ns)}) * {int(bucket_ns)} AS b, agent, {_sums('own')} "
            f"FROM {self._loops} GROUP BY b, agent ORDER BY b, agent"
        )
        return {(int(row[0]), str(row[1])): _usage(row[2:6]).rounded() for row in self._query(sql)}
