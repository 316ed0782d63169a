"""What encoding the deriver's rows costs per client: the rows `derive_pending` writes for the
bench seed (`bench_clickhouse.seed`, 2,000 traces), encoded as each client sends them.

Run: `.venv/bin/python -m bench.bench_derive_write [--repeats 5] [--quick]`.

Rows: `json.dumps(default=str)` as JSONColumns (the chdb client before, the same-run baseline),
`msgspec` as JSONColumns (the chdb client now), `clickhouse_connect`'s Native serialization (the
production client's insert, without the HTTP transport). CPU time, the minimum of `--repeats`;
the encoded values of the first two are compared (they must be equal).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.bench_clickhouse import seed
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.deriver import derive_pending
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement

Insert = tuple[str, Sequence[Sequence[Any]], Sequence[str]]


class _Recording(ChdbClient):
    """A chdb client that keeps what it inserts."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.inserts: list[Insert] = []

    def insert(self, table: str, data: Sequence[Sequence[Any]], column_names: Sequence[str]) -> None:
        """Insert, and keep the rows."""
        if table != schema.STATE:
            self.inserts.append((table, data, column_names))
        super().insert(table, data, column_names)


def _derived_rows() -> list[Insert]:
    with tempfile.TemporaryDirectory() as tmp:
        client = _Recording(str(Path(tmp) / "chdb"))
        try:
            client.command(EXPORTER_DDL)
            schema.init(client)
            client.command(insert_statement(seed()))
            derive_pending(client, quiet_s=0)
        finally:
            client.close()
    return client.inserts


def _columns(data: Sequence[Sequence[Any]], names: Sequence[str]) -> dict[str, list[Any]]:
    return {name: list(values) for name, values in zip(names, zip(*data, strict=True), strict=True)}


def _json_dumps(table: str, data: Sequence[Sequence[Any]], names: Sequence[str]) -> bytes:
    return json.dumps(_columns(data, names), default=str).encode()


_ENCODER = msgspec.json.Encoder(enc_hook=str)


def _msgspec(table: str, data: Sequence[Sequence[Any]], names: Sequence[str]) -> bytes:
    return _ENCODER.encode(_columns(data, names))


def _native(table: str, data: Sequence[Sequence[Any]], names: Sequence[str]) -> bytes:
    registry: Any = importlib.import_module("clickhouse_connect.datatypes.registry")
    insert: Any = importlib.import_module("clickhouse_connect.driver.insert")
    transform: Any = importlib.import_module("clickhouse_connect.driver.transform")
    kinds = dict(next(t.columns for t in schema.TABLES if t.name == table))
    types = [registry.get_from_name(kinds[name]) for name in names]
    context = insert.InsertContext(table, names, types, data)
    return b"".join(transform.NativeTransform.build_insert(context))


ENCODINGS: dict[str, Callable[[str, Sequence[Sequence[Any]], Sequence[str]], bytes]] = {
    "json.dumps(default=str), JSONColumns (before; baseline)": _json_dumps,
    "msgspec, JSONColumns (the chdb client now)": _msgspec,
    "clickhouse_connect, Native (the production client)": _native,
}


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 repeats")
    args = parser.parse_args(argv)
    args.repeats = 2 if args.quick else args.repeats
    inserts = _derived_rows()
    rows = sum(len(data) for _, data, _ in inserts)
    for table, data, names in inserts:  # the same values, whatever the spelling
        assert json.loads(_json_dumps(table, data, names)) == json.loads(_msgspec(table, data, names)), table
    best: dict[str, float] = {}
    for name, encode in ENCODINGS.items():
        encode(*inserts[0])  # imports and first-call costs out of the timing
        for _ in range(args.repeats):
            began = time.process_time()
            for insert in inserts:
                encode(*insert)
            best[name] = min(best.get(name, float("inf")), time.process_time() - began)
    baseline = next(iter(best.values()))
    print(f"\nThe deriver's rows for the bench seed: {rows:,} rows in {len(inserts)} inserts", end=" ")
    print(f"(CPU, min of {args.repeats})\n")
    print("| encoding | CPU s | vs baseline |")
    print("|---|---:|---:|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.3f} | {seconds / baseline:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
