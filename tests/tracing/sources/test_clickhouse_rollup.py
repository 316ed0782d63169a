"""The hourly usage rollup (`janux_usage_hourly`, schema 2) on chdb: a trace derived again takes
its earlier version back (the sums equal a fresh recompute from the per-trace rows), ranges split
at hours give the memory source's answers, ranges read the rollup instead of the per-trace rows,
and `init` migrates a schema-1 database (its rollup backfilled once)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import USAGE_DIMENSIONS, TraceFilter
from janux.tracing.testing import synthetic_trace
from tests.support.clickhouse_rows import RecordingClient, insert_statement

HOUR_NS = schema.HOUR_NS
BASE_NS = 1_767_225_600 * 10**9  # 2026-01-01T00:00Z
MINUTE = 60 * 10**9
HOUR_SPLIT_RANGES = (
    TraceFilter(),
    TraceFilter(start_ns=BASE_NS + 37 * MINUTE),
    TraceFilter(end_ns=BASE_NS + 201 * MINUTE),
    TraceFilter(start_ns=BASE_NS + 37 * MINUTE, end_ns=BASE_NS + 201 * MINUTE),
    TraceFilter(start_ns=BASE_NS + HOUR_NS, end_ns=BASE_NS + 3 * HOUR_NS),  # whole hours only
    TraceFilter(start_ns=BASE_NS + 5 * MINUTE, end_ns=BASE_NS + 50 * MINUTE),  # no whole hour
    TraceFilter(start_ns=BASE_NS + 37 * MINUTE, status="error"),  # not in the rollup's key
)
"""Ranges that start and end inside hours, on whole hours, inside one hour, and with a filter the
rollups are not keyed by: each reads the rollup, the per-trace rows of partial hours, or both."""


def _spread(count: int = 12) -> list[SpanRecord]:
    """`count` synthetic traces (some without Janux accounting), one every 25 minutes."""
    spans: list[SpanRecord] = []
    for i in range(count):
        trace = synthetic_trace(12, seed=i, janux=i % 4 != 0)
        shift = BASE_NS + i * 25 * 60 * 10**9 - min(s.start_ns for s in trace)
        spans += [dataclasses.replace(s, start_ns=s.start_ns + shift) for s in trace]
    return spans


def _rollup(client: ChdbClient) -> list[Any]:
    """The rollup's sums per (dimension, hour, key), keys with rows left only."""
    sums = ", ".join(f"sum({name})" for name in schema.ROLLUP_SUMS)
    return client.query(
        f"SELECT dimension, hour_ns, key, {sums} FROM {schema.USAGE_HOURLY} GROUP BY dimension, hour_ns, key "
        "HAVING sum(rows) != 0 ORDER BY ALL"
    ).result_rows


def _recomputed(client: ChdbClient) -> list[Any]:
    """The same sums computed afresh from the per-trace rows of the current facts."""
    parts = ", ".join(
        f"sum(ifNull({name}_sum, 0)), countIf({name}_sum IS NOT NULL)"
        for name in ("input", "output", "cost", "unpriced")
    )
    return client.query(
        f"SELECT dimension, intDiv(trace_start_ns, {HOUR_NS}) * {HOUR_NS} AS h, key, count(), sum(count), "
        f"sum(failed), {parts}, sum(unread_sum) FROM {schema.USAGE} FINAL "
        f"WHERE (trace_id, version) IN (SELECT trace_id, version FROM {schema.FACTS} FINAL) "
        "GROUP BY dimension, h, key ORDER BY ALL"
    ).result_rows


def _same_sums(left: list[Any], right: list[Any]) -> bool:
    """Rows equal, the float cost sum (index 10) to 1e-9 (added and taken back in another order)."""
    if len(left) != len(right):
        return False
    for a, b in zip(left, right, strict=True):
        a, b = [str(v) for v in a], [str(v) for v in b]
        if a[:10] + a[11:] != b[:10] + b[11:] or abs(float(a[10]) - float(b[10])) > 1e-9:
            return False
    return True


def _assert_usage_equals_memory(source: ClickHouseSource, spans: list[SpanRecord], flt: TraceFilter) -> None:
    memory = MemoryTraceSource(spans)
    for dimension in USAGE_DIMENSIONS:
        assert source.usage_by(dimension, flt, 1_000) == memory.usage_by(dimension, flt, 1_000), (
            dimension,
            flt,
        )
    for bucket in (HOUR_NS, 3 * HOUR_NS, HOUR_NS // 4):
        assert source.model_timeline(flt, bucket) == memory.model_timeline(flt, bucket), (bucket, flt)


def test_a_trace_derived_again_takes_its_earlier_version_back(client: ChdbClient) -> None:
    spans = _spread()
    moved = {s.trace_id for s in spans}.pop()
    # the trace's first half arrives late, two hours earlier: its start (and its hour) and its
    # usage change when it is derived again
    mine = sorted((s for s in spans if s.trace_id == moved), key=lambda s: s.start_ns)
    late = [dataclasses.replace(s, start_ns=s.start_ns - 2 * HOUR_NS) for s in mine[: len(mine) // 2]]
    early = [s for s in spans if s not in mine[: len(mine) // 2]]
    client.command(insert_statement(early))
    derive_pending(client, quiet_s=0)
    first = _rollup(client)
    assert first and _same_sums(first, _recomputed(client))
    client.command(insert_statement(late))
    assert derive_pending(client, quiet_s=0).traces == 1
    # without the view taking the replaced version back, its rows would still count at its old hour
    assert _rollup(client) != first
    assert _same_sums(_rollup(client), _recomputed(client))
    retracted = client.query(f"SELECT count() FROM {schema.USAGE_HOURLY} WHERE rows < 0").result_rows
    assert int(retracted[0][0]) > 0
    source = ClickHouseSource(client)
    everything = [*early, *late]
    _assert_usage_equals_memory(source, everything, TraceFilter())
    start = min(s.start_ns for s in late)
    _assert_usage_equals_memory(source, everything, TraceFilter(start_ns=start + HOUR_NS // 3))


def test_ranges_split_at_hours_equal_the_memory_source(client: ChdbClient) -> None:
    spans = _spread()
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    # every per-trace usage row written twice, as a deriver killed after its children and rerun
    # leaves them until a merge: the partial hours' reads must count each once
    client.command(f"INSERT INTO {schema.USAGE} SELECT * FROM {schema.USAGE}")
    recording = RecordingClient(client)
    source = ClickHouseSource(recording)
    for flt in HOUR_SPLIT_RANGES:
        _assert_usage_equals_memory(source, spans, flt)
    recording.queries.clear()
    source.usage_by("model", TraceFilter())
    source.model_timeline(TraceFilter(), HOUR_NS)
    assert all(schema.USAGE_HOURLY in q and f"{schema.USAGE} FINAL" not in q for q in recording.queries[-2:])


def drop_schema_9(client: ChdbClient) -> None:
    """Back to what schema 8 left: no minute usage rollup (nor its views), no usage projection, so
    an upgrade back-fills them from what is stored."""
    for statement in schema.rollup_ddl(None, unit=MINUTE):
        if statement.startswith("CREATE MATERIALIZED VIEW"):
            client.command(f"DROP VIEW {statement.split()[6]}")
    client.command(f"DROP TABLE {schema.USAGE_MINUTE}")
    client.command(f"ALTER TABLE {schema.FACTS} DROP PROJECTION IF EXISTS {schema.FACTS_USAGE_BY_START}")


def drop_schema_6(client: ChdbClient) -> None:
    """Back to what schema 5 left: no minute map rollup, no failures ordered by start (nor their
    views), so an upgrade from an older schema back-fills them from what is stored (nor what
    schema 9 added: `drop_schema_9`)."""
    drop_schema_9(client)
    for statement in (*schema.map_rollup_ddl(None, unit=MINUTE), *schema.failures_index_ddl()):
        if statement.startswith("CREATE MATERIALIZED VIEW"):
            client.command(f"DROP VIEW {statement.split()[6]}")
    for table in (schema.MAP_MINUTE, schema.FAILURES_BY_START):
        client.command(f"DROP TABLE {table}")


def upgrade(client: ChdbClient, before: int, cluster: str | None) -> None:
    """`init` on this database at schema `before`; or, with `cluster`, the single server's DDL and
    then what `janux clickhouse init --cluster NAME --from-version before` prints that is no DDL: its
    back-fills and version row, which read and write the `Distributed` tables, named as a single
    server's tables are."""
    if cluster is None:
        assert schema.init(client) == schema.SCHEMA_VERSION
        return
    for statement in schema.ddl():
        client.command(statement)
    for statement in schema.init_statements(before, cluster=cluster, had_column=True):
        if "ON CLUSTER" not in statement:
            client.command(statement)
    assert schema.applied_version(client) == schema.SCHEMA_VERSION


@pytest.mark.parametrize("cluster", [None, "prod"])
def test_init_migrates_a_schema_1_database_once(client: ChdbClient, cluster: str | None) -> None:
    spans = _spread()
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    # back to what schema 1 left: facts rows without usage arrays, no views, no rollup rows
    for view in ("add", "retract"):
        client.command(f"DROP VIEW {schema.USAGE_HOURLY}_{view}")
    client.command(f"TRUNCATE TABLE {schema.USAGE_HOURLY}")
    client.command(
        f"ALTER TABLE {schema.FACTS} UPDATE usage_dimension = [] WHERE 1 SETTINGS mutations_sync = 2"
    )
    drop_schema_6(client)
    client.command(f"TRUNCATE TABLE {schema.SCHEMA}")
    client.command(f"INSERT INTO {schema.SCHEMA} (version, applied) VALUES (1, now64(3))")
    assert _rollup(client) == []
    _assert_usage_equals_memory(ClickHouseSource(client), spans, TraceFilter())  # schema 1: per-trace rows
    for run in range(2):  # the second run (`init`) changes nothing
        upgrade(client, 1, cluster if run == 0 else None)
        assert _same_sums(_rollup(client), _recomputed(client))
    _assert_usage_equals_memory(ClickHouseSource(client), spans, TraceFilter())
