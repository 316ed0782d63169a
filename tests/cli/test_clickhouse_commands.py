"""`janux clickhouse init`, `janux derive` and the trace commands on a derived ClickHouse (chdb
directory, rows as the Collector's exporter writes them), run as real subprocesses: `janux traces`
and `janux trace` answer from the derived tables what they answer from the embedded store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.store import open_store
from tests.cli.helpers import janux
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement
from tests.support.foreign.load import all_spans


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(chdb directory with otel_traces filled, store directory with the same spans)."""
    work = tmp_path_factory.mktemp("cli-clickhouse")
    client = ChdbClient(str(work / "chdb"))
    try:
        client.command(EXPORTER_DDL)
        client.command(insert_statement(all_spans()))
    finally:
        client.close()  # the commands below open it in their own processes
    with open_store(work / "store") as store:
        store.write(all_spans())
    yield work / "chdb", work / "store"


def _ok(*args: str) -> str:
    done = janux(*args)
    assert done.returncode == 0, done.stderr[-2_000:]
    return done.stdout


def test_init_derive_then_traces_and_trace_equal_the_store(dirs: tuple[Path, Path]) -> None:
    chdb, store = dirs
    missing = janux("derive", "--once", "--chdb", str(chdb))
    assert missing.returncode != 0 and "run `janux clickhouse init` first" in missing.stderr
    for _ in range(2):  # idempotent
        ready = _ok("clickhouse", "init", "--chdb", str(chdb))
        assert f"schema version {schema.SCHEMA_VERSION} ready" in ready
    traces = len({s.trace_id for s in all_spans()})
    assert f"derived {traces} trace(s)" in _ok(
        "derive", "--once", "--quiet-seconds", "0", "--chdb", str(chdb)
    )
    assert "derived 0 trace(s)" in _ok("derive", "--once", "--quiet-seconds", "0", "--chdb", str(chdb))
    derived = _ok("traces", "--json", "--limit", "100", "--chdb", str(chdb))
    assert derived == _ok("traces", "--json", "--limit", "100", "--data-dir", str(store))
    assert len(derived.splitlines()) == traces
    first = json.loads(derived.splitlines()[0])["trace_id"]
    assert _ok("trace", first, "--json", "--chdb", str(chdb)) == _ok(
        "trace", first, "--json", "--data-dir", str(store)
    )


def test_the_printed_sql_leaves_the_database_where_init_does(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    """SQL applied by hand from `--print` (as a user without `init`'s access would) records the
    schema version, so the deriver runs on it and the pages answer what the store answers."""
    printed = _ok("clickhouse", "init", "--print")
    chdb = tmp_path / "chdb"
    client = ChdbClient(str(chdb))
    try:
        client.command(EXPORTER_DDL)
        client.command(insert_statement(all_spans()))
        for statement in printed.split(";\n\n"):
            client.command(statement.rstrip(";"))
        assert schema.applied_version(client) == schema.SCHEMA_VERSION
    finally:
        client.close()
    traces = len({s.trace_id for s in all_spans()})
    assert f"derived {traces} trace(s)" in _ok(
        "derive", "--once", "--quiet-seconds", "0", "--chdb", str(chdb)
    )
    assert _ok("traces", "--json", "--limit", "100", "--chdb", str(chdb)) == _ok(
        "traces", "--json", "--limit", "100", "--data-dir", str(dirs[1])
    )
    upgrade = _ok("clickhouse", "init", "--print", "--from-version", "2")
    assert f"MATERIALIZE COLUMN {schema.INSERTED_COLUMN}" not in upgrade  # spans keep their insertion time
    assert upgrade.count(f"INSERT INTO {schema.MAP_HOURLY}") == 3  # loops, delegations, traces
    assert f"INSERT INTO {schema.USAGE_HOURLY}" not in upgrade  # schema 2 has its usage rollup
    assert f"INSERT INTO janux_schema (version, applied) VALUES ({schema.SCHEMA_VERSION}," in upgrade
    assert upgrade.count(f"MATERIALIZE COLUMN {schema.GROUP_HASH}") == 2  # schema 4's hash, once
    cluster = _ok("clickhouse", "init", "--cluster", "prod", "--from-version", "1")
    assert f"INSERT INTO {schema.USAGE_HOURLY} (" in cluster
    assert "SETTINGS distributed_product_mode = 'local'" in cluster
    bad = janux("clickhouse", "init", "--print", "--from-version", "10")
    assert bad.returncode != 0 and f"--from-version must be 0..{schema.SCHEMA_VERSION}, got 10" in bad.stderr


def test_bad_input_gets_a_clear_error(tmp_path: Path) -> None:
    shard = janux("derive", "--once", "--shard", "2/2", "--chdb", str(tmp_path / "x"))
    assert shard.returncode != 0 and "shard 2/2: need 0 <= i < n" in shard.stderr
    shape = janux("derive", "--once", "--shard", "half", "--chdb", str(tmp_path / "x"))
    assert shape.returncode != 0 and "expected i/n" in shape.stderr
    no_table = janux("clickhouse", "init", "--chdb", str(tmp_path / "empty"))
    assert no_table.returncode != 0 and "no table 'otel_traces'" in no_table.stderr


def test_init_prints_the_single_server_and_the_cluster_ddl() -> None:
    single = _ok("clickhouse", "init", "--print")
    for table in schema.TABLES:
        assert f"CREATE TABLE IF NOT EXISTS {table.name} (" in single
    assert "ReplacingMergeTree(version)" in single and "PARTITION BY day" in single
    assert "ADD COLUMN IF NOT EXISTS JanuxInsertedAt DateTime64(3) MATERIALIZED now64(3)" in single
    assert "ON CLUSTER" not in single and "Replicated" not in single
    cluster = _ok("clickhouse", "init", "--cluster", "prod")
    for table in schema.TABLES:
        assert f"CREATE TABLE IF NOT EXISTS {table.name}_local ON CLUSTER prod (" in cluster
        assert (
            f"CREATE TABLE IF NOT EXISTS {table.name} ON CLUSTER prod AS {table.name}_local "
            f"ENGINE = Distributed(prod, currentDatabase(), {table.name}_local, "
        ) in cluster
    assert (
        "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/janux_trace_facts', "
        "'{replica}', version)" in cluster
    )
    assert "ALTER TABLE otel_traces_local ON CLUSTER prod ADD COLUMN IF NOT EXISTS JanuxInsertedAt" in cluster
    assert "cityHash64(trace_id)" in cluster
    # schema 2: the hourly usage rollup, fed by views on each node's local facts table
    assert "CREATE TABLE IF NOT EXISTS janux_usage_hourly (" in single and "SummingMergeTree((rows," in single
    assert "CREATE MATERIALIZED VIEW IF NOT EXISTS janux_usage_hourly_retract TO janux_usage_hourly" in single
    assert (
        "CREATE MATERIALIZED VIEW IF NOT EXISTS janux_usage_hourly_add_local ON CLUSTER prod "
        "TO janux_usage_hourly_local AS SELECT" in cluster
    )
    assert "ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/{database}/janux_usage_hourly'" in cluster
    assert "FROM janux_trace_facts_local ARRAY JOIN" in cluster
    assert "ALTER TABLE janux_trace_facts ON CLUSTER prod ADD COLUMN IF NOT EXISTS usage_key" in cluster
    # schema 3: the hourly agent-map rollup, fed by six views on each node's local facts table
    assert (
        "CREATE TABLE IF NOT EXISTS janux_map_hourly (" in single
        and "ENGINE = AggregatingMergeTree" in single
    )
    for view in ("loops_add", "loops_retract", "delegations_add", "delegations_retract", "traces_add"):
        assert f"CREATE MATERIALIZED VIEW IF NOT EXISTS janux_map_hourly_{view} TO janux_map_hourly" in single
        assert (
            f"CREATE MATERIALIZED VIEW IF NOT EXISTS janux_map_hourly_{view}_local ON CLUSTER prod "
            "TO janux_map_hourly_local AS SELECT" in cluster
        )
    assert (
        "ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/janux_map_hourly'" in cluster
    )
    assert "ENGINE = Distributed(prod, currentDatabase(), janux_map_hourly_local, rand())" in cluster
    assert "ALTER TABLE janux_trace_facts ON CLUSTER prod ADD COLUMN IF NOT EXISTS loop_agent" in cluster
    # schema 4: each loop and delegation row's map key hash, on the local tables and the Distributed ones
    for name, key in (("janux_loops", "[agent]"), ("janux_delegations", "[caller, target, toString(kind)]")):
        column = f"ADD COLUMN IF NOT EXISTS group_hash UInt64 MATERIALIZED cityHash64({key})"
        assert f"ALTER TABLE {name} {column}" in single
        assert f"ALTER TABLE {name}_local ON CLUSTER prod {column}" in cluster
        assert f"ALTER TABLE {name} ON CLUSTER prod {column}" in cluster
        # after the table it alters
        assert cluster.index(f"ALTER TABLE {name}_local ON CLUSTER") > cluster.index(
            f"CREATE TABLE IF NOT EXISTS {name} ON CLUSTER prod AS {name}_local"
        )
    # schema 5: the facts table's projections, in its CREATE (on a cluster: the local table's) and
    # added to a table created before; written into older parts only by an upgrade
    for name, select in schema.FACTS_PROJECTIONS:
        assert f"PROJECTION {name} ({select})" in single
        assert f"ALTER TABLE janux_trace_facts ADD PROJECTION IF NOT EXISTS {name} ({select})" in single
        assert (
            f"ALTER TABLE janux_trace_facts_local ON CLUSTER prod ADD PROJECTION IF NOT EXISTS {name}"
            in cluster
        )
    assert "ORDER BY trace_id\nSETTINGS deduplicate_merge_projection_mode = 'rebuild'" in single
    facts_local = cluster.split("CREATE TABLE IF NOT EXISTS janux_trace_facts_local ON CLUSTER prod (")[1]
    assert f"PROJECTION {schema.FACTS_BY_START} (" in facts_local.split(";")[0]
    assert "MATERIALIZE PROJECTION" not in single
    upgrade = _ok("clickhouse", "init", "--print", "--from-version", "4")
    for name, _ in schema.FACTS_PROJECTIONS:
        assert (
            f"ALTER TABLE janux_trace_facts MATERIALIZE PROJECTION {name} SETTINGS mutations_sync = 2"
            in upgrade
        )
    assert "MATERIALIZE COLUMN" not in upgrade and "INSERT INTO janux_map_hourly" not in upgrade
