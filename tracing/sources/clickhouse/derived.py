"""The ClickHouse source's queries over Janux's derived tables (`schema`), once `janux clickhouse init`
ran: lists, counts and aggregates read facts rows in SQL, never spans.

Each query keeps the rows of a trace's current facts: `janux_trace_facts FINAL` (one row per trace,
its newest version) filtered by `filter_sql`, and the child rows whose (trace, version) it names.
`filter_sql` mirrors `analysis.summary.matches` over the stored summary columns (held to it by the
parity tests of `tests/tracing/sources/test_clickhouse_derived.py`); sums of `janux_usage` follow
`usage_aggregate.merge_groups` (NULL + x = x, all NULL stays NULL); the agent map is added up in
SQL from the stored loop and delegation facts (`derived_map`, mirroring `agentmap.sums`). Traces
newer than the derivers' watermark are not here yet: `pending_traces` counts them, and the pages
say so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, MapKey, MapRefs
from janux.tracing.analysis.facts import TraceFilter, TraceSummary, UsageAggregate
from janux.tracing.analysis.trace_links import TraceLink, with_linked_counts
from janux.tracing.analysis.usage_rows import finish
from janux.tracing.sources.clickhouse import schema as s
from janux.tracing.sources.clickhouse.derived_map import MapQueries, RolledMap
from janux.tracing.sources.clickhouse.fact_rows import summary_of, usage_group
from janux.tracing.sources.clickhouse.map_refs import GroupRefs
from janux.tracing.sources.clickhouse.map_rollup import RowsOf
from janux.tracing.sources.clickhouse.usage_rollup import (
    HourSplit,
    range_only,
    split_hours,
    timeline_sql,
    usage_sql,
)
from janux.tracing.sources.store.model_timeline import finish_timeline
from janux.usage import Usage

Rows = Callable[[str, dict[str, Any]], list[Any]]
"""Runs SQL with parameters and returns the result rows."""

MAX_DISTINCT_VALUES = 5_000
"""Most values `distinct_values` returns."""
_HEX = frozenset("0123456789abcdef")
_SUMMARY = ", ".join(name for name, _ in s.SUMMARY_COLUMNS)
# A database before schema 7 has no `agent_path` column until `init` adds it: read it as empty.
_SUMMARY_BEFORE_7 = _SUMMARY.replace("agent_path", "CAST([], 'Array(String)') AS agent_path")
_LINKED_STARTS = (
    f"SELECT trace_id, start_ns FROM {s.FACTS} FINAL "
    f"WHERE trace_id IN (SELECT trace_id FROM {s.TRACE_LINKS})"
)
_CONTINUATIONS = f"""
SELECT l.trace_id FROM {s.TRACE_LINKS} AS l
INNER JOIN ({_LINKED_STARTS}) AS own ON own.trace_id = l.trace_id
INNER JOIN ({_LINKED_STARTS}) AS other ON other.trace_id = l.other_trace_id
WHERE other.start_ns < own.start_ns OR (other.start_ns = own.start_ns AND other.trace_id < own.trace_id)
"""
"""Traces linked (either way: the index holds a row under each) to a derived trace that started
before them: the continuations of runs (`trace_links.LISTED_RULE`)."""
_CARRIED = ", ".join(n for n, _ in s.MAP_FACTS_COLUMNS if n.startswith(("loop_", "delegation_")))
"""The loop and delegation arrays a facts row carries (schema 3)."""


def _newest_carried(days: str) -> str:
    """A facts row written at schema 3 or later (`map_rows` = 1) is its trace's current one, without
    `FINAL` (which merges every facts row of the traces' days, most of a partial hour's time): every
    row written after it replaced a version (the deriver names it, `replaced_version` > 0, so the
    rollup's views take it back) and has a higher version (a span count: derived again with more
    spans). So a row that replaced nothing is current while its trace has no such row, one that did
    while it has the highest version of its trace's. Every version of a trace sits in its day's
    partition, so the rows that replaced one are looked for in the partitions `days` (the days of
    the rows asked about) only, and there in the projection ordered by `replaced_version` (schema 5:
    `schema.FACTS_BY_REPLACED`): their number follows the rows that replaced a version, not the days.
    (Not "no row names its version as replaced": a trace derived again with the same span count,
    after a span was inserted twice, names its own version.)"""
    replacing = f"SELECT trace_id, version FROM {s.FACTS} PREWHERE day IN ({days}) AND replaced_version > 0"
    return (
        f"(replaced_version = 0 AND trace_id NOT IN (SELECT trace_id FROM ({replacing}))) OR "
        f"(replaced_version > 0 AND (trace_id, version) IN (SELECT trace_id, max(version) FROM ({replacing}) "
        "GROUP BY trace_id))"
    )


_DISTINCT = {"service": "service_name", "root_agent": "root_agent", "conversation": "conversation_id"}


FINAL_SETTINGS = "do_not_merge_across_partitions_select_final = 1"
"""`FINAL` merges each partition alone: every version of a row key is written into one partition
(the deriver keeps a trace's day when it derives it again; a child row's key includes the version,
and one version is one set of spans, so one start and one day), so nothing is lost by not merging
across partitions, and the partitions merge in parallel."""


def with_final_settings(sql: str) -> str:
    """`sql` with `FINAL_SETTINGS` added to its SETTINGS clause (or as one)."""
    return f"{sql}, {FINAL_SETTINGS}" if "SETTINGS" in sql else f"{sql} SETTINGS {FINAL_SETTINGS}"


def filter_sql(flt: TraceFilter, parameters: dict[str, Any]) -> str:
    """WHERE conditions over `janux_trace_facts` for `flt` (`analysis.summary.matches` in SQL)."""
    where = ["1"]
    for name, value, condition in (
        ("start_ns", flt.start_ns, "start_ns >= {start_ns:Int64}"),
        ("end_ns", flt.end_ns, "start_ns < {end_ns:Int64}"),
        ("service", flt.service, "service_name = {service:String}"),
        ("root_agent", flt.root_agent, "root_agent = {root_agent:String}"),
        ("conversation", flt.conversation_id, "conversation_id = {conversation:String}"),
        ("min_cost", flt.min_cost, "bill_cost IS NOT NULL AND bill_cost >= {min_cost:Float64}"),
    ):
        if value is not None:
            parameters[name] = value
            where.append(condition)
    if flt.status == "error":
        where.append("error_spans > 0")
    elif flt.status == "ok":
        where.append("error_spans = 0")
    if flt.has_failed_handoffs:
        where.append("failed_handoffs > 0")
    if flt.trace_id is not None:
        prefix = flt.trace_id.strip().lower()
        parameters["trace_prefix"] = prefix
        where.append("startsWith(trace_id, {trace_prefix:String})" if set(prefix) <= _HEX else "0")
    return " AND ".join(where)


class DerivedReads:
    """`TraceSource` queries over the derived tables (the spans are read only for failed handoffs,
    a bounded page, by the caller)."""

    def __init__(
        self, rows: Rows, rollup: bool = True, map_rollup: bool = True, group_hash: bool = True,
        minute_rollup: bool = True, agent_path: bool = True, trace_links: bool = True,
    ) -> None:
        self._rows: Rows = lambda sql, parameters: rows(with_final_settings(sql), parameters)
        self._rollup = rollup
        """True when the hourly usage rollup exists (schema 2): ranges read it (`usage_rollup`)."""
        self._map_rollup = map_rollup
        """True when the hourly agent-map rollup exists (schema 3): ranges read it (`map_rollup`)."""
        self._group_hash = group_hash
        """True when loop and delegation rows carry their map key's hash (schema 4)."""
        self._minute_rollup = minute_rollup
        """True when the per-minute map rollup and the failures ordered by start exist (schema 6)."""
        self._summary = _SUMMARY if agent_path else _SUMMARY_BEFORE_7
        """The facts columns a trace-list row reads (`agent_path` since schema 7)."""
        self._trace_links = trace_links
        """True when the link index exists (schema 8): the list shows each run once."""

    def _current(self, flt: TraceFilter, parameters: dict[str, Any], extra: str = "1", days: str = "") -> str:
        """(trace_id, version) of the current facts of every trace matching `flt` (and `extra`);
        `days`, a query of partition days, limits `FINAL` to those partitions (every version of a
        trace is in its day's, so a trace is either read whole or not at all)."""
        prewhere = f"PREWHERE day IN ({days}) " if days else ""
        return (
            f"SELECT trace_id, version FROM {s.FACTS} FINAL {prewhere}WHERE {filter_sql(flt, parameters)} "
            f"AND {extra}"
        )

    def _rows_of(self, flt: TraceFilter, parameters: dict[str, Any], extra: str, sign: int) -> RowsOf:
        """The per-trace rows of the current facts matching `flt` and `extra`, counted `sign` times
        (`map_rollup.RowsOf`); a kind of facts row the range does not hold is not read at all."""
        where = f"{filter_sql(flt, parameters)} AND ({extra})"  # `extra` may be an OR of ranges
        held = self._rows(
            f"SELECT countIf(map_rows = 1), countIf(map_rows = 0), groupUniqArray(day) FROM {s.FACTS} "
            f"WHERE {where}",
            dict(parameters),
        )
        carried, old = (int(held[0][0]), int(held[0][1])) if held else (0, 0)
        # the rows' days as constants: the reads below name them three times (loops, delegations,
        # traces), and a subquery would read the range's rows again each time
        days = ", ".join(f"toDate('{str(day)[:10]}')" for day in (held[0][2] if held else [])) or "NULL"
        current = _newest_carried(days)
        facts = (
            f"SELECT start_ns, {_CARRIED} FROM {s.FACTS} PREWHERE {where} AND map_rows = 1 "
            f"WHERE {current} LIMIT 1 BY trace_id, version"
        )
        if not old:  # the normal case: no per-trace table is read
            return RowsOf(facts if carried else None, None, None, sign)
        old_candidates = f"SELECT trace_id, day FROM {s.FACTS} WHERE {where} AND map_rows = 0"
        current = self._current(
            flt, parameters, f"({extra}) AND map_rows = 0", days=f"SELECT day FROM ({old_candidates})"
        )
        return RowsOf(facts if carried else None, current, old_candidates, sign)

    def _split(self, flt: TraceFilter) -> HourSplit | None:
        return split_hours(flt) if self._rollup else None

    def _listed(self, flt: TraceFilter) -> str:
        """The condition leaving a run's continuations out of the list (`trace_links.LISTED_RULE`,
        as the store's `queries.listed_sql`), "1" when the filter names a trace id or no index exists."""
        if flt.trace_id is not None or not self._trace_links:
            return "1"
        return f"trace_id NOT IN ({_CONTINUATIONS})"

    def trace_links(self, trace_ids: list[str]) -> list[TraceLink]:
        """The link index rows with one of `trace_ids` on either side (one read by the primary key)."""
        if not self._trace_links or not trace_ids:
            return []
        sql = (
            "SELECT DISTINCT trace_id, span_id, other_trace_id, other_span_id, outgoing "
            f"FROM {s.TRACE_LINKS} WHERE trace_id IN {{ids:Array(String)}}"
        )
        found: dict[TraceLink, None] = {}
        for trace_id, span_id, other, other_span, outgoing in self._rows(sql, {"ids": trace_ids}):
            ends = (trace_id, span_id, other, other_span)
            if not outgoing:  # the row under the linked trace: its span is the linked one
                ends = (other, other_span, trace_id, span_id)
            found[TraceLink(*(str(value) for value in ends))] = None
        return list(found)

    def list_traces(self, flt: TraceFilter, limit: int, offset: int) -> list[TraceSummary]:
        """Trace summaries matching `flt`, newest first, each run once with its linked count."""
        parameters: dict[str, Any] = {"limit": max(0, limit), "offset": max(0, offset)}
        sql = (
            f"SELECT {self._summary} FROM {s.FACTS} FINAL WHERE {filter_sql(flt, parameters)} "
            f"AND {self._listed(flt)} "
            "ORDER BY start_ns DESC, trace_id LIMIT {limit:UInt64} OFFSET {offset:UInt64}"
        )
        return with_linked_counts([summary_of(row) for row in self._rows(sql, parameters)], self.trace_links)

    def _rolled(self, flt: TraceFilter, parameters: dict[str, Any]) -> RolledMap | None:
        """The rollups' reader of `flt`'s range, None when they cannot answer it (another filter)."""
        if not self._map_rollup or not range_only(flt):
            return None
        filter_sql(flt, parameters)  # fills `parameters` before the queries run
        return RolledMap(
            self._rows, flt.start_ns, flt.end_ns,
            lambda extra, filtered, sign: self._rows_of(flt if filtered else TraceFilter(), parameters,
                                                        extra, sign),
            minutes=self._minute_rollup,
        )  # fmt: skip

    def count_traces(self, flt: TraceFilter) -> int:
        """How many traces match `flt`: a range alone from the rollups' trace counts (schema 6)."""
        parameters: dict[str, Any] = {}
        rolled = self._rolled(flt, parameters) if self._minute_rollup else None
        listed = self._listed(flt)
        if rolled is not None:
            hidden = 0
            # the rollups count every trace: take the continuations back (read only when some
            # trace links into another, so a range count stays a rollup read otherwise)
            if listed != "1" and self._rows(f"SELECT 1 FROM {s.TRACE_LINKS} LIMIT 1", {}):
                where = f"{filter_sql(flt, parameters)} AND NOT ({listed})"
                found = self._rows(f"SELECT count() FROM {s.FACTS} FINAL WHERE {where}", parameters)
                hidden = int(found[0][0]) if found else 0
            return rolled.trace_count(parameters) - hidden
        where = f"{filter_sql(flt, parameters)} AND {listed}"
        rows = self._rows(f"SELECT count() FROM {s.FACTS} FINAL WHERE {where}", parameters)
        return int(rows[0][0]) if rows else 0

    def usage_by(self, dimension: str, flt: TraceFilter, limit: int) -> list[UsageAggregate]:
        """`usage_by` from `janux_usage` (`dimension` checked by the caller)."""
        parameters: dict[str, Any] = {"dimension": dimension}
        split = self._split(flt)
        if split is not None:
            sql = usage_sql(split, lambda extra: self._current(flt, parameters, extra))
            return finish((usage_group(row) for row in self._rows(sql, parameters)), limit)
        sql = (
            "SELECT key, sum(count), sum(failed), sum(input_sum), sum(output_sum), sum(cost_sum), "
            f"sum(unpriced_sum), sum(unread_sum) FROM {s.USAGE} FINAL WHERE dimension = {{dimension:String}} "
            f"AND (trace_id, version) IN ({self._current(flt, parameters)}) GROUP BY key"
        )
        return finish((usage_group(row) for row in self._rows(sql, parameters)), limit)

    def model_timeline(self, flt: TraceFilter, bucket_ns: int) -> list[tuple[int, str, Usage]]:
        """Usage per (bucket of trace start, model), from the model rows of `janux_usage`."""
        parameters: dict[str, Any] = {"bucket": max(1, bucket_ns), "dimension": "model"}
        split = self._split(flt)
        rolled = timeline_sql(split, lambda extra: self._current(flt, parameters, extra), max(1, bucket_ns)) \
            if split is not None else None  # fmt: skip
        if rolled is not None:
            return finish_timeline(self._rows(rolled, parameters))
        sql = (
            "SELECT intDiv(trace_start_ns, {bucket:Int64}) * {bucket:Int64} AS b, key, sum(input_sum), "
            f"sum(output_sum), sum(cost_sum), sum(unpriced_sum) FROM {s.USAGE} FINAL "
            f"WHERE dimension = 'model' AND (trace_id, version) IN ({self._current(flt, parameters)}) "
            "GROUP BY b, key"
        )
        return finish_timeline(self._rows(sql, parameters))

    def agent_map(self, flt: TraceFilter, bucket_ns: int | None) -> AgentMap:
        """The agent map over the stored loop and delegation facts of the traces matching `flt`,
        added up in SQL (`derived_map`)."""
        parameters: dict[str, Any] = {}
        rolled = self._rolled(flt, parameters)
        if rolled is not None:
            return rolled.build(bucket_ns, parameters)
        current = self._current(flt, parameters)
        return MapQueries(self._rows, current, parameters).build(bucket_ns)

    def map_refs(self, flt: TraceFilter, key: MapKey) -> MapRefs:
        """The newest traces (and failures) of one node or edge of `agent_map(flt)` (`map_refs`)."""
        parameters: dict[str, Any] = {}
        refs = GroupRefs(
            self._rows, lambda extra, days: self._current(flt, parameters, extra, days), parameters,
            self._group_hash,
        )  # fmt: skip
        self._current(flt, parameters)  # fills `parameters` before the queries run
        return refs.map_refs(key)

    def failed_handoff_ids(self, flt: TraceFilter, limit: int) -> list[tuple[str, str, int]]:
        """(trace id, span id, span start) of the newest `limit` failed handoffs (the order of
        `newest_spans`); since schema 6 read newest first from the failures ordered by start
        (`_newest_failures`)."""
        if self._minute_rollup and limit > 0:
            return self._newest_failures(flt, limit)
        parameters: dict[str, Any] = {"limit": max(0, limit)}
        sql = (
            f"SELECT trace_id, span_id, span_start_ns FROM {s.FAILURES} FINAL WHERE (trace_id, version) IN "
            f"({self._current(flt, parameters)}) ORDER BY span_start_ns DESC, trace_id, span_id "
            "LIMIT {limit:UInt64}"
        )
        return [(str(t), str(span), int(start)) for t, span, start in self._rows(sql, parameters)]

    def _newest_failures(self, flt: TraceFilter, limit: int) -> list[tuple[str, str, int]]:
        """The newest `limit` failed handoffs of `flt`'s current facts, from `janux_failures_by_start`
        (ordered by the span's start): the start of its `limit`th newest row (any version, maybe a
        row written twice; read from the end of the key) bounds the rows read, those of current
        facts matching `flt` are kept (the facts of their traces, looked up by trace id). When
        `limit` come back they are the newest (every row before the bound is older than each);
        when fewer, the bound moves 16 times further back and the read repeats, until it takes
        every row. A failing span starts inside its trace, so no row before the range counts."""
        parameters: dict[str, Any] = {"limit": limit}
        floor = "1" if flt.start_ns is None else f"span_start_ns >= {int(flt.start_ns)}"
        depth = limit
        while True:
            parameters["depth"] = depth - 1
            bound = self._rows(
                f"SELECT span_start_ns FROM {s.FAILURES_BY_START} WHERE {floor} "
                "ORDER BY span_start_ns DESC LIMIT 1 OFFSET {depth:UInt64}",
                dict(parameters),
            )
            past = f"{floor} AND span_start_ns >= {int(bound[0][0])}" if bound else floor
            rows = (
                f"SELECT trace_id, version, seq, span_id, span_start_ns, day FROM {s.FAILURES_BY_START} "
                f"WHERE {past} LIMIT 1 BY trace_id, version, seq"
            )
            current = self._current(
                flt, parameters, f"trace_id IN (SELECT trace_id FROM ({rows}))",
                days=f"SELECT day FROM ({rows})",
            )  # fmt: skip
            found = self._rows(
                f"SELECT trace_id, span_id, span_start_ns FROM ({rows}) WHERE (trace_id, version) IN "
                f"({current}) ORDER BY span_start_ns DESC, trace_id, span_id LIMIT {{limit:UInt64}}",
                parameters,
            )
            if len(found) >= limit or not bound:
                return [(str(trace), str(span), int(start)) for trace, span, start in found]
            depth *= 16

    def distinct_values(self, what: Literal["service", "root_agent", "conversation"]) -> list[str]:
        """Sorted distinct non-empty values of one filter field over the derived traces."""
        column = _DISTINCT.get(what)
        if column is None:
            return []
        sql = (
            f"SELECT DISTINCT {column} AS v FROM {s.FACTS} FINAL WHERE v IS NOT NULL AND v != '' "
            f"ORDER BY v LIMIT {MAX_DISTINCT_VALUES}"
        )
        return sorted(str(row[0]) for row in self._rows(sql, {}))

    def _oldest_watermark(self, table: str) -> int:
        """The oldest watermark of the shards deriving `table`; 0 while some shard of a sharding
        has never committed one (its traces may all be pending)."""
        sql = (
            f"SELECT shards, count(), min(watermark_ms) FROM {s.STATE} FINAL "
            "WHERE source = {source:String} GROUP BY shards"
        )
        groups = self._rows(sql, {"source": table})
        if not groups or any(int(count) < int(shards) for shards, count, _ in groups):
            return 0
        return min(int(oldest) for _, _, oldest in groups)

    def pending_traces(self, table: str) -> int:
        """Traces with spans the derivers have not derived yet (inserted after the oldest shard
        watermark, and newer than the trace's facts): what the pages say is "still being derived"."""
        oldest = self._oldest_watermark(table)
        newer = f"{s.INSERTED_COLUMN} > fromUnixTimestamp64Milli(toInt64({oldest}))"
        sql = f"""
            SELECT count() FROM (
                SELECT TraceId, max(toUnixTimestamp64Milli({s.INSERTED_COLUMN})) AS newest FROM {table}
                WHERE {newer} GROUP BY TraceId
            ) AS w
            LEFT JOIN (SELECT trace_id, last_inserted_ms FROM {s.FACTS} FINAL
                WHERE trace_id IN (SELECT TraceId FROM {table} WHERE {newer})) AS f ON f.trace_id = w.TraceId
            WHERE f.last_inserted_ms < w.newest
            SETTINGS join_use_nulls = 0"""
        found = self._rows(sql, {})
        return int(found[0][0]) if found else 0
