"""Fixtures shared by the ClickHouse source tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from tests.support.clickhouse_rows import EXPORTER_DDL


@pytest.fixture
def exporter_client(tmp_path: Path) -> Iterator[ChdbClient]:
    """A chdb database with the Collector exporter's `otel_traces` only (no Janux tables)."""
    found = ChdbClient(str(tmp_path / "chdb"))
    try:
        found.command(EXPORTER_DDL)
        yield found
    finally:
        found.close()


@pytest.fixture
def client(exporter_client: ChdbClient) -> ChdbClient:
    """`exporter_client` with Janux's derived tables (`janux clickhouse init`); a module that needs
    another database defines its own `client`."""
    schema.init(exporter_client)
    return exporter_client
