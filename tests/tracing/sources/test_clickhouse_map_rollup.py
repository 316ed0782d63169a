"""The hourly agent-map rollup (`janux_map_hourly`, schema 3) on chdb: a trace derived again with
late spans takes its earlier loops and delegations back (the rollup equals the one a fresh
derivation of the same spans gives), maps over ranges split at hours equal the memory source's,
the map's sums read the rollup instead of the per-trace rows, and `init` migrates a schema-2
database (its map rollup back-filled once)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from janux.tracing.analysis.agentmap.fleet_stats import TRACE_REFS_KEPT, AgentMap, MapKey
from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse import map_parts, schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.clickhouse.usage_rollup import split_hours
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.testing import synthetic_trace
from tests.support.clickhouse_rows import RecordingClient, insert_statement
from tests.tracing.sources.test_clickhouse_rollup import (
    BASE_NS,
    HOUR_NS,
    HOUR_SPLIT_RANGES,
    MINUTE,
    _spread,
    drop_schema_6,
    upgrade,
)

LONG_EDGES = (
    TraceFilter(start_ns=BASE_NS + 7 * MINUTE),
    TraceFilter(end_ns=BASE_NS + 175 * MINUTE),
    TraceFilter(start_ns=BASE_NS + 7 * MINUTE, end_ns=BASE_NS + 175 * MINUTE),
    TraceFilter(start_ns=BASE_NS + 7 * MINUTE, end_ns=BASE_NS + 150 * MINUTE),
)
"""Ranges whose partial hours are longer than half an hour: the map reads each as its whole rollup
hour with the rows of the rest of that hour taken back (a trace starts exactly at 175 minutes)."""
SECOND = 10**9
SECOND_EDGES = (
    TraceFilter(start_ns=BASE_NS + 25 * MINUTE + 10 * SECOND),
    TraceFilter(end_ns=BASE_NS + 25 * MINUTE + 20 * SECOND),
    TraceFilter(start_ns=BASE_NS + 37 * MINUTE + 50 * SECOND, end_ns=BASE_NS + 175 * MINUTE + 45 * SECOND),
)
"""Ranges with partial minutes (schema 6): the first takes the trace starting at 25:00 back from its
minute bucket through its facts row, the second adds it from its facts row."""


def _map_rollup(client: ChdbClient) -> list[tuple[Any, ...]]:
    """The rollup summed per (part, hour, key, loop hour), keys with rows left only; costs rounded
    (added and taken back in another order), zero counts of the maps dropped."""
    sums = ", ".join(f"sum({name})" for name in map_parts.MAP_SUMS)
    maps = ", ".join(f"sumMap({name})" for name, _ in map_parts.MAP_MAPS)
    rows = client.query(
        f"SELECT part, hour_ns, key, at_ns, {sums}, {maps} FROM {schema.MAP_HOURLY} "
        "GROUP BY part, hour_ns, key, at_ns HAVING sum(rows) != 0 ORDER BY part, hour_ns, key, at_ns"
    ).result_rows
    found = []
    for row in rows:
        head, rest = [str(v) for v in row[:4]], row[4:]
        values = [round(float(v), 9) for v in rest[: len(map_parts.MAP_SUMS)]]
        counted = [
            sorted((str(k), int(v)) for k, v in summed.items() if int(v))
            for summed in rest[len(map_parts.MAP_SUMS) :]
        ]
        found.append((*head, *values, *map(tuple, counted)))
    return found


def _recomputed(client: ChdbClient) -> list[tuple[Any, ...]]:
    """The rollup computed afresh from the per-trace rows of the current facts only (the back-fill's
    statements, into a copy of the table), as `_map_rollup` gives it."""
    client.command(f"CREATE TABLE fresh AS {schema.MAP_HOURLY}")
    client.command(f"ALTER TABLE {schema.FACTS} UPDATE map_rows = 0 WHERE 1 SETTINGS mutations_sync = 2")
    client.command(f"RENAME TABLE {schema.MAP_HOURLY} TO kept, fresh TO {schema.MAP_HOURLY}")
    try:
        for statement in schema.map_backfill_sql():
            client.command(statement)
        return _map_rollup(client)
    finally:
        client.command(f"RENAME TABLE {schema.MAP_HOURLY} TO fresh, kept TO {schema.MAP_HOURLY}")
        client.command("DROP TABLE fresh")
        client.command(f"ALTER TABLE {schema.FACTS} UPDATE map_rows = 1 WHERE 1 SETTINGS mutations_sync = 2")


def _assert_maps_equal_memory(source: ClickHouseSource, spans: list[SpanRecord], flt: TraceFilter) -> None:
    """The map, and with timelines by whole and partial hours, equals the memory source's."""
    memory = MemoryTraceSource(spans)
    assert source.agent_map(flt) == memory.agent_map(flt), flt
    for bucket in (HOUR_NS, 3 * HOUR_NS, HOUR_NS // 4):
        assert source.agent_map(flt, bucket) == memory.agent_map(flt, bucket), (bucket, flt)


def _assert_map_equals_memory(source: ClickHouseSource, spans: list[SpanRecord], flt: TraceFilter) -> None:
    _assert_maps_equal_memory(source, spans, flt)
    memory = MemoryTraceSource(spans)
    _assert_refs_equal_memory(source, memory, flt, memory.agent_map(flt))


def _assert_refs_equal_memory(
    source: ClickHouseSource, memory: MemoryTraceSource, flt: TraceFilter, agent_map: AgentMap
) -> None:
    """Every node's and edge's newest traces and failures, read for it alone, equal the memory
    source's."""
    keys: list[MapKey] = [*(n.agent for n in agent_map.nodes), *(e.key for e in agent_map.edges)]
    for key in keys:
        refs = memory.map_refs(flt, key)
        assert refs.recent and source.map_refs(flt, key) == refs, (key, flt)


def _moved(spans: list[SpanRecord]) -> tuple[list[SpanRecord], list[SpanRecord]]:
    """(early, late): the late half of one trace with loops and delegations arrives two hours
    earlier, so its start hour, loops, paths and delegations change when it is derived again."""
    memory = MemoryTraceSource(spans)
    with_edges = sorted(
        {ref.trace_id for edge in memory.agent_map(TraceFilter()).edges
         for ref in memory.map_refs(TraceFilter(), edge.key).recent}
    )  # fmt: skip
    mine = sorted((s for s in spans if s.trace_id == with_edges[0]), key=lambda s: s.start_ns)
    late = [dataclasses.replace(s, start_ns=s.start_ns - 2 * HOUR_NS) for s in mine[: len(mine) // 2]]
    early = [s for s in spans if s not in mine[: len(mine) // 2]]
    return early, late


def test_a_trace_derived_again_takes_its_earlier_map_rows_back(client: ChdbClient) -> None:
    early, late = _moved(_spread())
    client.command(insert_statement(early))
    derive_pending(client, quiet_s=0)
    first = _map_rollup(client)
    client.command(insert_statement(late))
    assert derive_pending(client, quiet_s=0).traces == 1
    # without the views taking the replaced version back, its loops would still count at its old hour
    assert _map_rollup(client) != first
    carried = client.query(
        "SELECT max(length(replaced_loop_agent)), max(length(replaced_delegation_caller)) "
        f"FROM {schema.FACTS}"
    ).result_rows
    assert int(carried[0][0]) > 0 and int(carried[0][1]) > 0  # the replaced version's rows, to take back
    assert _map_rollup(client) == _recomputed(client)
    source, everything = ClickHouseSource(client), [*early, *late]
    start = min(s.start_ns for s in late)
    for flt in (
        TraceFilter(),
        TraceFilter(start_ns=start + HOUR_NS // 3),
        TraceFilter(end_ns=start + HOUR_NS),
    ):
        _assert_map_equals_memory(source, everything, flt)


def test_maps_over_ranges_split_at_hours_equal_the_memory_source(client: ChdbClient) -> None:
    spans = _spread()
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    # every loop and delegation row written twice, as a deriver killed after its children and
    # rerun leaves them until a merge: the partial hours' reads must count each once
    for table in (schema.LOOPS, schema.DELEGATIONS):
        client.command(f"INSERT INTO {table} SELECT * FROM {table}")
    recording = RecordingClient(client)
    source = ClickHouseSource(recording)
    for flt in HOUR_SPLIT_RANGES:
        _assert_map_equals_memory(source, spans, flt)
    for flt in (*LONG_EDGES, *SECOND_EDGES):
        recording.queries.clear()
        _assert_map_equals_memory(source, spans, flt)
        # rows taken back (rollup rows negated, or computed from facts rows with sign -1), but for
        # the range whose partial minute is added from its facts rows
        taken = any("-rows AS rows" in q or "toInt64(-1) AS g" in q for q in recording.queries)
        assert taken == (flt != SECOND_EDGES[1]), flt
        if flt in SECOND_EDGES:  # the partial minutes are read from the facts rows
            assert any(schema.FACTS in q for q in recording.queries), flt
    recording.queries.clear()
    source.agent_map(TraceFilter(), HOUR_NS)
    # whole hours: one query of the rollup, no loop or delegation row read (the newest references
    # are read only for an inspected node or edge, `map_refs`)
    assert len(recording.queries) == 1 and schema.MAP_HOURLY in recording.queries[0]
    assert not any(table in recording.queries[0] for table in (schema.LOOPS, schema.DELEGATIONS))


ROLLED_RANGES = tuple(f for f in (*HOUR_SPLIT_RANGES, *LONG_EDGES) if split_hours(f) is not None)
"""The ranges the map reads from the rollup (with partial hours or not)."""
_MAP_TABLES = (schema.LOOPS, schema.DELEGATIONS)


def _delete_rows(client: ChdbClient, trace_ids: list[str]) -> None:
    """Deletes the loop and delegation rows of `trace_ids` (a partial hour that still read them would
    miss them)."""
    for table in _MAP_TABLES:
        client.command(f"ALTER TABLE {table} DELETE WHERE {_among(trace_ids)} SETTINGS mutations_sync = 2")


def _among(trace_ids: list[str]) -> str:
    """`trace_id` is one of `trace_ids` (hex ids, quoted as they are)."""
    assert all(t.isalnum() for t in trace_ids)
    return f"has([{', '.join(repr(t) for t in trace_ids)}], trace_id)"


def _as_schema_2_wrote(client: ChdbClient, trace_ids: list[str]) -> None:
    """The facts rows of `trace_ids` as schema 2 wrote them: `map_rows` = 0, no loop or delegation
    arrays, nothing replaced (their loops and delegations are only in the per-trace tables)."""
    emptied = ", ".join(
        f"{name} = CAST([], '{kind}')" for name, kind in schema.MAP_FACTS_COLUMNS if kind.startswith("Array(")
    )
    client.command(
        f"ALTER TABLE {schema.FACTS} UPDATE map_rows = 0, replaced_version = 0, {emptied} "
        f"WHERE {_among(trace_ids)} SETTINGS mutations_sync = 2"
    )


def _trace_ids(spans: list[SpanRecord]) -> list[str]:
    starts: dict[str, int] = {}
    for span in spans:
        starts[span.trace_id] = min(starts.get(span.trace_id, span.start_ns), span.start_ns)
    return sorted(starts, key=lambda t: starts[t])


def _assert_partial_hour_maps_equal_memory(
    client: ChdbClient, spans: list[SpanRecord], late: list[SpanRecord]
) -> RecordingClient:
    """The maps of every rolled range and of two ranges cut inside the late trace's hour equal the
    memory source's; returns the client that recorded their queries."""
    recording = RecordingClient(client)
    source = ClickHouseSource(recording)
    start = min(s.start_ns for s in late)
    for flt in (
        *ROLLED_RANGES,
        *SECOND_EDGES,  # a trace in a partial minute: read from its facts row (or per-trace rows)
        TraceFilter(start_ns=start + HOUR_NS // 3),
        TraceFilter(end_ns=start + HOUR_NS),
    ):
        _assert_maps_equal_memory(source, spans, flt)
    return recording


def test_partial_hours_are_read_from_the_facts_rows_not_the_per_trace_tables(client: ChdbClient) -> None:
    early, late = _moved(_spread())
    client.command(insert_statement(early))
    derive_pending(client, quiet_s=0)
    client.command(insert_statement(late))
    assert derive_pending(client, quiet_s=0).traces == 1  # one trace's second version replaces its first
    spans = [*early, *late]
    # every facts row carries its loops and delegations (schema 3): the partial hours read those,
    # so the map is the same without a single row of the per-trace tables
    _delete_rows(client, _trace_ids(spans))
    assert all(not client.query(f"SELECT 1 FROM {t} LIMIT 1").result_rows for t in _MAP_TABLES)
    recording = _assert_partial_hour_maps_equal_memory(client, spans, late)
    assert not any(table in q for q in recording.queries for table in _MAP_TABLES)


def test_facts_rows_written_before_schema_3_are_read_from_the_per_trace_tables(client: ChdbClient) -> None:
    early, late = _moved(_spread())
    moved = late[0].trace_id
    client.command(insert_statement(early))
    derive_pending(client, quiet_s=0)
    ids = _trace_ids(early)
    old = [t for i, t in enumerate(ids) if i % 2 == 1 or t == moved]
    _as_schema_2_wrote(client, old)  # an upgraded database: half its traces derived before schema 3
    client.command(insert_statement(late))
    assert derive_pending(client, quiet_s=0).traces == 1  # the moved trace's new version: schema 3
    spans = [*early, *late]
    # the traces whose current facts rows carry their loops lose their per-trace rows: each partial
    # hour must read the facts rows of those, and the per-trace rows of the others only
    _delete_rows(client, [t for t in ids if t not in old or t == moved])
    carried = client.query(
        f"SELECT countIf(map_rows = 0), countIf(map_rows = 1) FROM {schema.FACTS} FINAL"
    ).result_rows[0]
    assert int(carried[0]) == len(old) - 1 and int(carried[1]) == len(ids) - len(old) + 1
    recording = _assert_partial_hour_maps_equal_memory(client, spans, late)
    assert any(schema.LOOPS in q for q in recording.queries)  # the old traces' rows were read


@pytest.mark.parametrize("cluster", [None, "prod"])
def test_init_migrates_a_schema_2_database_once(client: ChdbClient, cluster: str | None) -> None:
    spans = _spread()
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    expected = _map_rollup(client)
    assert expected
    # back to what schema 2 left: facts rows without loop arrays, no map views, no map rollup rows
    for statement in schema.map_rollup_ddl(None):
        if statement.startswith("CREATE MATERIALIZED VIEW"):
            client.command(f"DROP VIEW {statement.split()[6]}")
    client.command(f"DROP TABLE {schema.MAP_HOURLY}")
    client.command(f"ALTER TABLE {schema.FACTS} UPDATE map_rows = 0 WHERE 1 SETTINGS mutations_sync = 2")
    drop_schema_6(client)
    client.command(f"TRUNCATE TABLE {schema.SCHEMA}")
    client.command(f"INSERT INTO {schema.SCHEMA} (version, applied) VALUES (2, now64(3))")
    _assert_map_equals_memory(ClickHouseSource(client), spans, TraceFilter())  # schema 2: per-trace rows
    for run in range(2):  # the second run (`init`) adds nothing
        upgrade(client, 2, cluster if run == 0 else None)
        assert _map_rollup(client) == expected
    _assert_map_equals_memory(ClickHouseSource(client), spans, TraceFilter(start_ns=BASE_NS + 37 * MINUTE))


def _dense(count: int = 150) -> list[SpanRecord]:
    """`count` synthetic traces, one a minute from 7 minutes past `BASE_NS`: the busiest agents
    have more than `TRACE_REFS_KEPT` loops in their newest hour, so their newest references are
    bounded by an hour (the sparse `_spread` never reaches the bound)."""
    spans: list[SpanRecord] = []
    for i in range(count):
        trace = synthetic_trace(12, seed=i, janux=i % 4 != 0)
        shift = BASE_NS + (7 + i) * MINUTE - min(s.start_ns for s in trace)
        spans += [dataclasses.replace(s, start_ns=s.start_ns + shift) for s in trace]
    return spans


def _last_bits(found: AgentMap) -> AgentMap:
    return dataclasses.replace(found, turn_costs=[round(cost, 12) for cost in found.turn_costs])


def _bounds(recording: RecordingClient) -> list[dict[str, Any]]:
    """The parameters of each `map_refs` query reading rows past a bound, in order."""
    return [p for p in recording.parameters if "bound" in p]


def test_the_newest_references_of_one_group_are_read_past_a_bound(client: ChdbClient) -> None:
    spans = _dense()
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    # every row's group_hash is the hash of its rollup key (what `map_refs` names a group by)
    for table, part in ((schema.LOOPS, "node"), (schema.DELEGATIONS, "edge")):
        unknown = client.query(
            f"SELECT count() FROM {table} WHERE {schema.GROUP_HASH} NOT IN "
            f"(SELECT cityHash64(key) FROM {schema.MAP_HOURLY} WHERE part = '{part}')"
        ).result_rows
        assert int(unknown[0][0]) == 0
    recording = RecordingClient(client)
    source, memory = ClickHouseSource(recording), MemoryTraceSource(spans)
    early = TraceFilter(end_ns=BASE_NS + 60 * MINUTE)  # the newest rows of every group are later
    for flt in (
        TraceFilter(),
        TraceFilter(start_ns=BASE_NS + 37 * MINUTE),
        early,
        TraceFilter(status="error"),
    ):
        _assert_refs_equal_memory(source, memory, flt, memory.agent_map(flt))
    busiest = max(memory.agent_map(TraceFilter()).nodes, key=lambda n: n.runs)
    assert busiest.runs > 2 * TRACE_REFS_KEPT
    recording.queries.clear()
    recording.parameters.clear()
    source.map_refs(TraceFilter(), busiest.agent)
    # one bound, by the rows' map-key hash: only the newest rows read, then joined to the facts
    assert len(_bounds(recording)) == 1 and all(
        f"{schema.GROUP_HASH} = cityHash64(" in q for q in recording.queries
    )
    assert _bounds(recording)[0]["bound"] >= BASE_NS + HOUR_NS
    recording.parameters.clear()
    assert source.map_refs(early, busiest.agent) == memory.map_refs(early, busiest.agent)
    # the filter left too few rows past the first bound: it was moved back until enough were found
    assert len(_bounds(recording)) >= 2
    assert _bounds(recording)[-1]["bound"] < _bounds(recording)[0]["bound"]


def _parts_without(client: ChdbClient, table: str, column: str) -> int:
    """Active parts of `table` that do not store `column` (it is computed when read)."""
    rows = client.query(
        "SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = {t:String} "
        "AND active AND name NOT IN (SELECT name FROM system.parts_columns "
        "WHERE database = currentDatabase() AND table = {t:String} AND active AND column = {c:String})",
        parameters={"t": table, "c": column},
    ).result_rows
    return int(rows[0][0])


def test_init_migrates_a_schema_3_database_once(client: ChdbClient) -> None:
    spans = _dense(80)
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    expected = _last_bits(MemoryTraceSource(spans).agent_map(TraceFilter()))
    # back to what schema 3 left: loop and delegation rows without their map key's hash
    for table in (schema.LOOPS, schema.DELEGATIONS):
        client.command(f"ALTER TABLE {table} DROP COLUMN {schema.GROUP_HASH}")
    drop_schema_6(client)
    client.command(f"TRUNCATE TABLE {schema.SCHEMA}")
    client.command(f"INSERT INTO {schema.SCHEMA} (version, applied) VALUES (3, now64(3))")
    assert _last_bits(ClickHouseSource(client).agent_map(TraceFilter())) == expected
    memory = MemoryTraceSource(spans)
    edge = max(expected.edges, key=lambda e: e.count)
    assert ClickHouseSource(client).map_refs(TraceFilter(), edge.key) == memory.map_refs(
        TraceFilter(), edge.key
    )
    for _ in range(2):  # the second run changes nothing
        assert schema.init(client) == schema.SCHEMA_VERSION == 8
        for table in (schema.LOOPS, schema.DELEGATIONS):
            assert _parts_without(client, table, schema.GROUP_HASH) == 0  # written, not computed per read
    recording = RecordingClient(client)
    assert _last_bits(ClickHouseSource(recording).agent_map(TraceFilter())) == expected
    assert ClickHouseSource(recording).map_refs(TraceFilter(), edge.key) == memory.map_refs(
        TraceFilter(), edge.key
    )
    assert any(f"{schema.GROUP_HASH} = cityHash64(" in q for q in recording.queries)
    # rows derived after the upgrade get it at insert (the deriver never names the column)
    late = [dataclasses.replace(s, trace_id="f" * 32) for s in synthetic_trace(12, seed=999)]
    client.command(insert_statement(late))
    assert derive_pending(client, quiet_s=0).traces == 1
    wrong = client.query(
        f"SELECT count() FROM {schema.LOOPS} WHERE {schema.GROUP_HASH} != cityHash64({map_parts.NODE_KEY})"
    ).result_rows
    assert int(wrong[0][0]) == 0
