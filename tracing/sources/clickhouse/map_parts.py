"""The rows the agent map's hourly rollup (`schema.MAP_HOURLY`, schema 3) is made of, in SQL.

`janux_map_hourly` is keyed by (part, hour of trace start, key, hour of loop start for the timeline)
and sums, with sign +1 (added) or -1 (taken back), what `analysis.agentmap.sums.MapSums` adds up:

| part | key | what it sums |
|---|---|---|
| `trace` | `[]` | traces (`rows`) |
| `path` | the path | runs, errors, own (`a_*`) and inclusive (`b_*`) usage |
| `node` | `[agent]` | distinct traces (+1 at the trace's first loop of the agent), durations |
| `timeline` | `[agent]`, `at_ns` the loop's start hour | own usage |
| `turn` | `[]` | priced top-level turn costs, unpriced turns |
| `edge` | `[caller, target, kind]` | count, attempts, failed, cost, distinct traces, durations, failures |

(An edge's failures are kept by kind and by reason.) Percentiles stay exact: durations (and turn
costs) are kept as value -> count maps (`vals`, the value's Float64 bits as the key: `sumMap` does
not take float keys), so the nearest-rank p50/p95 of `sums.percentile` can be read from them; a
map's size is the number of distinct values, not of loops. A trace's distinct-trace +1 sits in the
hour of its start, so sums over hours count each trace once.

The same row builders (`loop_parts`, `delegation_parts`, `trace_parts`) serve the views and the reads
of partial hours (over the arrays a facts row carries, `carried_loops`/`carried_delegations`) and
the back-fill and the partial hours' facts rows written before schema 3 (over the rows of
`janux_loops`/`janux_delegations`, `numbered`), so they cannot drift.
"""

from __future__ import annotations

from collections.abc import Sequence

_H = 3_600 * 10**9  # `schema.HOUR_NS` (this module is below `schema`: it builds its views)
MINUTE_NS = 60 * 10**9
"""The finer rollup's bucket (`schema.MAP_MINUTE`, schema 6): a minute of trace start (and, for the
timeline, of loop start)."""
_EMPTY_INT_MAP = "CAST(map(), 'Map(Int64, Int64)')"
NODE_KEY = "[agent]"
"""The rollup key of an agent (`node`, `timeline`), over a loop row."""
EDGE_KEY = "[caller, target, toString(kind)]"
"""The rollup key of an edge, over a delegation row."""
_EMPTY_TEXT_MAP = "CAST(map(), 'Map(String, Int64)')"

MAP_SUMS = (
    "rows", "runs", "errors", "traces", "attempts", "failed", "unpriced_turns",
    "a_input", "a_output", "a_cost", "a_cost_n", "a_unpriced", "b_input", "b_output", "b_cost", "b_cost_n",
    "b_unpriced",
)  # fmt: skip
"""Summed columns: `rows` counts the rows added minus taken back (a key whose rows were all taken
back sums to 0 and is skipped); `a_*`/`b_*` are two usages (own/inclusive for paths, own for the
timeline, the delegation cost for edges), each Nullable cost as a sum and a count of its non-NULL values."""
MAP_MAPS = (
    ("vals", "Map(Int64, Int64)"),
    ("failures", "Map(String, Int64)"),
    ("reasons", "Map(String, Int64)"),
)
"""Summed-by-key columns: value counts (durations, turn costs), failures by kind, by reason."""


def map_keys(bucket: str = "hour_ns") -> tuple[tuple[str, str], ...]:
    """Key columns of a map rollup whose time bucket (of trace start) is the column `bucket`."""
    return (
        ("part", "LowCardinality(String)"),
        (bucket, "Int64"),
        ("key", "Array(String)"),
        ("at_ns", "Int64"),
        ("day", "Date"),
    )


def map_columns(bucket: str = "hour_ns") -> tuple[tuple[str, str], ...]:
    """Columns of a map rollup whose time bucket is the column `bucket`."""
    return (
        *map_keys(bucket),
        *(
            (n, f"SimpleAggregateFunction(sum, {'Float64' if n.endswith('_cost') else 'Int64'})")
            for n in MAP_SUMS
        ),
        *((n, f"SimpleAggregateFunction(sumMap, {kind})") for n, kind in MAP_MAPS),
    )


MAP_KEYS = map_keys()
"""Key columns of `janux_map_hourly`."""
MAP_COLUMNS = map_columns()
"""Columns of `janux_map_hourly`."""
MINUTE_COLUMNS = map_columns("minute_ns")
"""Columns of `janux_map_minute` (schema 6): the same sums per minute of trace start."""
_DEFAULTS = {**dict.fromkeys(MAP_SUMS, "0"), "vals": _EMPTY_INT_MAP, "failures": _EMPTY_TEXT_MAP,
             "reasons": _EMPTY_TEXT_MAP}  # fmt: skip


def _select(values: dict[str, str], unit: int) -> str:
    """The rollup's columns from `values` (name -> expression, `bucket` the time bucket of trace
    start, named as the rollup of `unit` names it; the sums not given 0 or empty)."""
    cast = {n: f"toInt64({v})" if n in MAP_SUMS and not n.endswith("_cost") else v for n, v in values.items()}
    sums = [f"{cast.get(n, _DEFAULTS[n])} AS {n}" for n in (*MAP_SUMS, *(m for m, _ in MAP_MAPS))]
    bucket = bucket_column(unit)
    keys = [(values["bucket" if n == bucket else n], n) for n, _ in map_keys(bucket)]
    return ", ".join([*(f"{value} AS {name}" for value, name in keys), *sums])


def bucket_column(unit: int) -> str:
    """The name of the time-bucket column of the map rollup of `unit` (an hour or a minute)."""
    return "minute_ns" if unit == MINUTE_NS else "hour_ns"


def _usage(prefix: str, source: str, condition: str) -> dict[str, str]:
    """`prefix`_{input,output,cost,cost_n,unpriced} from the `source`_* usage columns when `condition`."""
    return {
        f"{prefix}_input": f"g * if({condition}, {source}_input, 0)",
        f"{prefix}_output": f"g * if({condition}, {source}_output, 0)",
        f"{prefix}_cost": f"g * if({condition}, ifNull({source}_cost, 0), 0)",
        f"{prefix}_cost_n": f"g * ({condition} AND {source}_cost IS NOT NULL)",
        f"{prefix}_unpriced": f"g * if({condition}, {source}_unpriced, 0)",
    }


def _floor(column: str, unit: int) -> str:
    return f"toInt64(intDiv({column}, {unit}) * {unit})"


def _counted(value: str) -> str:
    """A map {value's Float64 bits: g}."""
    return f"map(reinterpretAsInt64(toFloat64(assumeNotNull({value}))), toInt64(g))"


def loop_parts(source: str, unit: int = _H) -> str:
    """Rollup rows of every loop of `source` (columns: `s` trace start, `g` sign, the
    `schema.MAP_LOOP_FIELDS`, `first`: the trace's first loop of its agent), in buckets of `unit`
    (trace start, and loop start for the timeline)."""
    values = {
        "part": "part",
        "bucket": _floor("s", unit),
        "key": f"multiIf(part = 'path', path, part = 'turn', CAST([], 'Array(String)'), {NODE_KEY})",
        "at_ns": f"if(part = 'timeline', {_floor('start_ns', unit)}, 0)",
        "day": f"toDate(fromUnixTimestamp64Nano({_floor('s', unit)}, 'UTC'))",
        "rows": "g",
        "runs": "g * (part IN ('path', 'node'))",  # a node's runs per hour bound its newest references
        "errors": "g * (part = 'path' AND error)",
        "traces": "g * (part = 'node' AND first)",
        "unpriced_turns": "g * (part = 'turn' AND inclusive_cost IS NULL)",
        **_usage("a", "own", "part IN ('path', 'timeline')"),
        **_usage("b", "inclusive", "part = 'path'"),
        "vals": (
            f"multiIf(part = 'node' AND duration_ms IS NOT NULL, {_counted('duration_ms')}, "
            f"part = 'turn' AND inclusive_cost IS NOT NULL, {_counted('inclusive_cost')}, {_EMPTY_INT_MAP})"
        ),
    }
    parts = "if(top, ['path', 'node', 'timeline', 'turn'], ['path', 'node', 'timeline'])"
    return f"SELECT {_select(values, unit)} FROM ({source}) ARRAY JOIN {parts} AS part"


def delegation_parts(source: str, unit: int = _H) -> str:
    """Rollup rows of every delegation of `source` (columns: `s`, `g`, the
    `schema.MAP_DELEGATION_FIELDS`, `first`: the trace's first delegation of its edge), in buckets
    of `unit`."""
    failed = "failure IS NOT NULL"
    values = {
        "part": "'edge'",
        "bucket": _floor("s", unit),
        "key": EDGE_KEY,
        "at_ns": "0",
        "day": f"toDate(fromUnixTimestamp64Nano({_floor('s', unit)}, 'UTC'))",
        "rows": "g",
        "runs": "g",
        "traces": "g * first",
        "attempts": "g * attempts",
        "failed": f"g * ({failed})",
        **_usage("a", "cost", "1"),
        "vals": f"if(duration_ms IS NOT NULL, {_counted('duration_ms')}, {_EMPTY_INT_MAP})",
        "failures": f"if({failed}, map(assumeNotNull(failure), toInt64(g)), {_EMPTY_TEXT_MAP})",
        "reasons": f"if({failed}, map(reason, toInt64(g)), {_EMPTY_TEXT_MAP})",
    }
    return f"SELECT {_select(values, unit)} FROM ({source})"


def trace_parts(source: str, unit: int = _H) -> str:
    """One `trace` row per row of `source` (columns `s`, `g`), in buckets of `unit`."""
    values = {"part": "'trace'", "bucket": _floor("s", unit), "key": "CAST([], 'Array(String)')",
              "at_ns": "0", "day": f"toDate(fromUnixTimestamp64Nano({_floor('s', unit)}, 'UTC'))",
              "rows": "g"}  # fmt: skip
    return f"SELECT {_select(values, unit)} FROM ({source})"


def _facts_source(prefix: str, fields: Sequence[str], start: str, sign: int, first_of: str) -> str:
    """The loops (or delegations) a facts row carries, one row each (`prefix`: `loop_`,
    `replaced_delegation_`, ...)."""
    # Renamed twice: an alias named like a facts column (`start_ns`) would shadow it.
    arrays = ", ".join(f"{prefix}{name} AS x_{name}" for name in fields)
    inner = (
        f"SELECT {start} AS s0, x_first, {', '.join(f'x_{name}' for name in fields)} FROM {{facts}} "
        f"ARRAY JOIN {arrays}, arrayEnumerateUniq({first_of.format(p=prefix)}) AS x_first"
    )
    renamed = ", ".join(f"x_{name} AS {name}" for name in fields)
    return f"SELECT s0 AS s, toInt64({sign}) AS g, {renamed}, x_first = 1 AS first FROM ({inner})"


_LOOP_FIRST = "{p}agent"
"""What makes a loop its trace's first of a group (`arrayEnumerateUniq` over the facts' arrays)."""
_EDGE_FIRST = "{p}caller, {p}target, {p}kind"


def carried_loops(facts: str, fields: Sequence[str], start: str, sign: int, replaced: bool = False) -> str:
    """The loops the rows of `facts` (a table, or a query in parentheses) carry as arrays (the
    `loop_` fields `fields`; `replaced`: the replaced version's), as a `loop_parts` source: `s` =
    `start`, each counted `sign` times."""
    prefix = "replaced_loop_" if replaced else "loop_"
    return _facts_source(prefix, fields, start, sign, _LOOP_FIRST).replace("{facts}", facts)


def carried_delegations(
    facts: str, fields: Sequence[str], start: str, sign: int, replaced: bool = False
) -> str:
    """The delegations the rows of `facts` carry, as a `delegation_parts` source (`carried_loops`)."""
    prefix = "replaced_delegation_" if replaced else "delegation_"
    return _facts_source(prefix, fields, start, sign, _EDGE_FIRST).replace("{facts}", facts)


def views(
    facts: str, loops: Sequence[str], delegations: Sequence[str], unit: int = _H
) -> list[tuple[str, str]]:
    """(name, SELECT) of every view feeding the rollup of `unit` (an hour, a minute) from the facts
    table `facts`, whose rows carry the loop fields `loops` and the delegation fields `delegations`
    as arrays."""
    views = []
    for name, start, sign, replaced in (
        ("add", "start_ns", 1, False),
        ("retract", "replaced_start_ns", -1, True),
    ):
        views += [
            (f"loops_{name}", loop_parts(carried_loops(facts, loops, start, sign, replaced), unit)),
            (f"delegations_{name}",
             delegation_parts(carried_delegations(facts, delegations, start, sign, replaced), unit)),
        ]  # fmt: skip
    views += [
        ("traces_add", trace_parts(
            f"SELECT start_ns AS s, toInt64(1) AS g FROM {facts} WHERE map_rows = 1", unit)),
        ("traces_retract", trace_parts(
            f"SELECT replaced_start_ns AS s, toInt64(-1) AS g FROM {facts} WHERE replaced_version > 0",
            unit)),
    ]  # fmt: skip
    return views


def numbered(rows: str, fields: Sequence[str], group: str, start: str, sign: int = 1) -> str:
    """`rows` (of `janux_loops`/`janux_delegations`) as a rollup source: `s` = `start`, `g` = `sign`
    (1 added, -1 taken back), the `fields`, and `first` (the trace's first row of its `group`, as
    `arrayEnumerateUniq` in the views)."""
    first = f"row_number() OVER (PARTITION BY trace_id, version, {group} ORDER BY seq) = 1"
    columns = f"{start} AS s, toInt64({int(sign)}) AS g, {', '.join(fields)}, {first} AS first"
    return f"SELECT {columns} FROM ({rows})"
