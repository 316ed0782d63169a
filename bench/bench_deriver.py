"""The deriver's throughput on a backlog, and where its time goes: `derive_pending` over copies of
the bench seed (`bench_clickhouse.seed`: 2,000 traces, 20% other runtimes) in chdb, rows inserted
as the Collector's exporter writes them.

Run: `.venv/bin/python -m bench.bench_deriver [--copies 8] [--runs 3]`.

Each run forgets the derived rows and derives the whole backlog again, twice in turn:
- `one read, one write` (the same-run baseline): the window read in one query and its rows
  written in one insert, so the engine's work cannot overlap the analysis;
- `pipelined` (the defaults): batches of `BATCH_SPANS` read ahead, rows written every
  `WRITE_SPANS` spans while the next part is analysed.
Columns: wall clock and spans/s (median of the runs), process CPU (chdb's threads included), the
CPU of the analysing thread alone (decoding, `analyse()`, building rows: what a deriver process
spends when the engine is a ClickHouse server on other cores), and the engine's wall clock in the
client's calls. The collector's rate (README, `bench_ingest`) is the issue's target.

Below the table: the analysing thread's CPU-µs per span (the figure that sets how many derivers a
collector needs) next to its target and the previous code's figure. CPU time, not wall clock: on a
shared machine it is the steadier figure, but it still grows with load (caches and cores are
shared), so say `uptime` next to it and compare with a run of the previous code made at the same
load.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.bench_clickhouse import _store_copies, seed
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.deriver import BATCH_SPANS, WRITE_SPANS, derive_pending
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement

COLLECTOR_SPANS_PER_S = 58_614
"""`janux collect` (2 processes), README's ingest row: what one deriver should keep up with."""
ANALYSING_TARGET_US = 15.0
"""Issue 33's target: the analysing thread's CPU per span, so one deriver keeps up with a collector
when the engine runs on other cores."""
PREVIOUS_ANALYSING_US = 99.0
"""The analysing thread's CPU-µs per span of main before issue 33 (commit 9c9e704, pipelined,
`--copies 1 --runs 2`), measured at load 10-12 on the 2-core machine: compare at a like load."""
_FORGET = (
    *(t.name for t in schema.TABLES if t.name not in (schema.SCHEMA, *schema.ROLLUPS)),
    *schema.ROLLUPS,
)
_WHOLE = 10**12
"""A batch and write size no backlog reaches: one read, one write."""


class _Timed(ChdbClient):
    """A chdb client that adds up the wall clock of its calls (the engine's share of a run)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.engine_s = 0.0

    def raw_query(self, query: str, parameters: dict[str, Any] | None = None, fmt: str = "Native") -> bytes:
        """`ChdbClient.raw_query`, timed."""
        began = time.perf_counter()
        try:
            return super().raw_query(query, parameters, fmt)
        finally:
            self.engine_s += time.perf_counter() - began

    def insert(self, table: str, data: Sequence[Sequence[Any]], column_names: Sequence[str]) -> None:
        """`ChdbClient.insert`, timed (its encoding included)."""
        began = time.perf_counter()
        try:
            super().insert(table, data, column_names)
        finally:
            self.engine_s += time.perf_counter() - began


@dataclass
class Run:
    """One `derive_pending` over the backlog."""

    spans: int
    wall_s: float
    cpu_s: float
    thread_cpu_s: float
    engine_s: float


def derive_once(client: _Timed, whole: bool) -> Run:
    """Forget every derived row, derive the backlog again; its figures."""
    for table in _FORGET:
        client.command(f"TRUNCATE TABLE {table}")
    client.engine_s = 0.0
    batch, write = (_WHOLE, _WHOLE) if whole else (BATCH_SPANS, WRITE_SPANS)
    wall, cpu, thread = time.perf_counter(), time.process_time(), time.thread_time()
    stats = derive_pending(client, quiet_s=0, batch_spans=batch, write_spans=write)
    return Run(
        stats.spans,
        time.perf_counter() - wall,
        time.process_time() - cpu,
        time.thread_time() - thread,
        client.engine_s,
    )


def _row(name: str, runs: list[Run]) -> str:
    spans = runs[0].spans
    wall = statistics.median(r.wall_s for r in runs)
    cpu = statistics.median(r.cpu_s for r in runs)
    thread = statistics.median(r.thread_cpu_s for r in runs)
    engine = statistics.median(r.engine_s for r in runs)
    return (
        f"| {name} | {spans:,} | {wall:.2f} s ({min(r.wall_s for r in runs):.2f}-"
        f"{max(r.wall_s for r in runs):.2f}) | **{spans / wall:,.0f}** | {cpu:.2f} s | "
        f"{thread:.2f} s ({spans / thread:,.0f} spans/s) | {engine:.2f} s |"
    )


def main() -> int:
    """Build the backlog, derive it `--runs` times each way, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=8, help="copies of the 44,164-span seed")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        client = _Timed(f"{tmp}/chdb")
        try:
            client.command(EXPORTER_DDL)
            schema.init(client)
            seed_spans = seed()
            for spans in _store_copies(seed_spans, args.copies):
                if len(spans) == len(seed_spans):  # not the 10k-span trace the generator adds last
                    client.command(insert_statement(spans))
            runs: dict[bool, list[Run]] = {True: [], False: []}
            for _ in range(args.runs):
                for whole in (True, False):
                    runs[whole].append(derive_once(client, whole))
        finally:
            client.close()
    print(
        "| deriver | spans | wall, median (range) | spans/s | process CPU | analysing thread CPU "
        "| engine (wall) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(_row("one read, one write (baseline)", runs[True]))
    print(_row("pipelined", runs[False]))
    ratio = statistics.median(r.wall_s for r in runs[True]) / statistics.median(r.wall_s for r in runs[False])
    print(f"\npipelined / baseline: {ratio:.2f}x the spans/s; target: {COLLECTOR_SPANS_PER_S:,} spans/s")
    per_span = {
        way: statistics.median(r.thread_cpu_s / r.spans for r in ways) * 1e6 for way, ways in runs.items()
    }
    print(
        f"analysing thread: {per_span[False]:.1f} CPU-µs/span pipelined ({per_span[True]:.1f} one read, "
        f"one write); target <= {ANALYSING_TARGET_US:.0f}; previous code {PREVIOUS_ANALYSING_US:.0f} "
        "(at load 10-12)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
