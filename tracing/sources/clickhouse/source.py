"""`TraceSource` over the `otel_traces` table the OTel Collector's ClickHouse exporter writes.

Works with any client whose `query(sql, parameters=...)` returns an object with `result_rows`
(a `clickhouse_connect` client in production; `clickhouse.chdb_client.ChdbClient` in tests), with
server-side `{name:Type}` parameters, so the SQL is the same everywhere.

The exporter's attribute maps are `Map(LowCardinality(String), String)`, so attribute values come
back as strings (read them with `janux.tracing.records.attr_*`). Both spellings of status codes and span
kinds (`Error` / `STATUS_CODE_ERROR`, `Internal` / `SPAN_KIND_INTERNAL`) are understood. Rows the
exporter wrote twice (retries) are counted once (`LIMIT 1 BY TraceId, SpanId`).

Traces carrying Janux accounting are summarized and filtered in SQL at query time, with the same
semantics as the embedded store's `trace_summary`. Traces without it get their structure's numbers
(delegations, attempts, failed handoffs, own usage) only by being read whole: `clickhouse_foreign`
names them in SQL on what does not depend on that reading, reads them in chunks and filters their
summaries as the memory source does. Every query merges the two sides.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections import Counter
from collections.abc import Iterator
from itertools import chain, islice
from typing import Any, Literal, Protocol

from janux.tracing import conventions as c
from janux.tracing.analysis.agentmap.build import build_agent_map, gc_paused, map_facts
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, MapKey, MapRefs
from janux.tracing.analysis.agentmap.foreign_rows import foreign_links
from janux.tracing.analysis.agentmap.loops import TraceLinks
from janux.tracing.analysis.agentmap.sums import newest_refs
from janux.tracing.analysis.readers.structure import JANUX_LOOP_MARKERS, structure_facts
from janux.tracing.analysis.summary import (
    failed_edge_spans,
    newest_spans,
    recorded_first_agent,
    recorded_path,
)
from janux.tracing.analysis.trace_find import FoundTraces, TraceQuery, parse_attribute
from janux.tracing.analysis.trace_links import TraceLink, is_continuation, with_linked_counts
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.analysis.usage_aggregate import group_rows, merge_groups
from janux.tracing.analysis.usage_rows import (
    MAX_COUNT,
    UsageSums,
    bill_reconciled,
    check_dimension,
    finish,
    group_select,
)
from janux.tracing.columns import positions
from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse.derived import DerivedReads
from janux.tracing.sources.clickhouse.foreign import ForeignTraces
from janux.tracing.sources.clickhouse.links import clickhouse_links
from janux.tracing.sources.clickhouse.schema import applied_version
from janux.tracing.sources.clickhouse.span_json import SPAN_JSON, decode_spans, span_texts
from janux.tracing.sources.find_cache import FindFactsCache
from janux.tracing.sources.find_scan import chunked_list, scan_find
from janux.tracing.sources.protocol import (
    IngestStats,
    TraceFilter,
    TraceSummary,
    UsageAggregate,
    UsageDimension,
)
from janux.tracing.sources.store.model_timeline import finish_timeline, sums_as_rows, timeline_sums

logger = logging.getLogger(__name__)


class QueryClient(Protocol):
    """The part of a ClickHouse client this source needs (`clickhouse_connect` has it)."""

    def query(self, query: str, parameters: dict[str, Any] | None = None) -> Any:
        """Run `query`; the result has `result_rows` (a sequence of row sequences)."""
        ...


_OP = f"SpanAttributes['{c.GEN_AI_OPERATION_NAME}']"
_IS_ERROR = "StatusCode IN ('Error', 'STATUS_CODE_ERROR')"
_IS_ROOT = "ParentSpanId = ''"
_FAILING = "(" + ", ".join(f"'{s}'" for s in sorted(c.FAILING_STATUSES)) + ")"
_INFERENCE = "(" + ", ".join(f"'{s}'" for s in sorted(c.INFERENCE_OPERATIONS)) + ")"
_STATUS_ATTR = f"SpanAttributes['{c.JANUX_HANDOFF_STATUS}']"


def _root(expression: str) -> str:
    """The value of `expression` on the earliest root span ('' when the trace has no root)."""
    return f"argMinIf({expression}, Timestamp, {_IS_ROOT})"


def _root_attr(key: str) -> str:
    return _root(f"SpanAttributes['{key}']")


# A root span's first agent (`summary.recorded_first_agent`): the agent that handed off, else its own.
_FIRST_AGENT = (
    f"if(SpanAttributes['{c.JANUX_HANDOFF_FROM}'] != '', SpanAttributes['{c.JANUX_HANDOFF_FROM}'], "
    f"SpanAttributes['{c.GEN_AI_AGENT_NAME}'])"
)


_IS_TOOL = f"{_OP} = '{c.OP_EXECUTE_TOOL}'"
_IS_AGENT = f"{_OP} = '{c.OP_INVOKE_AGENT}'"
_IS_INFERENCE = f"{_OP} IN {_INFERENCE}"
_IS_DELEGATION = f"{_IS_TOOL} AND SpanAttributes['{c.GEN_AI_TOOL_TYPE}'] = '{c.TOOL_TYPE_DELEGATE}'"
_HAS_BILL = " OR ".join(f"mapContains(SpanAttributes, '{key}')" for key in c.BILL_KEYS)
# `analysis.readers.structure.is_janux_span`: a Janux loop, a billed root or a Janux delegation tool.
_JANUX_SPAN = (
    f"({_IS_AGENT} AND ("
    + " OR ".join(f"mapContains(SpanAttributes, '{key}')" for key in JANUX_LOOP_MARKERS)
    + f")) OR ({_IS_TOOL} AND {_STATUS_ATTR} != '') OR {_HAS_BILL}"
)
# `analysis.readers.structure.is_completed_transfer`: a Janux trace holding one is read whole
# (`is_read_whole`): its transferred loop holds agent segments no single span records.
_COMPLETED_TRANSFER = (
    f"SpanAttributes['{c.GEN_AI_TOOL_TYPE}'] = '{c.TOOL_TYPE_HANDOFF}' "
    f"AND {_STATUS_ATTR} = '{c.STATUS_COMPLETED}'"
)
_NO_USAGE = (
    "("
    + " AND ".join(
        f"SpanAttributes['{key}'] = ''" for key in (c.GEN_AI_USAGE_INPUT_TOKENS, c.GEN_AI_USAGE_OUTPUT_TOKENS)
    )
    + ")"
)


# The same per-span rule as `janux.tracing.analysis.usage_rows.span_usage`, over the exporter's string values:
# integers as written, or a finite number truncated; non-finite numbers count as absent.


def _to_int(expression: str) -> str:
    number = (
        f"coalesce(toInt64OrNull({expression}), "
        f"accurateCastOrNull(trunc(toFloat64OrNull({expression})), 'Int64'))"
    )
    return f"if(abs({number}) <= {MAX_COUNT}, {number}, NULL)"


def _to_float(expression: str) -> str:
    return f"if(isFinite(toFloat64OrNull({expression})), toFloat64OrNull({expression}), NULL)"


def _usage(key: str, alias: str) -> str:
    """Sum of one usage attribute over inference spans, and how many inference spans carried it."""
    number = _to_int(f"SpanAttributes['{key}']")
    return (
        f"sumIf(ifNull({number}, 0), {_IS_INFERENCE}) AS inference_{alias},\n"
        f"    countIf({_IS_INFERENCE} AND {number} IS NOT NULL) AS {alias}_spans"
    )


# A trace's failed handoffs (the trace list's column; the Costs page's failed traces have one):
# tools ending with a failing handoff status, and tools without one above an ERROR agent loop.
_FAILED_HANDOFFS = f"""groupArrayIf(SpanId, {_IS_TOOL} AND {_STATUS_ATTR} = '') AS foreign_tools,
    groupArrayIf(ParentSpanId, {_IS_AGENT} AND {_IS_ERROR}) AS error_agent_parents,
    countIf({_IS_TOOL} AND {_STATUS_ATTR} IN {_FAILING})
        + length(arrayFilter(t -> has(error_agent_parents, t), foreign_tools)) AS failed_handoffs"""

_SUMMARY_SELECT = f"""
SELECT
    TraceId,
    min(toUnixTimestamp64Nano(Timestamp)) AS start_ns,
    max(toUnixTimestamp64Nano(Timestamp) + toInt64(Duration)) - start_ns AS duration_ns,
    if(countIf({_IS_ROOT}) > 0, {_root("ServiceName")}, argMin(ServiceName, Timestamp)) AS service,
    {_root("SpanName")} AS root_name,
    {_root_attr(c.GEN_AI_AGENT_NAME)} AS root_named,
    {_root_attr(c.JANUX_HANDOFF_FROM)} AS handed_off,
    {_root_attr(c.JANUX_HANDOFF_PATH)} AS handoff_path,
    if(handed_off != '', handed_off, root_named) AS root_agent,
    {_root_attr(c.GEN_AI_CONVERSATION_ID)} AS conversation,
    count() AS span_count,
    countIf({_IS_DELEGATION}) AS delegations,
    groupArrayIf(SpanId, {_IS_TOOL}) AS tool_ids,
    arrayCount(p -> has(tool_ids, p), groupArrayIf(ParentSpanId, {_IS_AGENT})) AS attempts,
    {_FAILED_HANDOFFS},
    countIf({_IS_ERROR}) AS error_spans,
    {_root(_HAS_BILL)} AS has_bill,
    {_root_attr(c.JANUX_BILL_COST)} AS bill_cost,
    {_root_attr(c.JANUX_BILL_INPUT_TOKENS)} AS bill_input,
    {_root_attr(c.JANUX_BILL_OUTPUT_TOKENS)} AS bill_output,
    {_root_attr(c.JANUX_BILL_UNPRICED_TOKENS)} AS bill_unpriced,
    {_root_attr(c.JANUX_BILL_COST_ESTIMATE)} AS bill_estimate,
    countIf({_JANUX_SPAN}) > 0 OR has_bill AS janux,
    countIf({_IS_TOOL} AND SpanAttributes['{c.GEN_AI_TOOL_TYPE}'] = '{c.TOOL_TYPE_HANDOFF}') AS transfers,
    countIf({_IS_INFERENCE} AND NOT ({_IS_ERROR} AND {_NO_USAGE})) AS calls,
    countIf({_IS_INFERENCE} AND NOT {_NO_USAGE}) AS read_calls,
    {_usage(c.GEN_AI_USAGE_INPUT_TOKENS, "input")},
    {_usage(c.GEN_AI_USAGE_OUTPUT_TOKENS, "output")},
    sumIf({_to_int(f"SpanAttributes['{c.JANUX_TURN_INPUT_TOKENS}']")}, {_IS_AGENT}) AS turn_input,
    sumIf({_to_int(f"SpanAttributes['{c.JANUX_TURN_OUTPUT_TOKENS}']")}, {_IS_AGENT}) AS turn_output,
    sumIf({_to_float(f"SpanAttributes['{c.JANUX_TURN_COST}']")}, {_IS_AGENT}) AS turn_cost,
    sumIf({_to_int(f"SpanAttributes['{c.JANUX_TURN_UNPRICED_TOKENS}']")}, {_IS_AGENT}) AS turn_unpriced
"""

_SUMMARY_COLUMNS = (
    "TraceId", "start_ns", "duration_ns", "service", "root_name", "root_named", "handed_off", "handoff_path",
    "conversation",
    "span_count",
    "delegations", "attempts", "failed_handoffs", "error_spans", "has_bill", "bill_cost", "bill_input",
    "bill_output", "bill_unpriced", "bill_estimate", "inference_input", "inference_output", "input_spans",
    "output_spans", "turn_input", "turn_output", "turn_cost", "turn_unpriced", "janux", "transfers", "calls",
    "read_calls",
)  # fmt: skip
"""What `list_traces` selects from `_SUMMARY_SELECT` (by alias) and `_summary` reads by name."""
_SUMMARY_AT = positions(_SUMMARY_COLUMNS)

MAX_DISTINCT_VALUES = 5_000
"""Most values `distinct_values` returns."""

# What SQL knows of a trace without reading its structure: which traces carry no Janux accounting
# (`clickhouse_foreign`), with the columns the reading-independent filters compare.
_CANDIDATE_SELECT = f"""
SELECT
    TraceId,
    uniqExact(SpanId) AS spans,
    min(toUnixTimestamp64Nano(Timestamp)) AS start_ns,
    if(countIf({_IS_ROOT}) > 0, {_root("ServiceName")}, argMin(ServiceName, Timestamp)) AS service,
    {_root_attr(c.GEN_AI_CONVERSATION_ID)} AS conversation,
    countIf({_JANUX_SPAN}) > 0 AS janux
"""


class ClickHouseSource:
    """The dashboard's queries over the Collector's `otel_traces` table."""

    def __init__(self, client: QueryClient, table: str = "otel_traces", *, derived: bool = True) -> None:
        if not table.replace("_", "").replace(".", "").isalnum():
            raise ValueError(f"invalid table name {table!r}")
        self._client = client
        self._table = table
        self._foreign = ForeignTraces(self._foreign_candidates, self.get_traces)
        self._derived_reads: DerivedReads | None = None
        self._find = FindFactsCache()
        self._use_derived = derived
        """False: always derive at read time (benches compare the two paths)."""
        self._lookup: bool | None = None
        """Whether the exporter's TraceId -> time lookup table exists (checked once)."""

    def _derived(self) -> DerivedReads | None:
        """The derived tables' queries once `janux clickhouse init` ran (checked until it has: the
        tables are never dropped by Janux), else None: facts are then derived at read time."""
        if self._derived_reads is None and self._use_derived:
            version = applied_version(self._client)
            if version >= 1:
                self._derived_reads = DerivedReads(
                    self._rows, rollup=version >= 2, map_rollup=version >= 3, group_hash=version >= 4,
                    minute_rollup=version >= 6, agent_path=version >= 7, trace_links=version >= 8,
                    usage_minutes=version >= 9,
                )
        return self._derived_reads

    def pending_traces(self) -> int:
        """Traces in the table the derivers have not derived yet (not in lists and aggregates yet:
        the pages say "N traces still being derived"); 0 when facts are derived at read time."""
        derived = self._derived()
        return derived.pending_traces(self._table) if derived is not None else 0

    def _rows(self, sql: str, parameters: dict[str, Any]) -> list[Any]:
        return list(self._client.query(sql, parameters=parameters).result_rows)

    def _janux_summaries_sql(self, flt: TraceFilter, parameters: dict[str, Any]) -> str:
        """Per-trace aggregates of the traces with Janux accounting matching `flt` (one row per trace)."""
        prefilter, having = _filter_sql(flt, parameters)
        source = f"SELECT * FROM {self._table}"
        if prefilter:
            source += f" WHERE TraceId IN ({_traces_with(self._table, prefilter)})"
        conditions = " AND ".join(["janux", *([having] if having else [])])
        source += " LIMIT 1 BY TraceId, SpanId"
        return f"{_SUMMARY_SELECT} FROM ({source}) GROUP BY TraceId HAVING {conditions}"

    def _janux_ids_sql(self, flt: TraceFilter, parameters: dict[str, Any]) -> str:
        """A query selecting the TraceId of every trace with Janux accounting matching `flt`."""
        if flt == TraceFilter():  # no filter: which traces carry Janux accounting, nothing more
            return f"SELECT TraceId FROM {self._table} GROUP BY TraceId HAVING countIf({_JANUX_SPAN}) > 0"
        return f"SELECT TraceId FROM ({self._janux_summaries_sql(flt, parameters)})"

    def _janux_part_sql(self, flt: TraceFilter, parameters: dict[str, Any], *, whole: bool) -> str:
        """`_janux_ids_sql`, narrowed to the traces read whole (`whole`: with a completed transfer,
        `structure.is_read_whole`) or to the others (summed span by span in SQL)."""
        test = ">" if whole else "="
        return (
            f"SELECT TraceId FROM {self._table} WHERE TraceId IN ({self._janux_ids_sql(flt, parameters)}) "
            f"GROUP BY TraceId HAVING countIf({_COMPLETED_TRANSFER}) {test} 0"
        )

    def _read_whole_spans(self, flt: TraceFilter) -> Iterator[list[SpanRecord]]:
        """The spans of every trace matching `flt` whose per-agent figures come from reading it whole:
        other runtimes' traces, then Janux traces with a completed transfer."""
        parameters: dict[str, Any] = {}
        sql = self._janux_part_sql(flt, parameters, whole=True)
        whole = [str(row[0]) for row in self._rows(sql, parameters)]
        return chain(self._foreign_spans(flt), self._foreign.read_whole(whole))

    def _foreign_candidates(self, flt: TraceFilter) -> dict[str, int]:
        """Trace id -> distinct spans of the traces without Janux accounting that pass the
        reading-independent filters of `flt` (`clickhouse_foreign.reading_independent`)."""
        parameters: dict[str, Any] = {}
        prefilter, having = _filter_sql(flt, parameters)
        source = self._table
        if prefilter:
            source += f" WHERE TraceId IN ({_traces_with(self._table, prefilter)})"
        conditions = " AND ".join(["NOT janux", *([having] if having else [])])
        sql = f"{_CANDIDATE_SELECT} FROM {source} GROUP BY TraceId HAVING {conditions}"
        return {str(row[0]): int(row[1]) for row in self._rows(sql, parameters)}

    def _foreign_spans(self, flt: TraceFilter) -> Iterator[list[SpanRecord]]:
        """The spans of every trace without Janux accounting matching `flt`, read in chunks."""
        return self._foreign.read_whole([s.trace_id for s in self._foreign.matching(flt)])

    def list_traces(self, flt: TraceFilter, limit: int = 50, offset: int = 0) -> list[TraceSummary]:
        """Trace summaries matching `flt`, newest first."""
        derived = self._derived()
        if derived is not None:
            return derived.list_traces(flt, limit, offset)
        first, wanted = max(0, offset), max(0, limit)
        hidden = self._continuations(flt)
        parameters: dict[str, Any] = {"limit": first + wanted, "hidden": sorted(hidden)}
        sql = (
            f"SELECT {', '.join(_SUMMARY_COLUMNS)} FROM ({self._janux_summaries_sql(flt, parameters)}) "
            "WHERE TraceId NOT IN {hidden:Array(String)} ORDER BY start_ns DESC, TraceId LIMIT {limit:UInt64}"
        )
        janux = [_summary(row) for row in self._rows(sql, parameters)]
        foreign = [row for row in self._foreign.matching(flt) if row.trace_id not in hidden]
        merged = heapq.merge(janux, foreign, key=lambda s: (-s.start_ns, s.trace_id))
        return with_linked_counts(list(islice(merged, first, first + wanted)), self.trace_links)

    def count_traces(self, flt: TraceFilter) -> int:
        """How many traces match `flt`."""
        derived = self._derived()
        if derived is not None:
            return derived.count_traces(flt)
        hidden = self._continuations(flt)
        parameters: dict[str, Any] = {"hidden": sorted(hidden)}
        rows = self._rows(
            f"SELECT count() FROM ({self._janux_summaries_sql(flt, parameters)}) "
            "WHERE TraceId NOT IN {hidden:Array(String)}",
            parameters,
        )
        foreign = sum(1 for row in self._foreign.matching(flt) if row.trace_id not in hidden)
        return (int(rows[0][0]) if rows else 0) + foreign

    def _continuations(self, flt: TraceFilter) -> set[str]:
        """The traces the list leaves out (`trace_links.LISTED_RULE`), read from the spans' links:
        every cross-trace link, then the start of each trace on either side (the query-time path
        reads the table as it is; the derived tables keep the index instead)."""
        if flt.trace_id is not None:
            return set()
        sql = (
            f"SELECT DISTINCT TraceId, link FROM {self._table} ARRAY JOIN Links.TraceId AS link "
            "WHERE link != '' AND link != TraceId"
        )
        pairs = [(str(a), str(b)) for a, b in self._rows(sql, {})]
        if not pairs:
            return set()
        ids = sorted({t for pair in pairs for t in pair})
        starts_sql = (
            f"SELECT TraceId, min(toUnixTimestamp64Nano(Timestamp)) FROM {self._table} "
            "WHERE TraceId IN {ids:Array(String)} GROUP BY TraceId"
        )
        starts = {str(t): int(start) for t, start in self._rows(starts_sql, {"ids": ids})}
        links = [TraceLink(a, "", b, "") for a, b in pairs]
        return {t for t in starts if is_continuation(t, starts, links)}

    def trace_links(self, trace_ids: list[str]) -> list[TraceLink]:
        """The link index rows with one of `trace_ids` on either side: from the derived tables once
        `init` ran (one read by key), else from the spans' links."""
        ids = sorted({t.strip().lower() for t in trace_ids})
        derived = self._derived()
        if derived is not None:
            return derived.trace_links(ids)
        sql = (
            f"SELECT DISTINCT TraceId, SpanId, link.1, link.2 FROM {self._table} "
            "ARRAY JOIN arrayZip(Links.TraceId, Links.SpanId) AS link "
            "WHERE link.1 != '' AND link.2 != '' AND link.1 != TraceId "
            "AND (TraceId IN {ids:Array(String)} OR link.1 IN {ids:Array(String)})"
        )
        return [TraceLink(*(str(value) for value in row)) for row in self._rows(sql, {"ids": ids})]

    def find_traces(
        self, flt: TraceFilter, query: TraceQuery, limit: int = 50, offset: int = 0
    ) -> FoundTraces:
        """The traces matching `flt` with what `query` asks for inside, over all of them: the trace
        list read `SCAN_CHUNK` at a time (from the derived tables once `init` ran), each chunk
        narrowed by one SQL read of its attribute column, then by its traces' kept find facts."""
        return scan_find(
            chunked_list(self.list_traces, flt), query, max(0, limit), max(0, offset),
            cache=self._find, read=self.get_traces, has_attribute=self._with_attribute,
        )  # fmt: skip

    def _with_attribute(self, trace_ids: list[str], attribute: str) -> set[str]:
        """The traces among `trace_ids` with a span carrying the attribute (values are strings here,
        as `trace_find.attribute_text` writes them)."""
        key, value = parse_attribute(attribute)
        parameters: dict[str, Any] = {"ids": trace_ids, "key": key, "value": value or ""}
        test = "mapContains(SpanAttributes, {key:String})"
        if value is not None:
            test += " AND SpanAttributes[{key:String}] = {value:String}"
        sql = f"SELECT DISTINCT TraceId FROM {self._table} WHERE TraceId IN {{ids:Array(String)}} AND {test}"
        return {str(row[0]) for row in self._rows(sql, parameters)}

    def get_trace(self, trace_id: str) -> list[SpanRecord]:
        """All spans of one trace (each span once), in start order."""
        return self.get_traces([trace_id]).get(trace_id.strip().lower(), [])

    def _time_bounds(self, ids: list[str]) -> str:
        """A condition bounding `Timestamp` to the traces' spans, from the Collector exporter's
        lookup table `<table>_trace_id_ts` (TraceId -> first and last span start, kept by its
        materialized view on every insert): the span read then prunes partitions and uses the
        table's time key instead of scanning every part for the ids. "1" when the table is missing
        or does not know every id (rows stored before it existed)."""
        if self._lookup is None:
            self._lookup = self._has_table(f"{self._table}_trace_id_ts")
        if not self._lookup:
            return "1"
        rows = self._rows(
            "SELECT uniqExact(TraceId), toUnixTimestamp64Nano(toDateTime64(min(Start), 9)), "
            f"toUnixTimestamp64Nano(toDateTime64(max(End), 9)) FROM {self._table}_trace_id_ts "
            "WHERE TraceId IN {ids:Array(String)}",
            {"ids": ids},
        )
        if not rows or int(rows[0][0]) < len(ids):
            return "1"
        # End may be whole seconds (older exporters' DateTime): one second more covers its fraction
        first, last = int(rows[0][1]), int(rows[0][2]) + 10**9
        return (
            f"Timestamp >= fromUnixTimestamp64Nano(toInt64({first})) "
            f"AND Timestamp <= fromUnixTimestamp64Nano(toInt64({last}))"
        )

    def _has_table(self, name: str) -> bool:
        rows = self._rows(
            "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = {n:String}",
            {"n": name},
        )
        return bool(rows and int(rows[0][0]))

    def get_traces(self, trace_ids: list[str]) -> dict[str, list[SpanRecord]]:
        """All spans of several traces, keyed by trace id (unknown ids map to [])."""
        ids = list(dict.fromkeys(t.strip().lower() for t in trace_ids))
        out: dict[str, list[SpanRecord]] = {t: [] for t in ids}
        if not ids:
            return out
        sql = (
            f"SELECT {SPAN_JSON} FROM {self._table} WHERE TraceId IN {{ids:Array(String)}} "
            f"AND {self._time_bounds(ids)} ORDER BY TraceId, Timestamp, SpanId LIMIT 1 BY TraceId, SpanId"
        )
        for span in self._spans(sql, {"ids": ids}):
            out.setdefault(span.trace_id, []).append(span)
        return out

    def _spans(self, sql: str, parameters: dict[str, Any]) -> list[SpanRecord]:
        """The spans a query selecting `SPAN_JSON` (its first column) returns."""
        return decode_spans(span_texts(self._rows(sql, parameters)))

    def failed_handoff_spans(self, flt: TraceFilter, limit: int = 500) -> list[SpanRecord]:
        """The failed handoffs' spans, newest first: of Janux traces, failing `execute_tool` spans and
        ERROR `invoke_agent` spans under tool spans without a recorded status; of other traces, the
        tool (else last attempt) span of every failed edge of their facts."""
        derived = self._derived()
        if derived is not None:
            return self._spans_named(derived.failed_handoff_ids(flt, limit), limit)
        parameters: dict[str, Any] = {"limit": max(0, limit)}
        traces = (
            f"SELECT TraceId FROM ({self._janux_summaries_sql(flt, parameters)}) WHERE failed_handoffs > 0 "
            "ORDER BY start_ns DESC LIMIT {limit:UInt64}"
        )
        foreign_tools = (
            f"SELECT TraceId, SpanId FROM {self._table} WHERE TraceId IN ({traces}) "
            f"AND {_IS_TOOL} AND {_STATUS_ATTR} = ''"
        )
        sql = (
            f"SELECT {SPAN_JSON} FROM {self._table} WHERE TraceId IN ({traces}) AND ("
            f"({_IS_TOOL} AND {_STATUS_ATTR} IN {_FAILING}) OR "
            f"({_IS_AGENT} AND {_IS_ERROR} AND (TraceId, ParentSpanId) IN ({foreign_tools}))) "
            "ORDER BY Timestamp DESC LIMIT 1 BY TraceId, SpanId LIMIT {limit:UInt64}"
        )
        found = self._spans(sql, parameters)
        failing = [s.trace_id for s in self._foreign.matching(flt) if s.failed_handoffs > 0][: max(0, limit)]
        for spans in self._foreign.read_whole(failing):
            found += failed_edge_spans(structure_facts(spans), {span.span_id: span for span in spans})
        return newest_spans(found, limit)

    def _spans_named(self, named: list[tuple[str, str, int]], limit: int) -> list[SpanRecord]:
        """The spans named by (trace id, span id, start), newest first (one read, bounded by the
        spans' starts: it prunes partitions and uses the table's time key instead of probing every
        part for the ids); a span named twice comes twice (a graph node fed by several nodes is the
        failed run of each edge)."""
        if not named:
            return []
        pairs = [(trace, span) for trace, span, _ in named]
        first, last = min(start for *_, start in named), max(start for *_, start in named)
        sql = (
            f"SELECT {SPAN_JSON} FROM {self._table} WHERE TraceId IN {{traces:Array(String)}} "
            "AND SpanId IN {spans:Array(String)} "
            f"AND Timestamp >= fromUnixTimestamp64Nano(toInt64({int(first) - 10**9})) "
            f"AND Timestamp <= fromUnixTimestamp64Nano(toInt64({int(last) + 10**9})) "
            "LIMIT 1 BY TraceId, SpanId"
        )
        parameters = {"traces": sorted({t for t, _ in pairs}), "spans": sorted({span for _, span in pairs})}
        wanted = Counter(pairs)
        spans = self._spans(sql, parameters)
        found = [span for span in spans for _ in range(wanted[(span.trace_id, span.span_id)])]
        return newest_spans(found, limit)

    def distinct_values(self, what: Literal["service", "root_agent", "conversation"]) -> list[str]:
        """Values to offer in a filter drop-down: those of every root span (a cheap superset of the
        values the filters can match when a trace has several roots), and the root agents of the
        traces without Janux accounting (their first agent when the root span names none)."""
        derived = self._derived()
        if derived is not None:
            return derived.distinct_values(what)
        if what == "root_agent":
            foreign = {s.root_agent for s in self._foreign.matching(TraceFilter()) if s.root_agent}
            return sorted(foreign.union(self._root_values(what)))[:MAX_DISTINCT_VALUES]
        return self._root_values(what)

    def _root_values(self, what: Literal["service", "root_agent", "conversation"]) -> list[str]:
        expression = {
            "service": "ServiceName",
            "root_agent": _FIRST_AGENT,
            "conversation": f"SpanAttributes['{c.GEN_AI_CONVERSATION_ID}']",
        }.get(what)
        if expression is None:
            return []
        sql = (
            f"SELECT DISTINCT {expression} AS v FROM {self._table} WHERE {_IS_ROOT} AND v != '' "
            f"ORDER BY v LIMIT {MAX_DISTINCT_VALUES}"
        )
        return [str(row[0]) for row in self._rows(sql, {})]

    def usage_by(self, dimension: UsageDimension, flt: TraceFilter, limit: int = 100) -> list[UsageAggregate]:
        """Tokens and cost by agent, delegation tool, model or conversation over the traces matching
        `flt` (see `janux.tracing.sources.protocol.UsageAggregate`), most expensive first.

        Janux traces are aggregated in SQL; traces of other runtimes are read whole, in chunks,
        and aggregated by the same facts as every source (`janux.tracing.analysis.usage_aggregate`)."""
        wanted = check_dimension(dimension)
        derived = self._derived()
        if derived is not None:
            return derived.usage_by(wanted, flt, limit)
        parameters: dict[str, Any] = {}
        traces = self._janux_part_sql(flt, parameters, whole=False)
        spans = f"SELECT * FROM {self._table} WHERE TraceId IN ({traces}) LIMIT 1 BY TraceId, SpanId"
        janux_rows = self._rows(_usage_sql(wanted, spans), parameters)
        foreign_rows = group_rows(wanted, self._read_whole_spans(flt))
        return finish(merge_groups([*janux_rows, *foreign_rows]), limit)

    def agent_map(self, flt: TraceFilter, bucket_ns: int | None = None) -> AgentMap:
        """Agents and the delegations between them over the traces matching `flt`."""
        derived = self._derived()
        if derived is not None:
            return derived.agent_map(flt, bucket_ns)
        with gc_paused():
            return build_agent_map(self._map_links(flt), bucket_ns)

    def map_refs(self, flt: TraceFilter, key: MapKey) -> MapRefs:
        """The newest traces (and failures) of one node or edge of `agent_map(flt)`."""
        derived = self._derived()
        if derived is not None:
            return derived.map_refs(flt, key)
        with gc_paused():
            return newest_refs(((links.trace_id, map_facts(links)) for links in self._map_links(flt)), key)

    def _map_links(self, flt: TraceFilter) -> Iterator[TraceLinks]:
        """The link rows of every trace matching `flt`, read at query time (no derived tables)."""
        parameters: dict[str, Any] = {}
        traces = self._janux_part_sql(flt, parameters, whole=False)
        spans = f"SELECT * FROM {self._table} WHERE TraceId IN ({traces}) LIMIT 1 BY TraceId, SpanId"
        inference = f"WITH spans AS ({spans}) {_span_rows('model')}"
        janux = clickhouse_links(
            self._rows, self._table, traces, parameters, SPAN_JSON, self._spans, inference
        )
        foreign = (foreign_links(spans[0].trace_id, spans) for spans in self._read_whole_spans(flt))
        return chain(janux, foreign)

    def model_timeline(self, flt: TraceFilter, bucket_ns: int) -> list[tuple[int, str, Usage]]:
        """Usage per (bucket of trace start, model) over the traces matching `flt`."""
        derived = self._derived()
        if derived is not None:
            return derived.model_timeline(flt, bucket_ns)
        bucket = max(1, bucket_ns)
        parameters: dict[str, Any] = {"bucket": bucket}
        traces = self._janux_ids_sql(flt, parameters)
        sql = f"""
            WITH spans AS (SELECT * FROM {self._table} WHERE TraceId IN ({traces}) LIMIT 1 BY TraceId, SpanId)
            SELECT intDiv(s.start, {{bucket:Int64}}) * {{bucket:Int64}} AS b, m.key, sum(m.i), sum(m.o),
                sum(m.cost), sum(m.u)
            FROM ({_span_rows("model")}) AS m
            JOIN (SELECT TraceId, min(toUnixTimestamp64Nano(Timestamp)) AS start FROM spans
                GROUP BY TraceId) AS s ON s.TraceId = m.TraceId
            GROUP BY b, m.key"""
        sums = timeline_sums(self._foreign_spans(flt), bucket)
        for b, model, tokens_in, tokens_out, cost, unpriced in self._rows(sql, parameters):
            usage = Usage(int(tokens_in or 0), int(tokens_out or 0), None if cost is None else float(cost),
                             int(unpriced or 0))  # fmt: skip
            sums.setdefault((int(b), str(model or "")), Usage()).add(usage)
        return finish_timeline(sums_as_rows(sums))

    def ingest_stats(self) -> IngestStats:
        """Spans and traces in the table, and rows written twice (refusals are the Collector's)."""
        sql = f"SELECT count(), uniqExact(TraceId), count() - uniqExact(TraceId, SpanId) FROM {self._table}"
        rows = self._rows(sql, {})
        spans, traces, duplicates = (int(v) for v in rows[0]) if rows else (0, 0, 0)
        return IngestStats(spans=spans - duplicates, traces=traces, duplicates=duplicates)


def _traces_with(table: str, conditions: list[str]) -> str:
    """A query selecting the traces that have, for each of `conditions`, some span meeting it
    (not one span meeting them all: the root names the agent, another span may be the error)."""
    if len(conditions) == 1:
        return f"SELECT TraceId FROM {table} WHERE {conditions[0]}"
    some = " OR ".join(f"({condition})" for condition in conditions)
    each = " AND ".join(f"countIf({condition}) > 0" for condition in conditions)
    return f"SELECT TraceId FROM {table} WHERE {some} GROUP BY TraceId HAVING {each}"


def _filter_sql(flt: TraceFilter, parameters: dict[str, Any]) -> tuple[list[str], str]:
    """(span-level conditions each some span of every matching trace meets, exact trace-level
    HAVING)."""
    where: list[str] = []
    having: list[str] = []
    if flt.start_ns is not None:
        parameters["start_ns"] = flt.start_ns
        where.append("Timestamp >= fromUnixTimestamp64Nano({start_ns:Int64})")
        having.append("start_ns >= {start_ns:Int64}")
    if flt.end_ns is not None:
        parameters["end_ns"] = flt.end_ns
        where.append("Timestamp < fromUnixTimestamp64Nano({end_ns:Int64})")
        having.append("start_ns < {end_ns:Int64}")
    root_agent = f"{_IS_ROOT} AND {_FIRST_AGENT} = {{root_agent:String}}"
    conversation = f"{_IS_ROOT} AND SpanAttributes['{c.GEN_AI_CONVERSATION_ID}'] = {{conversation:String}}"
    for name, value, span_condition in (
        ("service", flt.service, "ServiceName = {service:String}"),
        ("root_agent", flt.root_agent, root_agent),
        ("conversation", flt.conversation_id, conversation),
    ):
        if value is not None:
            parameters[name] = value
            where.append(span_condition)
            having.append(f"{name} = {{{name}:String}}")
    _status_filters(flt, where, having, parameters)
    return where, " AND ".join(having)


def _status_filters(
    flt: TraceFilter, where: list[str], having: list[str], parameters: dict[str, Any]
) -> None:
    if flt.status == "error":
        where.append(_IS_ERROR)
        having.append("error_spans > 0")
    elif flt.status == "ok":
        having.append("error_spans = 0")
    if flt.has_failed_handoffs:
        where.append(f"({_IS_TOOL} OR {_IS_AGENT})")
        having.append("failed_handoffs > 0")
    if flt.min_cost is not None:
        parameters["min_cost"] = flt.min_cost
        where.append(
            f"{_IS_ROOT} AND toFloat64OrZero(SpanAttributes['{c.JANUX_BILL_COST}']) >= {{min_cost:Float64}}"
        )
        having.append("has_bill AND toFloat64OrNull(bill_cost) >= {min_cost:Float64}")
    if flt.trace_id is not None:
        parameters["trace_prefix"] = flt.trace_id.strip().lower()
        where.append("startsWith(TraceId, {trace_prefix:String})")


def _int_or_none(value: Any) -> int | None:
    """A stored token count as an int; absent, unreadable, non-finite ("inf", "nan") or beyond
    `MAX_COUNT` is None (as in the embedded store)."""
    try:
        number = int(float(value)) if value not in (None, "") else None
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number is not None and -MAX_COUNT <= number <= MAX_COUNT else None


def _float_or_none(value: Any) -> float | None:
    """A stored number as a finite float; absent, unreadable or non-finite is None."""
    try:
        number = float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None
    return number if number is not None and math.isfinite(number) else None


def _summary(row: Any) -> TraceSummary:
    """A `_SUMMARY_COLUMNS` row as a summary."""
    at = _SUMMARY_AT

    def number(name: str) -> int | None:
        return _int_or_none(row[at[name]])

    def money(name: str) -> float | None:
        return _float_or_none(row[at[name]])

    def text(name: str) -> str | None:
        value = row[at[name]]
        return str(value) if value else None

    recorded = {
        c.GEN_AI_AGENT_NAME: text("root_named"), c.JANUX_HANDOFF_FROM: text("handed_off"),
        c.JANUX_HANDOFF_PATH: text("handoff_path"),
    }  # fmt: skip
    has_bill = bool(row[at["has_bill"]])
    bill = UsageSums(number("bill_input"), number("bill_output"), money("bill_cost"), number("bill_unpriced"))
    turns = UsageSums(
        number("turn_input"), number("turn_output"), money("turn_cost"), number("turn_unpriced")
    )
    # Without a bill: the inference spans' sums, when any inference span carried the attribute.
    inference_input = int(row[at["inference_input"]]) if int(row[at["input_spans"]]) else None
    inference_output = int(row[at["inference_output"]]) if int(row[at["output_spans"]]) else None
    return TraceSummary(
        trace_id=str(row[at["TraceId"]]),
        start_ns=int(row[at["start_ns"]]),
        duration_ns=int(row[at["duration_ns"]]),
        service_name=text("service") or "",
        root_name=text("root_name") or "",
        root_agent=recorded_first_agent(recorded),
        agent_path=recorded_path(recorded),
        conversation_id=text("conversation"),
        span_count=int(row[at["span_count"]]),
        delegations=int(row[at["delegations"]]),
        attempts=int(row[at["attempts"]]),
        failed_handoffs=int(row[at["failed_handoffs"]]),
        error_spans=int(row[at["error_spans"]]),
        bill_cost=bill.cost if has_bill else None,
        bill_input_tokens=bill.input_tokens if has_bill else inference_input,
        bill_output_tokens=bill.output_tokens if has_bill else inference_output,
        bill_unpriced_tokens=bill.unpriced_tokens if has_bill else None,
        bill_cost_estimate=money("bill_estimate") if has_bill else None,
        transfers=int(row[at["transfers"]]),
        inference_spans=int(row[at["calls"]]),
        usage_read_spans=int(row[at["read_calls"]]),
        bill_reconciled=bill_reconciled(has_bill, bill, turns),
    )


# ------------------------------------------------------------------------------- usage_by


def _attr(key: str) -> str:
    return f"SpanAttributes['{key}']"


_UNPRICED_ROUND = (
    "multiIf(cost IS NOT NULL, 0, i IS NULL AND o IS NULL, NULL, coalesce(i, 0) + coalesce(o, 0))"
)
_ROW_COLUMNS = {
    "agent": (
        _attr(c.GEN_AI_AGENT_NAME), _IS_ERROR, _to_int(_attr(c.JANUX_TURN_INPUT_TOKENS)),
        _to_int(_attr(c.JANUX_TURN_OUTPUT_TOKENS)), _to_float(_attr(c.JANUX_TURN_COST)),
        _to_int(_attr(c.JANUX_TURN_UNPRICED_TOKENS)), _IS_AGENT,
    ),
    "model": (
        _attr(c.GEN_AI_REQUEST_MODEL), _IS_ERROR, _to_int(_attr(c.GEN_AI_USAGE_INPUT_TOKENS)),
        _to_int(_attr(c.GEN_AI_USAGE_OUTPUT_TOKENS)), _to_float(_attr(c.JANUX_ROUND_COST)),
        _UNPRICED_ROUND, _IS_INFERENCE,
    ),
}  # fmt: skip
_GROUP_SUMS = {
    "group_key": "key", "group_count": "count()", "group_failed": "countIf(failed)", "input_sum": "sum(i)",
    "output_sum": "sum(o)", "cost_sum": "sum(cost)", "unpriced_sum": "sum(u)", "unread_sum": "sum(unread)",
}  # fmt: skip


def _span_rows(dimension: str) -> str:
    """key, failed, i, o, cost, u of every span adding to `dimension` (agent or model)."""
    key, failed, i, o, cost, u, where = _ROW_COLUMNS[dimension]
    return (
        f"SELECT TraceId, ParentSpanId, {key} AS key, {failed} AS failed, {i} AS i, {o} AS o, "
        f"{cost} AS cost, {u} AS u, if(i IS NULL AND o IS NULL AND NOT failed, 1, 0) AS unread "
        f"FROM spans WHERE {where}"
    )


_TOOL_SUMS = group_select(
    {
        "group_key": "t.key", "group_count": "count()", "group_failed": "countIf(t.failed)",
        "input_sum": "sum(a.i)", "output_sum": "sum(a.o)", "cost_sum": "sum(a.cost)",
        "unpriced_sum": "sum(a.u)", "unread_sum": "0",
    }
)  # fmt: skip


def _usage_sql(dimension: str, spans: str) -> str:
    """The grouped rows (key, count, failed, input, output, cost, unpriced) of `dimension`."""
    if dimension == "tool":
        body = f"""
            SELECT {_TOOL_SUMS}
            FROM (SELECT TraceId, SpanId, {_attr(c.GEN_AI_TOOL_NAME)} AS key,
                    {_STATUS_ATTR} IN {_FAILING} AS failed FROM spans WHERE {_IS_DELEGATION}) AS t
            LEFT JOIN (SELECT TraceId, ParentSpanId, sum(i) AS i, sum(o) AS o, sum(cost) AS cost, sum(u) AS u
                FROM ({_span_rows("agent")}) GROUP BY TraceId, ParentSpanId) AS a
            ON a.TraceId = t.TraceId AND a.ParentSpanId = t.SpanId
            GROUP BY t.key"""
    elif dimension == "conversation":
        body = _CONVERSATION_SQL
    else:
        body = f"SELECT {group_select(_GROUP_SUMS)} FROM ({_span_rows(dimension)}) GROUP BY key"
    return f"WITH spans AS ({spans}) {body}"


# One row per trace: the root's bill, or (no bill) the sums of its inference spans.
_CONVERSATION_SQL = f"""
    SELECT {
    group_select(
        {
            "group_key": "key",
            "group_count": "count()",
            "group_failed": "countIf(failed_handoffs > 0)",
            "input_sum": "sum(if(has_bill, bill_i, m.i))",
            "output_sum": "sum(if(has_bill, bill_o, m.o))",
            "cost_sum": "sum(if(has_bill, bill_cost, m.cost))",
            "unpriced_sum": "sum(if(has_bill, bill_u, m.u))",
            "unread_sum": "0",
        }
    )
}
    FROM (
        SELECT TraceId, {_root_attr(c.GEN_AI_CONVERSATION_ID)} AS key, {_FAILED_HANDOFFS},
            {_root(_HAS_BILL)} AS has_bill,
            {_to_int(_root_attr(c.JANUX_BILL_INPUT_TOKENS))} AS bill_i,
            {_to_int(_root_attr(c.JANUX_BILL_OUTPUT_TOKENS))} AS bill_o,
            {_to_float(_root_attr(c.JANUX_BILL_COST))} AS bill_cost,
            {_to_int(_root_attr(c.JANUX_BILL_UNPRICED_TOKENS))} AS bill_u
        FROM spans GROUP BY TraceId) AS s
    LEFT JOIN (SELECT TraceId, sum(i) AS i, sum(o) AS o, sum(cost) AS cost, sum(u) AS u
        FROM ({_span_rows("model")}) GROUP BY TraceId) AS m ON m.TraceId = s.TraceId
    GROUP BY key"""
