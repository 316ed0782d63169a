"""Fixtures shared by the ClickHouse source tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from tests.support.clickhouse_rows import EXPORTER_DDL


@pytest.fixture
def client(tmp_path: Path) -> Iterator[ChdbClient]:
    """A chdb database with the Collector exporter's `otel_traces` and Janux's derived tables
    (`janux clickhouse init`); a module that needs another database defines its own `client`."""
    found = ChdbClient(str(tmp_path / "chdb"))
    try:
        found.command(EXPORTER_DDL)
        schema.init(found)
        yield found
    finally:
        found.close()
