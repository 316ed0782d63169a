"""`clickhouse_connect`'s own result decoding over chdb: the rows users' production client returns.

A ClickHouse server answers `clickhouse_connect` in the Native format and the client turns it into
`result_rows` itself (maps as dicts, arrays as lists, dates as `date`, strings that are not UTF-8
as hex). `NativeClient` asks chdb (the same engine) for the Native format and hands the bytes to
`clickhouse_connect`'s real reader, so the sources are tested on those rows without a server;
only the HTTP transport is left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from clickhouse_connect.driver.query import QueryContext, QueryResult
from clickhouse_connect.driver.transform import NativeTransform
from clickhouse_connect.driverc.buffer import ResponseBuffer

from janux.tracing.sources.clickhouse.chdb_client import ChdbClient


class _Body:
    """An HTTP response body as `ResponseBuffer` reads it: chunks from `gen`, then `close`."""

    def __init__(self, data: bytes) -> None:
        self.gen: Iterator[bytes] = iter([data] if data else [])

    def close(self) -> None:
        """Nothing to release."""


class NativeClient:
    """A ChdbClient whose query results are decoded by `clickhouse_connect` from the Native format."""

    def __init__(self, client: ChdbClient) -> None:
        self.client = client

    def query(self, query: str, parameters: dict[str, Any] | None = None) -> QueryResult:
        """Run a SELECT; its result as `clickhouse_connect.Client.query` returns it."""
        data = self.client.raw_query(query, parameters, "Native")
        return NativeTransform.parse_response(ResponseBuffer(_Body(data)), QueryContext())

    def command(self, statement: str) -> None:
        """Run a statement that returns nothing."""
        self.client.command(statement)

    def insert(self, table: str, data: Sequence[Sequence[Any]], column_names: Sequence[str]) -> None:
        """Insert rows."""
        self.client.insert(table, data, column_names)
