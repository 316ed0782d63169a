"""Janux's ClickHouse schema: the trace-list columns are `TraceSummary`'s fields, the TTL follows
`otel_traces`, and `init` is idempotent on the real engine (chdb)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.protocol import TraceSummary
from tests.support.clickhouse_rows import EXPORTER_DDL


def test_the_facts_table_has_every_trace_summary_field() -> None:
    stored = [f.name for f in dataclasses.fields(TraceSummary) if f.name not in schema.LIST_TIME_FIELDS]
    assert [name for name, _ in schema.SUMMARY_COLUMNS] == stored


def test_the_ttl_is_read_from_the_exporters_table() -> None:
    assert schema.ttl_of("ENGINE = MergeTree TTL toDateTime(Timestamp) + toIntervalDay(3) SETTINGS x") == (
        "Day",
        3,
    )
    assert schema.ttl_of("ENGINE = MergeTree ORDER BY (ServiceName)") is None


def test_init_is_idempotent_and_follows_the_ttl(tmp_path: Path) -> None:
    client = ChdbClient(str(tmp_path / "chdb"))
    try:
        with_ttl = EXPORTER_DDL.replace(
            "SETTINGS index_granularity",
            "TTL toDateTime(Timestamp) + toIntervalDay(7)\nSETTINGS index_granularity",
        )
        client.command(with_ttl)
        assert schema.applied_version(client) == 0
        for _ in range(3):
            assert schema.init(client) == schema.SCHEMA_VERSION
        assert schema.applied_version(client) == schema.SCHEMA_VERSION
        rows = client.query(f"SELECT count() FROM {schema.SCHEMA}").result_rows
        assert int(rows[0][0]) == 1  # one version row, however often init ran
        created = client.query(
            "SELECT create_table_query FROM system.tables WHERE name = {n:String}", {"n": schema.FACTS}
        ).result_rows[0][0]
        assert "TTL day + toIntervalDay(7)" in created
        columns = client.query(
            "SELECT count() FROM system.columns WHERE table = 'otel_traces' AND name = {c:String}",
            {"c": schema.INSERTED_COLUMN},
        ).result_rows
        assert int(columns[0][0]) == 1
    finally:
        client.close()
