"""Janux's own tables next to the Collector's `otel_traces`: versioned, idempotent DDL.

The deriver (`deriver.derive_pending`) writes each trace's facts (`analysis.trace_facts.TraceFacts`)
into these tables; the ClickHouse source reads them instead of re-deriving spans at query time.

- `janux_trace_facts`: one row per trace (the trace list's `TraceSummary` fields, its span count as
  the version, the insertion time of its newest span). `ReplacingMergeTree(version)` ordered by
  trace id: a trace derived again (late spans) gets a new row that replaces the old one; reads use
  `FINAL`. Partitioned by the day the trace started (kept when a trace is derived again, so both
  versions share a partition and replace each other).
- `janux_loops`, `janux_delegations`, `janux_usage`, `janux_failures`: the trace's agent-map
  loops, its delegations (status, failure kind and reason), its `usage_by` rows per dimension and
  its failed-handoff spans; one row per item, keyed (trace, version, position). Reads keep the rows
  whose (trace, version) is the trace's current facts row, so a replaced version never counts.
- `janux_usage_hourly` (schema 2): `janux_usage` summed per (dimension, hour of trace start, key),
  a `SummingMergeTree` fed by two materialized views on `janux_trace_facts`: each facts row
  carries its usage rows (added) and those of the version it replaces (taken back), so ranges of
  whole hours are summed without `FINAL` (`rollup_ddl`, read by `usage_rollup`).
- `janux_map_hourly` (schema 3): the agent map's sums per (part, hour of trace start, key), an
  `AggregatingMergeTree` fed by six views on `janux_trace_facts` the same way from the loops and
  delegations each facts row carries (`map_rollup_ddl`; its rows: `map_parts`; read by `map_rollup`).
- `janux_loops.group_hash`, `janux_delegations.group_hash` (schema 4): the hash of the row's
  map-rollup key (`MATERIALIZED`, so writers never name it), so the map's newest references find
  each agent's (edge's) rows by one number instead of hashing its strings per row (`group_hash_ddl`).
- Two projections of `janux_trace_facts` (schema 5, `FACTS_PROJECTIONS`): its rows ordered by trace
  start (the columns the partial hours of a map read: `filter_sql`'s, the carried loop and
  delegation arrays), so a range of start reads only its granules, not every granule of its day
  (facts are ordered by trace id); and (trace, version, replaced version, day) ordered by the
  replaced version, so the rows that replaced a version are found without reading the day.
- `janux_map_minute` (schema 6): the same sums per minute of trace start (the timeline's per
  minute of loop start), fed by six more views the same way, so a range's partial hours are read
  as minute buckets and only its partial minutes as facts rows (`map_rollup.cover`).
- `janux_failures_by_start` (schema 6): (span start, trace, version, seq, span) of every
  `janux_failures` row, ordered by the span's start and fed by a view, so the failures page reads
  its newest rows by the key instead of every failure's trace (`derived.DerivedReads.failed_handoff_ids`).
- `janux_trace_links` (schema 8): the link index of runs split across traces, two rows per span link
  into another trace (one keyed by each trace), written by the deriver with the facts.
- `janux_derive_state`: the watermark of each deriver shard of each source table (insertion time
  of the rows derived so far); `janux_schema`: the schema versions applied.

`otel_traces` gets one column, `JanuxInsertedAt` (`MATERIALIZED now64(3)`: the server fills it at
insert; the exporter's INSERT names its columns and never sees it) with a minmax index: the
watermark the deriver reads from. Rows already in the table get the time `init` ran.

Every statement is `IF NOT EXISTS`, so `init` runs any number of times; `cluster_ddl` gives the same
tables for a cluster (`ON CLUSTER`, `Replicated*` engines, `Distributed` tables to read from).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from janux.tracing.sources.clickhouse import map_parts

SCHEMA_VERSION = 8
"""Version of the DDL below; `init` records it in `janux_schema`. 1: the per-trace tables; 2: the
hourly usage rollup (`janux_usage_hourly`, fed from the facts rows' usage arrays); 3: the hourly
agent-map rollup (`janux_map_hourly`, fed from the facts rows' loop and delegation arrays); 4: the
map-key hash of each loop and delegation row (`GROUP_HASH`); 5: the facts table's projections
(`FACTS_PROJECTIONS`); 6: the per-minute agent-map rollup (`MAP_MINUTE`) and the failures ordered by
their span's start (`FAILURES_BY_START`); 7: the path of a transferred conversation on the facts rows
(`agent_path`; rows derived before it keep an empty path and their last agent as `root_agent`); 8: the
link index of runs split across traces (`TRACE_LINKS`; traces derived before it are not in it until
derived again)."""

INSERTED_COLUMN = "JanuxInsertedAt"
"""The insertion-time column `init` adds to `otel_traces` (the deriver's watermark)."""

FACTS = "janux_trace_facts"
"""One row per trace (and version)."""
LOOPS = "janux_loops"
"""Agent-map loops of every trace."""
DELEGATIONS = "janux_delegations"
"""Delegations and transfers of every trace."""
USAGE = "janux_usage"
"""`usage_by` rows of every trace, per dimension."""
FAILURES = "janux_failures"
"""The span of every failed handoff."""
USAGE_HOURLY = "janux_usage_hourly"
"""`janux_usage` summed per (dimension, hour of trace start, key): see `rollup_ddl`."""
TRACE_LINKS = "janux_trace_links"
"""The link index (`analysis.trace_links`, schema 8): each span link into another trace as two rows,
one under each trace (`outgoing` 1 under the trace whose span carries it), so the rows of either side
are one read by the primary key."""
STATE = "janux_derive_state"
"""Watermark per deriver shard."""
SCHEMA = "janux_schema"
"""Applied schema versions."""
GROUP_HASH = "group_hash"
"""The column (schema 4) of `janux_loops`/`janux_delegations` holding `cityHash64` of the row's
map-rollup key (`map_parts.NODE_KEY`/`EDGE_KEY`): equal to the rollup's `cityHash64(key)`."""


class CommandClient(Protocol):
    """The part of a ClickHouse client DDL needs (`clickhouse_connect` and `ChdbClient` have it)."""

    def command(self, statement: str) -> Any:
        """Run a statement that returns nothing."""
        ...

    def query(self, query: str, parameters: dict[str, Any] | None = None) -> Any:
        """Run a SELECT; the result has `result_rows`."""
        ...


SUMMARY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("trace_id", "String"),
    ("start_ns", "Int64"),
    ("duration_ns", "Int64"),
    ("service_name", "String"),
    ("root_name", "String"),
    ("root_agent", "Nullable(String)"),
    ("conversation_id", "Nullable(String)"),
    ("span_count", "UInt64"),
    ("delegations", "UInt32"),
    ("attempts", "UInt32"),
    ("failed_handoffs", "UInt32"),
    ("error_spans", "UInt32"),
    ("bill_cost", "Nullable(Float64)"),
    ("bill_input_tokens", "Nullable(Int64)"),
    ("bill_output_tokens", "Nullable(Int64)"),
    ("bill_unpriced_tokens", "Nullable(Int64)"),
    ("transfers", "UInt32"),
    ("inference_spans", "UInt32"),
    ("usage_read_spans", "UInt32"),
    ("unrecognised_spans", "UInt32"),
    ("bill_cost_estimate", "Nullable(Float64)"),
    ("bill_reconciled", "Nullable(Bool)"),
    ("agent_path", "Array(String)"),
)
"""`TraceSummary`'s fields, in order, with their ClickHouse types (a test holds the two equal)."""
LIST_TIME_FIELDS = frozenset({"linked_traces"})
"""`TraceSummary` fields that are not facts of one trace: counted when a list is read (from the link
index, `trace_links.with_linked_counts`), so no column keeps them."""
ADDED_SUMMARY_COLUMNS = SUMMARY_COLUMNS[-1:]
"""The summary columns added after schema 1 (`agent_path`, schema 7): an upgrade adds them."""

MAP_HOURLY = "janux_map_hourly"
"""The agent map's sums per (part, hour of trace start, key): see `map_rollup`."""
MAP_MINUTE = "janux_map_minute"
"""The agent map's sums per (part, minute of trace start, key) (schema 6): see `map_rollup.cover`."""
FAILURES_BY_START = "janux_failures_by_start"
"""`janux_failures` ordered by the failing span's start (schema 6), fed by a view."""
ROLLUPS = (USAGE_HOURLY, MAP_HOURLY, MAP_MINUTE, FAILURES_BY_START)
"""The tables views fill from the derived tables' inserts (emptied with them by tests and benches)."""

FACTS_EXTRA: tuple[tuple[str, str], ...] = (
    ("day", "Date"),
    ("version", "UInt64"),
    ("janux", "Bool"),
    ("last_inserted_ms", "Int64"),
)
"""Columns of `janux_trace_facts` besides the summary: partition day, version (the span count the
facts were computed from), Janux accounting, insertion time (Unix ms) of the newest span read."""

ROLLUP_USAGE_FIELDS: tuple[tuple[str, str], ...] = (
    ("dimension", "String"),
    ("key", "String"),
    ("count", "Int64"),
    ("failed", "Int64"),
    ("input", "Nullable(Int64)"),
    ("output", "Nullable(Int64)"),
    ("cost", "Nullable(Float64)"),
    ("unpriced", "Nullable(Int64)"),
    ("unread", "Int64"),
)
"""One usage row (`usage_rows.GROUP_COLUMNS`) of a trace, as the facts row's parallel arrays carry it."""

ROLLUP_FACTS_COLUMNS: tuple[tuple[str, str], ...] = (
    *((f"usage_{name}", f"Array({kind})") for name, kind in ROLLUP_USAGE_FIELDS),
    ("replaced_start_ns", "Int64"),
    *((f"replaced_{name}", f"Array({kind})") for name, kind in ROLLUP_USAGE_FIELDS),
)
"""Columns of `janux_trace_facts` (schema 2) the rollup is fed from: the trace's usage rows
(`usage_*`, added to the rollup) and, when the row replaces an earlier version of the trace, that
version's start and usage rows (`replaced_*`, subtracted). One facts row is written once per
version (`deriver`), so each version is added once and taken back once."""

_KEY = (("trace_id", "String"), ("day", "Date"), ("version", "UInt64"), ("seq", "UInt32"))

LOOP_COLUMNS: tuple[tuple[str, str], ...] = (
    ("agent", "String"),
    ("path", "Array(String)"),
    ("start_ns", "Int64"),
    ("span_id", "String"),
    ("duration_ms", "Nullable(Float64)"),
    ("error", "Bool"),
    ("top", "Bool"),
    ("own_input", "Int64"),
    ("own_output", "Int64"),
    ("own_cost", "Nullable(Float64)"),
    ("own_unpriced", "Int64"),
    ("inclusive_input", "Int64"),
    ("inclusive_output", "Int64"),
    ("inclusive_cost", "Nullable(Float64)"),
    ("inclusive_unpriced", "Int64"),
)
"""`LoopFacts` flattened (its `ref` is `start_ns`, the trace id and `span_id`)."""

DELEGATION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("caller", "String"),
    ("target", "String"),
    ("kind", "LowCardinality(String)"),
    ("tool", "String"),
    ("status", "LowCardinality(String)"),
    ("attempts", "UInt32"),
    ("duration_ms", "Nullable(Float64)"),
    ("failure", "Nullable(String)"),
    ("reason", "String"),
    ("span_id", "String"),
    ("start_ns", "Int64"),
    ("cost_input", "Int64"),
    ("cost_output", "Int64"),
    ("cost_cost", "Nullable(Float64)"),
    ("cost_unpriced", "Int64"),
)
"""`DelegationFacts` flattened (its `cost` as four columns)."""

MAP_LOOP_FIELDS = (
    "agent", "path", "start_ns", "duration_ms", "error", "top", "own_input", "own_output", "own_cost",
    "own_unpriced", "inclusive_input", "inclusive_output", "inclusive_cost", "inclusive_unpriced",
)  # fmt: skip
"""The `LOOP_COLUMNS` the agent-map rollup adds up (not the span id: references are read from rows)."""
MAP_DELEGATION_FIELDS = (
    "caller", "target", "kind", "attempts", "duration_ms", "failure", "reason", "cost_input", "cost_output",
    "cost_cost", "cost_unpriced",
)  # fmt: skip
"""The `DELEGATION_COLUMNS` the agent-map rollup adds up."""


def _arrays(prefix: str, names: Sequence[str], columns: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    kinds = dict(columns)
    return [(f"{prefix}{name}", f"Array({kinds[name]})") for name in names]


MAP_FACTS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("map_rows", "UInt8"),
    ("replaced_version", "UInt64"),
    *_arrays("loop_", MAP_LOOP_FIELDS, LOOP_COLUMNS),
    *_arrays("delegation_", MAP_DELEGATION_FIELDS, DELEGATION_COLUMNS),
    *_arrays("replaced_loop_", MAP_LOOP_FIELDS, LOOP_COLUMNS),
    *_arrays("replaced_delegation_", MAP_DELEGATION_FIELDS, DELEGATION_COLUMNS),
)
"""Columns of `janux_trace_facts` (schema 3) the agent-map rollup is fed from: `map_rows` is 1 on
rows written by schema 3 (the upgrade back-fills the others once), the trace's loops and delegations
(added) and, when `replaced_version` > 0, those of the version it replaces (taken back)."""

FILTERED_COLUMNS = (
    "service_name", "root_agent", "conversation_id", "bill_cost", "error_spans", "failed_handoffs",
)  # fmt: skip
"""The summary columns `derived.filter_sql` filters on besides `start_ns` and `trace_id`."""
FACTS_BY_START = "janux_facts_by_start"
"""Projection (schema 5): the columns a range of trace start reads from the facts rows (the map's
partial hours, its sub-hour timeline), ordered by `start_ns`."""
FACTS_BY_REPLACED = "janux_facts_by_replaced"
"""Projection (schema 5): (trace, version, replaced version, day) ordered by `replaced_version`."""
_BY_START_COLUMNS = (
    "start_ns", "trace_id", "version", "replaced_version", "map_rows", "day", *FILTERED_COLUMNS,
    *(n for n, _ in MAP_FACTS_COLUMNS if n.startswith(("loop_", "delegation_"))),
)  # fmt: skip
FACTS_PROJECTIONS: tuple[tuple[str, str], ...] = (
    (FACTS_BY_START, f"SELECT {', '.join(_BY_START_COLUMNS)} ORDER BY start_ns"),
    (FACTS_BY_REPLACED, "SELECT trace_id, version, replaced_version, day ORDER BY replaced_version"),
)
"""Projections of `janux_trace_facts` (schema 5). Facts are ordered by trace id, so the rows of a
range of trace start lie in every granule of their day partition: a partial hour read (and
decompressed the arrays of) the whole day. `FACTS_BY_START` holds what those reads use, ordered by
start; `FACTS_BY_REPLACED` the few rows that replaced a version (the current-version rule of
`derived._newest_carried` looks them up per day). ClickHouse picks a projection for a read when it
holds every column the read uses and reads fewer granules; reads with `FINAL` never use one.
Inserts fill them; on a merge (which replaces rows) they are rebuilt (`PROJECTION_SETTING`)."""
PROJECTION_SETTING = "deduplicate_merge_projection_mode = 'rebuild'"
"""What a merge of a `ReplacingMergeTree` does to its projections (ClickHouse refuses a projection on
one without it): rebuild them from the merged rows, so they hold what the table holds."""

USAGE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("trace_start_ns", "Int64"),
    ("dimension", "LowCardinality(String)"),
    ("key", "String"),
    ("count", "UInt64"),
    ("failed", "UInt64"),
    ("input_sum", "Nullable(Int64)"),
    ("output_sum", "Nullable(Int64)"),
    ("cost_sum", "Nullable(Float64)"),
    ("unpriced_sum", "Nullable(Int64)"),
    ("unread_sum", "UInt64"),
)
"""One `usage_rows.GROUP_COLUMNS` row of one dimension, with the trace's start (for time buckets)."""

FAILURE_COLUMNS: tuple[tuple[str, str], ...] = (("span_id", "String"), ("span_start_ns", "Int64"))
"""The span to open for one failed handoff, and its start (how failed handoffs are ordered)."""


TRACE_LINK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("trace_id", "String"),
    ("other_trace_id", "String"),
    ("span_id", "String"),
    ("other_span_id", "String"),
    ("outgoing", "UInt8"),
    ("day", "Date"),
)
"""Columns of `janux_trace_links`: a link seen from `trace_id` (its span `span_id` when `outgoing`,
else the linked span), the trace at its other end, and the day of the deriving trace (its TTL)."""

FAILURE_INDEX_COLUMNS: tuple[tuple[str, str], ...] = (
    ("span_start_ns", "Int64"),
    ("trace_id", "String"),
    ("version", "UInt64"),
    ("seq", "UInt32"),
    ("span_id", "String"),
    ("day", "Date"),
)
"""Columns of `janux_failures_by_start`: a `janux_failures` row, ordered by its span's start."""


@dataclass(frozen=True, slots=True)
class Table:
    """One derived table: its name, columns and engine clauses."""

    name: str
    columns: tuple[tuple[str, str], ...]
    order_by: str
    version: str | None
    """Version column of `ReplacingMergeTree` (None: the rows of one key are identical, the last
    written is kept)."""
    partition: bool = True
    projections: tuple[tuple[str, str], ...] = ()
    """(name, SELECT) of the table's projections (`PROJECTION_SETTING` comes with them)."""


TABLES: tuple[Table, ...] = (
    Table(
        FACTS,
        (*SUMMARY_COLUMNS, *FACTS_EXTRA, *ROLLUP_FACTS_COLUMNS, *MAP_FACTS_COLUMNS),
        "trace_id",
        "version",
        projections=FACTS_PROJECTIONS,
    ),
    Table(LOOPS, (*_KEY, *LOOP_COLUMNS), "(trace_id, version, seq)", None),
    Table(DELEGATIONS, (*_KEY, *DELEGATION_COLUMNS), "(trace_id, version, seq)", None),
    Table(USAGE, (*_KEY, *USAGE_COLUMNS), "(trace_id, version, seq)", None),
    Table(FAILURES, (*_KEY, *FAILURE_COLUMNS), "(trace_id, version, seq)", None),
    Table(
        STATE,
        (
            ("source", "String"),
            ("shard", "String"),
            ("shards", "UInt32"),
            ("watermark_ms", "Int64"),
            ("updated_ns", "Int64"),
        ),
        "(source, shard)",
        "updated_ns",
        partition=False,
    ),
    Table(SCHEMA, (("version", "UInt32"), ("applied", "DateTime64(3)")), "version", None, partition=False),
    Table(FAILURES_BY_START, FAILURE_INDEX_COLUMNS, "(span_start_ns, trace_id, version, seq)", None),
    Table(
        TRACE_LINKS, TRACE_LINK_COLUMNS, "(trace_id, other_trace_id, span_id, other_span_id, outgoing)", None
    ),
)
"""Every table `init` creates."""

_TTL_RE = re.compile(r"\bTTL\b.*?toInterval(Second|Minute|Hour|Day|Week|Month|Year)\((\d+)\)", re.S)


def ttl_of(create_query: str) -> tuple[str, int] | None:
    """(unit, amount) of the TTL in `otel_traces`' CREATE statement, None when it has none."""
    found = _TTL_RE.search(create_query)
    return (found.group(1), int(found.group(2))) if found else None


def _engine(table: Table, cluster: str | None) -> str:
    # Every table replaces: a row written twice (a deriver re-run after a kill) is kept once.
    base = "ReplacingMergeTree"
    args = [table.version] if table.version else []
    if cluster:
        args = ["'/clickhouse/tables/{shard}/{database}/" + table.name + "'", "'{replica}'", *args]
        base = "Replicated" + base
    return f"{base}({', '.join(args)})"


def create_table(
    table: Table, ttl: tuple[str, int] | None, cluster: str | None = None, engine: str | None = None
) -> str:
    """The CREATE TABLE statement of one derived table (on a cluster: replicated, local name);
    `engine` replaces the default (`ReplacingMergeTree`) engine."""
    name = f"{table.name}_local" if cluster else table.name
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    columns = ",\n    ".join(
        [*(f"{column} {kind}" for column, kind in table.columns),
         *(f"PROJECTION {p} ({select})" for p, select in table.projections)]
    )  # fmt: skip
    clauses = [f"ENGINE = {engine or _engine(table, cluster)}"]
    if table.partition:
        clauses.append("PARTITION BY day")
    clauses.append(f"ORDER BY {table.order_by}")
    if table.partition and ttl is not None:
        clauses.append(f"TTL day + toInterval{ttl[0]}({ttl[1]})")
    if table.projections:
        clauses.append(f"SETTINGS {PROJECTION_SETTING}")
    return f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} (\n    {columns}\n) " + "\n".join(clauses)


HOUR_NS = 3_600 * 10**9
"""The rollup's time bucket: an hour of trace start, in Unix ns."""

ROLLUP_SUMS = (
    "rows", "count", "failed", "input_sum", "input_n", "output_sum", "output_n", "cost_sum", "cost_n",
    "unpriced_sum", "unpriced_n", "unread_sum",
)  # fmt: skip
"""Summed columns of `janux_usage_hourly`: `rows` counts the usage rows (a key whose rows were all
taken back is gone), each Nullable sum of `janux_usage` is a sum of its non-NULL values and their
count (`*_n`: 0 means the sum is NULL, as `sum` over `janux_usage` gives)."""

ROLLUP_COLUMNS: tuple[tuple[str, str], ...] = (
    ("dimension", "LowCardinality(String)"),
    ("hour_ns", "Int64"),
    ("key", "String"),
    ("day", "Date"),
    *((name, "Float64" if name == "cost_sum" else "Int64") for name in ROLLUP_SUMS),
)
"""Columns of `janux_usage_hourly`."""


def _rollup_select(prefix: str, start: str, sign: int) -> str:
    """The rows one facts row adds to (`sign` 1) or takes back from (-1) the rollup."""
    arrays = ", ".join(f"{prefix}{name} AS u_{name}" for name, _ in ROLLUP_USAGE_FIELDS)
    minus = "-" if sign < 0 else ""
    parts = [
        "u_dimension AS dimension",
        f"intDiv({start}, {HOUR_NS}) * {HOUR_NS} AS hour_ns",
        "u_key AS key",
        "toDate(fromUnixTimestamp64Nano(hour_ns, 'UTC')) AS day",
        f"{sign} AS rows",
        f"{minus}u_count AS count",
        f"{minus}u_failed AS failed",
    ]
    for name in ("input", "output", "cost", "unpriced"):
        parts += [f"{minus}ifNull(u_{name}, 0) AS {name}_sum", f"{sign} * isNotNull(u_{name}) AS {name}_n"]
    parts.append(f"{minus}u_unread AS unread_sum")
    return f"SELECT {', '.join(parts)} FROM {{facts}} ARRAY JOIN {arrays}"


def rollup_ddl(ttl: tuple[str, int] | None, cluster: str | None = None) -> list[str]:
    """The hourly usage rollup (schema 2): `janux_usage_hourly`, a `SummingMergeTree` keyed by
    (dimension, hour of trace start, key), and the two materialized views that feed it from every
    facts row inserted: its usage rows added, the replaced version's taken back. Sums need no
    `FINAL` (the engine only folds rows in the background; a query sums what is there)."""
    local = "_local" if cluster else ""
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    table = Table(USAGE_HOURLY, ROLLUP_COLUMNS, "(dimension, hour_ns, key)", None)
    engine = f"SummingMergeTree(({', '.join(ROLLUP_SUMS)}))"
    if cluster:
        engine = (
            f"ReplicatedSummingMergeTree('/clickhouse/tables/{{shard}}/{{database}}/{USAGE_HOURLY}', "
            f"'{{replica}}', ({', '.join(ROLLUP_SUMS)}))"
        )
    create = create_table(table, ttl, cluster).replace(
        f"ENGINE = {_engine(table, cluster)}", f"ENGINE = {engine}"
    )
    statements = [create]
    for name, prefix, start, sign in (
        ("add", "usage_", "start_ns", 1),
        ("retract", "replaced_", "replaced_start_ns", -1),
    ):
        select = _rollup_select(prefix, start, sign).format(facts=f"{FACTS}{local}")
        statements.append(
            f"CREATE MATERIALIZED VIEW IF NOT EXISTS {USAGE_HOURLY}_{name}{local}{on_cluster} "
            f"TO {USAGE_HOURLY}{local} AS {select}"
        )
    if cluster:
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {USAGE_HOURLY}{on_cluster} AS {USAGE_HOURLY}_local "
            f"ENGINE = Distributed({cluster}, currentDatabase(), {USAGE_HOURLY}_local, rand())"
        )
    return statements


def map_rollup_ddl(
    ttl: tuple[str, int] | None, cluster: str | None = None, unit: int = HOUR_NS
) -> list[str]:
    """`janux_map_hourly` (`unit` an hour; `janux_map_minute` for a minute, schema 6) and the six
    views that feed it from every facts row inserted (loops, delegations and the trace itself;
    added, and the replaced version's taken back)."""
    local = "_local" if cluster else ""
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    name = map_rollup_table(unit)
    bucket = map_parts.bucket_column(unit)
    table = Table(name, map_parts.map_columns(bucket), f"(part, {bucket}, key, at_ns)", None)
    engine = "AggregatingMergeTree"
    if cluster:
        path = f"'/clickhouse/tables/{{shard}}/{{database}}/{name}'"
        engine = f"ReplicatedAggregatingMergeTree({path}, '{{replica}}')"
    statements = [create_table(table, ttl, cluster, engine)]
    for view, select in map_parts.views(f"{FACTS}{local}", MAP_LOOP_FIELDS, MAP_DELEGATION_FIELDS, unit):
        statements.append(
            f"CREATE MATERIALIZED VIEW IF NOT EXISTS {name}_{view}{local}{on_cluster} "
            f"TO {name}{local} AS {select}"
        )
    if cluster:
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {name}{on_cluster} AS {name}_local "
            f"ENGINE = Distributed({cluster}, currentDatabase(), {name}_local, rand())"
        )
    return statements


def map_rollup_table(unit: int) -> str:
    """The map rollup whose buckets are `unit` long (an hour or a minute)."""
    return MAP_MINUTE if unit == map_parts.MINUTE_NS else MAP_HOURLY


_FAILURE_INDEX_COLUMNS = ", ".join(name for name, _ in FAILURE_INDEX_COLUMNS)


def failures_index_ddl(cluster: str | None = None) -> list[str]:
    """The view filling `FAILURES_BY_START` from every `janux_failures` row inserted (schema 6)."""
    local = "_local" if cluster else ""
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    return [
        f"CREATE MATERIALIZED VIEW IF NOT EXISTS {FAILURES_BY_START}_add{local}{on_cluster} "
        f"TO {FAILURES_BY_START}{local} AS SELECT {_FAILURE_INDEX_COLUMNS} FROM {FAILURES}{local}"
    ]


def minute_backfill_sql(cluster: str | None = None) -> list[str]:
    """INSERTs adding to `janux_map_minute` the loops, delegations and traces of the current facts
    rows, and to `janux_failures_by_start` every failure row, written before schema 6. Run once,
    when `init` moves to 6 (the views count what derivers write from then on: stop them for the
    upgrade, as for schema 3; the failure index tolerates rows twice, its reads deduplicate)."""
    columns = ", ".join(n for n, _ in map_parts.MINUTE_COLUMNS)
    carried = ", ".join(n for n, _ in MAP_FACTS_COLUMNS if n.startswith(("loop_", "delegation_")))
    current = f"(SELECT start_ns, {carried} FROM {FACTS} FINAL WHERE map_rows = 1)"
    unit = map_parts.MINUTE_NS
    selects = [
        map_parts.loop_parts(map_parts.carried_loops(current, MAP_LOOP_FIELDS, "start_ns", 1), unit),
        map_parts.delegation_parts(
            map_parts.carried_delegations(current, MAP_DELEGATION_FIELDS, "start_ns", 1), unit
        ),
        map_parts.trace_parts(f"SELECT start_ns AS s, toInt64(1) AS g FROM {FACTS} FINAL", unit),
    ]
    statements = [f"INSERT INTO {MAP_MINUTE} ({columns}) {select}" for select in selects]
    statements += _old_rows_backfill(MAP_MINUTE, columns, unit, traces=False)
    statements.append(
        f"INSERT INTO {FAILURES_BY_START} ({_FAILURE_INDEX_COLUMNS}) SELECT {_FAILURE_INDEX_COLUMNS} "
        f"FROM {FAILURES}"
    )
    return [statement + (_ON_SHARDS if cluster else "") for statement in statements]


_ON_SHARDS = " SETTINGS distributed_product_mode = 'local'"
"""On a cluster a back-fill reads the `Distributed` tables; every derived table is sharded by trace
id, so its `IN`/`JOIN` over facts rows can stay on each shard."""


def map_backfill_sql(cluster: str | None = None) -> list[str]:
    """INSERTs adding to the rollup the loops, delegations and traces of the current facts rows
    written before schema 3 (`map_rows` = 0: the views never saw them). Run once, when `init` moves
    from 2 to 3 (as `backfill_sql`: let that `init` finish)."""
    columns = ", ".join(n for n, _ in map_parts.MAP_COLUMNS)
    statements = _old_rows_backfill(MAP_HOURLY, columns, HOUR_NS, traces=True)
    return [statement + (_ON_SHARDS if cluster else "") for statement in statements]


def _old_rows_backfill(table: str, columns: str, unit: int, *, traces: bool) -> list[str]:
    """INSERTs adding to the map rollup `table` (buckets of `unit`) the loops and delegations of
    the current facts rows written before schema 3 (`map_rows` = 0), read from the per-trace
    tables (and their traces when `traces`)."""
    old = f"SELECT trace_id AS t, version AS v, start_ns AS fs FROM {FACTS} FINAL WHERE map_rows = 0"
    statements = []
    for rows_table, fields, group, parts in (
        (LOOPS, MAP_LOOP_FIELDS, "agent", map_parts.loop_parts),
        (DELEGATIONS, MAP_DELEGATION_FIELDS, "caller, target, kind", map_parts.delegation_parts),
    ):
        rows = (
            f"SELECT * FROM {rows_table} AS r INNER JOIN ({old}) AS f "
            "ON r.trace_id = f.t AND r.version = f.v LIMIT 1 BY trace_id, version, seq"
        )
        statements.append(
            f"INSERT INTO {table} ({columns}) {parts(map_parts.numbered(rows, fields, group, 'fs'), unit)}"
        )
    if traces:
        statements.append(
            f"INSERT INTO {table} ({columns}) "
            f"{map_parts.trace_parts(f'SELECT fs AS s, toInt64(1) AS g FROM ({old})', unit)}"
        )
    return statements


def facts_migration_ddl(cluster: str | None = None) -> list[str]:
    """Schema 1 -> 2 -> 3 (and 7) on `janux_trace_facts`: the rollups' array columns (the agent path)
    and a minmax index on the trace start (range reads of the partial hours at a range's edges skip
    most granules)."""
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    tables = [f"{FACTS}_local", FACTS] if cluster else [FACTS]
    statements = [
        f"ALTER TABLE {table}{on_cluster} ADD COLUMN IF NOT EXISTS {name} {kind}"
        for table in tables
        for name, kind in (*ROLLUP_FACTS_COLUMNS, *MAP_FACTS_COLUMNS, *ADDED_SUMMARY_COLUMNS)
    ]
    statements.append(
        f"ALTER TABLE {tables[0]}{on_cluster} ADD INDEX IF NOT EXISTS idx_janux_start start_ns "
        "TYPE minmax GRANULARITY 1"
    )
    return statements


def group_hash_ddl(cluster: str | None = None) -> list[str]:
    """`GROUP_HASH` on the loop and delegation tables: `MATERIALIZED`, so the deriver's INSERTs
    (which name their columns) never see it and `SELECT *` leaves it out; rows stored before it
    compute it when read until `init` materializes it. On a cluster the `Distributed` table declares
    it the same way (it reads the local tables' column and never sends one)."""
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    statements = []
    for table, key in ((LOOPS, map_parts.NODE_KEY), (DELEGATIONS, map_parts.EDGE_KEY)):
        for target in (f"{table}_local", table) if cluster else (table,):
            statements.append(
                f"ALTER TABLE {target}{on_cluster} ADD COLUMN IF NOT EXISTS {GROUP_HASH} UInt64 "
                f"MATERIALIZED cityHash64({key})"
            )
    return statements


def projection_ddl(cluster: str | None = None) -> list[str]:
    """`FACTS_PROJECTIONS` on a facts table created before schema 5 (no-ops on one created since):
    the merge setting first (ClickHouse refuses the projection without it). Parts written from then
    on carry them; `init` writes them into the older parts once (`MATERIALIZE PROJECTION`)."""
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    target = f"{FACTS}_local{on_cluster}" if cluster else FACTS
    return [
        f"ALTER TABLE {target} MODIFY SETTING {PROJECTION_SETTING}",
        *(f"ALTER TABLE {target} ADD PROJECTION IF NOT EXISTS {name} ({select})"
          for name, select in FACTS_PROJECTIONS),
    ]  # fmt: skip


def source_ddl(table: str = "otel_traces", cluster: str | None = None) -> list[str]:
    """The column (and its minmax index) `init` adds to the Collector's table."""
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    target = f"{table}_local" if cluster else table
    statements = [
        f"ALTER TABLE {target}{on_cluster} ADD COLUMN IF NOT EXISTS {INSERTED_COLUMN} DateTime64(3) "
        "MATERIALIZED now64(3)",
        f"ALTER TABLE {target}{on_cluster} ADD INDEX IF NOT EXISTS idx_janux_inserted {INSERTED_COLUMN} "
        "TYPE minmax GRANULARITY 1",
    ]
    if cluster:  # the Distributed table the deriver reads through must name the column too
        statements.append(
            f"ALTER TABLE {table}{on_cluster} ADD COLUMN IF NOT EXISTS {INSERTED_COLUMN} DateTime64(3)"
        )
    return statements


def ddl(ttl: tuple[str, int] | None = None, table: str = "otel_traces") -> list[str]:
    """Every statement `init` runs on a single server, in order."""
    return [
        *source_ddl(table),
        *(create_table(t, ttl) for t in TABLES),
        *group_hash_ddl(),
        *facts_migration_ddl(),
        *projection_ddl(),
        *rollup_ddl(ttl),
        *map_rollup_ddl(ttl),
        *map_rollup_ddl(ttl, unit=map_parts.MINUTE_NS),
        *failures_index_ddl(),
    ]


def cluster_ddl(cluster: str, ttl: tuple[str, int] | None = None, table: str = "otel_traces") -> list[str]:
    """The same schema on a cluster: `Replicated*` tables `<name>_local` on every node (ON CLUSTER)
    and a `Distributed` table `<name>` over them, sharded by trace id so a trace's rows stay on one
    shard (the source and the deriver use the `Distributed` names). `table` is the exporter's
    local table (`<table>_local` behind its own `Distributed` table, as the exporter's cluster
    setup names it). Every derived table is sharded by trace id, so the source's `IN` subqueries
    join rows of one shard: run its queries with `distributed_product_mode = 'local'`."""
    statements = source_ddl(table, cluster)
    for t in TABLES:
        statements.append(create_table(t, ttl, cluster))
        sharding = "cityHash64(trace_id)" if any(c == "trace_id" for c, _ in t.columns) else "rand()"
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {t.name} ON CLUSTER {cluster} AS {t.name}_local "
            f"ENGINE = Distributed({cluster}, currentDatabase(), {t.name}_local, {sharding})"
        )
    return [
        *statements, *group_hash_ddl(cluster), *facts_migration_ddl(cluster), *projection_ddl(cluster),
        *rollup_ddl(ttl, cluster), *map_rollup_ddl(ttl, cluster),
        *map_rollup_ddl(ttl, cluster, map_parts.MINUTE_NS), *failures_index_ddl(cluster),
    ]  # fmt: skip


class QueryOnly(Protocol):
    """A client that can run SELECTs (the source's `QueryClient`)."""

    def query(self, query: str, parameters: dict[str, Any] | None = None) -> Any:
        """Run a SELECT; the result has `result_rows`."""
        ...


def applied_version(client: QueryOnly) -> int:
    """The newest schema version `init` applied (0: never ran, or the tables are missing)."""
    exists = client.query(
        "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = {n:String}",
        parameters={"n": SCHEMA},
    ).result_rows
    if not exists or not int(exists[0][0]):
        return 0
    rows = client.query(f"SELECT max(version) FROM {SCHEMA}").result_rows
    return int(rows[0][0] or 0) if rows else 0


def otel_ttl(client: CommandClient, table: str) -> tuple[str, int] | None:
    """The TTL of the Collector's table, read from its CREATE statement."""
    rows = client.query(
        "SELECT create_table_query FROM system.tables "
        "WHERE database = currentDatabase() AND name = {n:String}",
        parameters={"n": table},
    ).result_rows
    if not rows:
        raise ValueError(f"no table {table!r} in the current database: start the Collector's exporter first")
    return ttl_of(str(rows[0][0]))


def init(client: CommandClient, table: str = "otel_traces") -> int:
    """Create (or keep) every derived table and the watermark column; returns the schema version.

    Idempotent: every statement is `IF NOT EXISTS`, and the rows already in `table` get an
    insertion time only when the column is new (so they are derived once)."""
    steps = init_statements(
        applied_version(client), otel_ttl(client, table), table, had_column=_has_column(client, table)
    )
    for statement in steps:
        client.command(statement)
    return SCHEMA_VERSION


def init_statements(
    before: int,
    ttl: tuple[str, int] | None = None,
    table: str = "otel_traces",
    cluster: str | None = None,
    *,
    had_column: bool = False,
) -> list[str]:
    """Every statement `init` runs on a database at schema `before` (0: none yet), in order: the
    DDL, the one-time back-fills of an upgrade, and the row recording the new version (without it
    `janux derive` refuses to run). `janux clickhouse init --print` prints the same list, so SQL a
    user applies by hand leaves the database where `init` would."""
    on_cluster = f" ON CLUSTER {cluster}" if cluster else ""
    local = "_local" if cluster else ""
    statements = cluster_ddl(cluster, ttl, table) if cluster else ddl(ttl, table)
    if not had_column:  # rows stored before `init` get one insertion time now, written once
        statements.append(
            f"ALTER TABLE {table}{local}{on_cluster} MATERIALIZE COLUMN {INSERTED_COLUMN} "
            "SETTINGS mutations_sync = 2"
        )
    if before == 1:  # facts rows of schema 1 carry no usage arrays: their rollup comes from janux_usage
        statements.append(
            f"ALTER TABLE {FACTS}{local}{on_cluster} MATERIALIZE INDEX idx_janux_start "
            "SETTINGS mutations_sync = 2"
        )
        statements.append(backfill_sql(cluster))
    if 0 < before < 3:  # facts rows before schema 3 carry no loop arrays: their map comes from the rows
        statements.extend(map_backfill_sql(cluster))
    if 0 < before < 4:  # rows before schema 4 would hash their strings at every read until merged
        statements.extend(
            f"ALTER TABLE {name}{local}{on_cluster} MATERIALIZE COLUMN {GROUP_HASH} "
            "SETTINGS mutations_sync = 2"
            for name in (LOOPS, DELEGATIONS)
        )
    if 0 < before < 5:  # parts written before schema 5 have no projection: reads would skip it
        statements.extend(
            f"ALTER TABLE {FACTS}{local}{on_cluster} MATERIALIZE PROJECTION {name} "
            "SETTINGS mutations_sync = 2"
            for name, _ in FACTS_PROJECTIONS
        )
    if 0 < before < 6:  # the minute rollup and the failure index hold what derivers wrote since
        statements.extend(minute_backfill_sql(cluster))
    if before < SCHEMA_VERSION:
        statements.append(f"INSERT INTO {SCHEMA} (version, applied) VALUES ({SCHEMA_VERSION}, now64(3))")
    return statements


def backfill_sql(cluster: str | None = None) -> str:
    """Adds to the rollup the usage rows of the current facts rows written by schema 1 (no usage
    arrays: the views never saw them). A row written since (arrays set, or no usage rows at all)
    is either counted by the views or adds nothing here, so derivers may run meanwhile. Run once,
    when `init` moves from 1 to 2 (an `init` killed between this and recording version 2 would add
    them twice: `docs/scale.md` says to let the upgrade finish)."""
    inner = (
        "SELECT dimension AS d, key AS k, trace_start_ns AS s, count AS c, failed AS f, input_sum AS i, "
        "output_sum AS o, cost_sum AS m, unpriced_sum AS p, unread_sum AS r "
        f"FROM {USAGE} FINAL WHERE (trace_id, version) IN "
        f"(SELECT trace_id, version FROM {FACTS} FINAL WHERE empty(usage_dimension))"
    )
    sums = ", ".join(f"ifNull({v}, 0), isNotNull({v})" for v in "iomp")
    return (
        f"INSERT INTO {USAGE_HOURLY} ({', '.join(column_names(ROLLUP_COLUMNS))}) "
        f"SELECT d, intDiv(s, {HOUR_NS}) * {HOUR_NS} AS hour_ns, k, "
        "toDate(fromUnixTimestamp64Nano(hour_ns, 'UTC')), 1, c, f, "
        f"{sums}, r FROM ({inner})" + (_ON_SHARDS if cluster else "")
    )


def _has_column(client: CommandClient, table: str) -> bool:
    rows = client.query(
        "SELECT count() FROM system.columns WHERE database = currentDatabase() AND table = {t:String} "
        "AND name = {c:String}",
        parameters={"t": table, "c": INSERTED_COLUMN},
    ).result_rows
    return bool(rows and int(rows[0][0]))


def column_names(columns: Sequence[tuple[str, str]]) -> list[str]:
    """The names of `columns`."""
    return [name for name, _ in columns]
