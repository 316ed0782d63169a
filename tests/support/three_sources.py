"""The same spans in every kind of source: in memory, in the embedded store and in ClickHouse
(chdb, with the table the Collector's exporter creates; read at query time, or from Janux's derived
tables: `derived_clickhouse`), for tests that compare them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceSource
from janux.tracing.sources.store import open_store
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement

KINDS = ("memory", "store", "clickhouse")
"""The keys of `three_sources`."""


@contextlib.contextmanager
def three_sources(spans: list[SpanRecord], work_dir: Path) -> Iterator[dict[str, TraceSource]]:
    """`spans` in memory, in a store under `work_dir` and in chdb under `work_dir`; closed on exit
    (chdb runs one embedded server per process: the next test can open its own only then)."""
    client = ChdbClient(str(work_dir / "chdb"))
    try:
        client.command(EXPORTER_DDL)
        client.command(insert_statement(spans))
        with open_store(work_dir / "store") as store:
            store.write(spans)
            memory, clickhouse = MemoryTraceSource(spans), ClickHouseSource(client)
            yield {"memory": memory, "store": store, "clickhouse": clickhouse}
    finally:
        client.close()


@contextlib.contextmanager
def derived_clickhouse(
    spans: list[SpanRecord], work_dir: Path
) -> Iterator[tuple[ClickHouseSource, ChdbClient]]:
    """`spans` in chdb as the Collector's exporter writes them, `janux clickhouse init` run and every
    trace derived (`derive_pending`, nothing held back): the source reads the derived tables."""
    client = ChdbClient(str(work_dir / "chdb-derived"))
    try:
        client.command(EXPORTER_DDL)
        client.command(insert_statement(spans))
        schema.init(client)
        derive_pending(client, quiet_s=0)
        yield ClickHouseSource(client), client
    finally:
        client.close()
