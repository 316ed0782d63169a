"""The scale path on ClickHouse (chdb, the real engine in-process): every page's query over Janux's
derived tables, at 1M and 10M spans, next to the read-time path and the embedded store.

Run: `.venv/bin/python -m bench.bench_clickhouse [--quick] [--sizes 1000000,10000000] [--no-store]`.

For each size: a seed of synthetic traces (80% of the spans Janux traces, 20% other runtimes,
`janux.tracing.testing.synthetic_trace`, about 20 spans each) is inserted as the Collector's
exporter writes rows (`tests.support.clickhouse_rows`), then copied inside ClickHouse
(`INSERT ... SELECT` with new trace ids, shifted 10 minutes per copy) to the size; one 10,000-span
trace is added. The exporter's `otel_traces_trace_id_ts` lookup table and view exist (as the
exporter creates them) and `janux clickhouse init` ran first, so every row carries its insertion
time; the copies of the seed's facts rows feed the hourly usage rollup through its views. Then:
- the deriver (`derive_pending`, one process, everything pending) and its throughput in spans/s;
- warm: each query on the derived source, median of 3 in this process;
- cold: each query as the first call of a new process (chdb session opened, the OS page cache
  kept warm: what a restarted dashboard sees);
- the read-time path (the same source with `derived=False`, once each) up to 1M spans;
- the embedded store holding the same traces (Python copies of the seed), median of 3;
- the CPU time of reading the 10,000-span trace, and of its decoding into records next to a
  same-run baseline (the same JSON texts into plain dicts with the standard library).
Targets (design.md): every query under 0.3 s warm and 1 s cold at 10M spans. With two sizes or
more, each query's growth is printed per step (`--sizes 1000000,3000000,10000000`: two steps, each
measured), and a 100M-span line is projected from the growth of the last step, labelled as a
projection.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.clickhouse.span_json import SPAN_JSON, decode_spans
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.testing import synthetic_trace
from tests.support.clickhouse_rows import EXPORTER_DDL, TRACE_ID_TS_DDL, insert_statement

WARM_TARGET_S = 0.3
COLD_TARGET_S = 1.0
SEED_TRACES = 2_000
"""Seed traces (every fifth without Janux accounting: 20% of the spans)."""
COPY_SHIFT_S = 600
"""Each copy starts this much later (copies spread over days: several partitions)."""
BIG_TRACE = "b16" * 10 + "ab"
DAY_NS = 86_400 * 10**9
ALL = TraceFilter()
_COLUMNS = (
    "Timestamp, TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName, "
    "ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, Duration, StatusCode, StatusMessage, "
    "Events.Timestamp, Events.Name, Events.Attributes, Links.TraceId, Links.SpanId, Links.TraceState, "
    "Links.Attributes"
)
SEED_START_NS = 1_700_000_000 * 10**9
"""Where the synthetic seed's traces start (13:20 past an hour)."""
FROM_67TH_MINUTE = TraceFilter(start_ns=SEED_START_NS + 67 * 60 * 10**9)
"""A range starting inside an hour: the rollup answers its whole hours, the per-trace rows its
partial first hour."""
BUSIEST_DAY_NS = (SEED_START_NS // DAY_NS + 1) * DAY_NS
"""The copies' first whole day: at 10M spans the partition with the most rows (1.78M loop rows; at
1M spans the copies end before it)."""
BUSY_1120_NS = BUSIEST_DAY_NS + (11 * 60 + 20) * 60 * 10**9
FROM_BUSY_1120 = TraceFilter(start_ns=BUSY_1120_NS)
"""A range starting at 11:20 of the busiest day: its first partial hour is in that partition."""
BUSY_24H = TraceFilter(start_ns=BUSY_1120_NS, end_ns=BUSY_1120_NS + DAY_NS)
"""24 hours from there ("the last 24 hours"): the map page's timeline has 1-hour buckets."""
BUSY_12H = TraceFilter(start_ns=BUSY_1120_NS, end_ns=BUSY_1120_NS + DAY_NS // 2)
"""12 hours from there: the map page's timeline would have 15-minute buckets (below a day)."""
BUSIEST_AGENT = "planner"
"""The agent of every seed trace (the most loops of any node)."""
FAILING_EDGE = ("worker15", "agent2_7", "delegate")
"""The seed's edge with the most failed delegations (half of them): the map page lists its newest
delegations and failures when it is inspected (`map_refs`)."""
QUERIES: dict[str, Callable[[Any], object]] = {
    "trace list, first page": lambda s: s.list_traces(ALL, 50),
    "count": lambda s: s.count_traces(ALL),
    "usage_by(agent)": lambda s: s.usage_by("agent", ALL),
    "usage_by(tool)": lambda s: s.usage_by("tool", ALL),
    "usage_by(model)": lambda s: s.usage_by("model", ALL),
    "usage_by(conversation)": lambda s: s.usage_by("conversation", ALL),
    "usage_by(model), range from the 67th minute": lambda s: s.usage_by("model", FROM_67TH_MINUTE),
    "agent map": lambda s: s.agent_map(ALL),
    "agent map, range from the 67th minute": lambda s: s.agent_map(FROM_67TH_MINUTE),
    "agent map, inspect an agent (its newest traces)": lambda s: s.map_refs(ALL, BUSIEST_AGENT),
    "agent map, inspect an edge (newest delegations, failures)": lambda s: s.map_refs(ALL, FAILING_EDGE),
    "agent map, inspect an edge, from the 67th minute": lambda s: s.map_refs(FROM_67TH_MINUTE, FAILING_EDGE),
    "agent map, from 11:20 of the busiest day": lambda s: s.agent_map(FROM_BUSY_1120),
    "agent map, inspect an edge, from 11:20 of the busiest day": lambda s: s.map_refs(
        FROM_BUSY_1120, FAILING_EDGE
    ),
    "agent map and timeline (1 h), 24 h from 11:20 of the busiest day": lambda s: s.agent_map(
        BUSY_24H, 60 * 60 * 10**9
    ),
    "agent map and timeline (15 min), 12 h from 11:20 of the busiest day": lambda s: s.agent_map(
        BUSY_12H, 15 * 60 * 10**9
    ),
    "model timeline (by day)": lambda s: s.model_timeline(ALL, DAY_NS),
    "failures page (500 newest)": lambda s: s.failed_handoff_spans(ALL, 500),
    "one 10k-span trace": lambda s: s.get_trace(BIG_TRACE),
    "traces still being derived (Traces page)": lambda s: getattr(s, "pending_traces", lambda: 0)(),
}
"""Every page's query, as the pages call it."""


def seed() -> list[SpanRecord]:
    """The seed traces."""
    spans: list[SpanRecord] = []
    for i in range(SEED_TRACES):
        spans += synthetic_trace(20, seed=i, janux=i % 5 != 0)
    return spans


def big_trace() -> list[SpanRecord]:
    """The one 10,000-span trace."""
    return [dataclasses.replace(s, trace_id=BIG_TRACE) for s in synthetic_trace(10_000, seed=99)]


def _copy_sql(first: int, count: int) -> str:
    shift = f"toIntervalSecond(n.number * {COPY_SHIFT_S})"
    return (
        f"INSERT INTO otel_traces ({_COLUMNS}) SELECT Timestamp + {shift}, "
        "lower(hex(MD5(concat(TraceId, '-', toString(n.number))))), SpanId, ParentSpanId, TraceState, "
        "SpanName, SpanKind, ServiceName, ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, "
        f"Duration, StatusCode, StatusMessage, arrayMap(t -> t + {shift}, Events.Timestamp), Events.Name, "
        "Events.Attributes, Links.TraceId, Links.SpanId, Links.TraceState, Links.Attributes "
        f"FROM seed, (SELECT number FROM numbers({first}, {count})) AS n"
    )


_SHIFTED = {
    schema.FACTS: "start_ns",
    schema.LOOPS: "start_ns",
    schema.DELEGATIONS: "start_ns",
    schema.USAGE: "trace_start_ns",
    schema.FAILURES: "span_start_ns",
}
"""Per derived table, the time column a copy shifts (and takes its partition day from)."""


def _copy_facts_sql(table: str, first: int, count: int, stamp_ms: int) -> str:
    """Copies `first..first+count` of the seed's derived rows: the same trace-id and time transform
    as `_copy_sql` applies to the spans, so each copy's facts are what deriving it would write."""
    columns = next(t.columns for t in schema.TABLES if t.name == table)
    shifted = f"({_SHIFTED[table]} + toInt64(n.number) * {COPY_SHIFT_S * 10**9})"
    special = {
        "trace_id": "lower(hex(MD5(concat(trace_id, '-', toString(n.number)))))",
        _SHIFTED[table]: shifted,
        "day": f"toDate(fromUnixTimestamp64Nano({shifted}))",
        "last_inserted_ms": str(stamp_ms),
        # the loops a facts row carries for the map rollup's views: their starts move with the copy
        "loop_start_ns": f"arrayMap(x -> x + toInt64(n.number) * {COPY_SHIFT_S * 10**9}, loop_start_ns)",
    }
    names = [name for name, _ in columns]
    select = ", ".join(special.get(name, name) for name in names)
    return (
        f"INSERT INTO {table} ({', '.join(names)}) SELECT {select} FROM stage_{table}, "
        f"(SELECT number FROM numbers({first}, {count})) AS n"
    )


_STARTED = [time.perf_counter(), time.process_time()]


def _step(what: str) -> None:
    """Print the wall and CPU seconds since the previous step (where a build's time goes)."""
    wall, cpu = time.perf_counter(), time.process_time()
    print(
        f"  {what}: {wall - _STARTED[0]:.1f} s wall, {cpu - _STARTED[1]:.1f} s CPU",
        file=sys.stderr,
        flush=True,
    )
    _STARTED[:] = [wall, cpu]


def _add_copies(client: ChdbClient, first: int, copies: int) -> None:
    """Copies `first..copies` of the seed's spans and derived rows (kept in `seed` and `stage_*`)."""
    for start in range(first, copies, 20):
        client.command(_copy_sql(start, min(20, copies - start)))
    _step("spans copied")
    stamp = int(client.query("SELECT toUnixTimestamp64Milli(now64(3))").result_rows[0][0])
    for table in _SHIFTED:
        for start in range(first, copies, 50):
            client.command(_copy_facts_sql(table, start, min(50, copies - start), stamp))
        _step(f"{table} copied")


def grow(path: Path, smaller: Path, smaller_copies: int, copies: int) -> float:
    """The chdb table at `path` built from the smaller size's at `smaller` (a copy of its directory,
    which keeps the seed and its derived rows): the copies it lacks, `smaller_copies..copies`, are
    added by the same SQL transform, so the data is what `build` would make, without deriving the
    seed again (the deriver's rate is the smaller build's). Returns the catch-up run's seconds
    (every copy up to date: nothing to derive)."""
    _STARTED[:] = [time.perf_counter(), time.process_time()]
    shutil.copytree(smaller, path, symlinks=True)  # the engine links its tables relatively
    _step(f"copied {smaller}")
    client = ChdbClient(str(path))
    try:
        _add_copies(client, smaller_copies, copies)
        catch_up = derive_pending(client, quiet_s=0)
        _step("catch-up derived")
        assert catch_up.traces == 0, catch_up
    finally:
        client.close()
    return catch_up.seconds


def build(path: Path, copies: int, seed_spans: list[SpanRecord]) -> tuple[float, float]:
    """The chdb table at `path`; (deriver spans/s, seconds of the catch-up run).

    The seed is derived for real (`derive_pending` over its own table: the deriver's throughput),
    then its spans and its derived rows are copied inside ClickHouse with the same transform; the
    big trace is inserted last and `derive_pending` over `otel_traces` finds every copy up to date
    and derives only that trace (the catch-up run)."""
    _STARTED[:] = [time.perf_counter(), time.process_time()]
    client = ChdbClient(str(path))
    try:
        client.command(EXPORTER_DDL.replace("otel_traces", "seed"))
        schema.init(client, "seed")
        client.command(insert_statement(seed_spans).replace("INSERT INTO otel_traces", "INSERT INTO seed"))
        client.command(EXPORTER_DDL)
        for statement in TRACE_ID_TS_DDL:  # the exporter's TraceId -> time lookup, as it creates it
            client.command(statement)
        schema.init(client)
        seeded = derive_pending(client, "seed", quiet_s=0)
        for table in _SHIFTED:
            client.command(f"CREATE TABLE stage_{table} AS {table}")
            client.command(f"INSERT INTO stage_{table} SELECT * FROM {table} FINAL")
            client.command(f"TRUNCATE TABLE {table}")
        # the rollups the seed's facts rows fed: the copies below (copy 0 is the seed) feed them again
        for rollup in schema.ROLLUPS:
            client.command(f"TRUNCATE TABLE {rollup}")
        _step("seed derived")
        _add_copies(client, 0, copies)
        client.command(insert_statement(big_trace()))
        catch_up = derive_pending(client, quiet_s=0)
        _step("catch-up derived")
        assert catch_up.traces == 1, catch_up  # the big trace; every copy was up to date
    finally:
        client.close()
    return seeded.spans / seeded.seconds, catch_up.seconds


def _bound(fn: Callable[[Any], object], source: Any) -> Callable[[], object]:
    return lambda: fn(source)


def _median(fn: Callable[[], object], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def _once(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def cold(path: Path) -> dict[str, float]:
    """Each query as the first call of a new process (`--cold`)."""
    found = {}
    for name in (OPEN_ONLY, *QUERIES):
        out = subprocess.run(
            [sys.executable, "-m", "bench.bench_clickhouse", "--cold", str(path), "--query", name],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        found[name] = float(out.stdout.strip().splitlines()[-1])
    return found


OPEN_ONLY = "open the chdb session, SELECT 1 (the cold baseline)"


def _cold_main(path: str, name: str) -> int:
    began = time.perf_counter()
    client = ChdbClient(path)
    if name == OPEN_ONLY:
        client.query("SELECT 1")
    else:
        QUERIES[name](ClickHouseSource(client))
    print(time.perf_counter() - began)
    client.close()
    return 0


def _store_copies(seed_spans: list[SpanRecord], copies: int) -> Iterator[list[SpanRecord]]:
    shift = COPY_SHIFT_S * 10**9
    for n in range(copies):
        yield [
            dataclasses.replace(
                s,
                trace_id=hashlib.md5(f"{s.trace_id}-{n}".encode()).hexdigest(),
                start_ns=s.start_ns + n * shift,
            )
            for s in seed_spans
        ]
    yield big_trace()


_CHECKED = (
    "count", "usage_by(agent)", "usage_by(tool)", "usage_by(model)", "usage_by(conversation)",
    "usage_by(model), range from the 67th minute", "model timeline (by day)", "agent map",
    "agent map, range from the 67th minute", "agent map, inspect an agent (its newest traces)",
    "agent map, inspect an edge (newest delegations, failures)",
    "agent map, inspect an edge, from the 67th minute", "agent map, from 11:20 of the busiest day",
    "agent map, inspect an edge, from 11:20 of the busiest day",
    "agent map and timeline (1 h), 24 h from 11:20 of the busiest day",
    "agent map and timeline (15 min), 12 h from 11:20 of the busiest day",
)  # fmt: skip
"""Answers the bench compares between ClickHouse and the store (the copies' facts are right)."""


def _same(left: object, right: object) -> bool:
    """Equal answers, floats (costs) compared to 1e-9 relative, inside dataclasses, dicts and lists."""
    if dataclasses.is_dataclass(left) and dataclasses.is_dataclass(right):
        return _same(dataclasses.asdict(left), dataclasses.asdict(right))  # type: ignore[arg-type]
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float) and isinstance(right, float):
        return abs(left - right) <= 1e-9 * max(abs(left), abs(right), 1e-12)
    return left == right


def store_times(
    work: Path, seed_spans: list[SpanRecord], copies: int, answers: dict[str, object]
) -> dict[str, float]:
    """Warm figures of the embedded store holding the same traces (and a check that it gives the
    same answers as ClickHouse)."""
    from janux.tracing.sources.store import open_store

    if not (work / "store").exists():
        with open_store(work / "store") as store:
            for chunk in _store_copies(seed_spans, copies):
                store.write(chunk)
    with open_store(work / "store") as reader:
        for fn in QUERIES.values():  # first calls fill the store's caches: warm figures below
            fn(reader)
        differ = [name for name in _CHECKED if not _same(QUERIES[name](reader), answers[name])]
        print(
            "same answers as the embedded store (costs to 1e-9 relative: sums of a million floats "
            f"in another order): {'yes' if not differ else 'NO: ' + ', '.join(differ)}"
        )
        return {name: _median(_bound(fn, reader)) for name, fn in QUERIES.items()}


@dataclasses.dataclass
class SizeResult:
    """Everything measured at one size."""

    spans: int
    traces: int
    derive_spans_per_s: float
    catch_up_s: float
    warm: dict[str, float]
    cold: dict[str, float]
    read_time: dict[str, float | None]
    store: dict[str, float | None]
    decode: dict[str, float] = dataclasses.field(default_factory=dict)
    """`decode_cpu`: CPU seconds of reading the 10,000-span trace, by part."""


def copies_for(size: int, seed_spans: list[SpanRecord]) -> int:
    """How many copies of the seed make about `size` spans (with the big trace)."""
    return max(1, round((size - 10_000) / len(seed_spans)))


def _build_and_derive(
    path: Path, size: int, seed_spans: list[SpanRecord], smaller: tuple[Path, int] | None = None
) -> tuple[float, float]:
    """`build` once, or `grow` from `smaller` (the chdb directory and size of a smaller build of
    this run); its figures kept in `derive.json`, so a kept directory (`--keep`) is measured again
    without building again."""
    kept = path.parent / "derive.json"
    if kept.exists():
        rate, seconds = json.loads(kept.read_text())
        return float(rate), float(seconds)
    copies = copies_for(size, seed_spans)
    if smaller is not None and smaller[1] < size and (smaller[0].parent / "derive.json").exists():
        before = copies_for(smaller[1], seed_spans)
        print(f"[{size:,}] growing the {smaller[1]:,} build to {copies} copies ...", file=sys.stderr)
        rate = float(json.loads((smaller[0].parent / "derive.json").read_text())[0])
        seconds = grow(path, smaller[0], before, copies)
    else:
        print(f"[{size:,}] building ({copies} copies of {len(seed_spans):,} seed spans) ...", file=sys.stderr)
        rate, seconds = build(path, copies, seed_spans)
    kept.write_text(json.dumps([rate, seconds]))
    return rate, seconds


def measure(
    size: int, work: Path, with_store: bool, read_time_up_to: int, smaller: tuple[Path, int] | None = None
) -> SizeResult:
    """Build (or grow from `smaller`), derive and time every query at `size` spans (what `work`
    already holds is reused)."""
    seed_spans = seed()
    copies = copies_for(size, seed_spans)
    path = work / "chdb"
    rate, seconds = _build_and_derive(path, size, seed_spans, smaller)
    client = ChdbClient(str(path))
    try:
        spans = int(client.query("SELECT count() FROM otel_traces").result_rows[0][0])
        source = ClickHouseSource(client)
        traces = source.count_traces(ALL)
        warm = {name: _median(_bound(fn, source)) for name, fn in QUERIES.items()}
        answers = {name: QUERIES[name](source) for name in _CHECKED}
        decode = decode_cpu(client, source)
        read_time: dict[str, float | None] = dict.fromkeys(QUERIES)
        if spans <= read_time_up_to:
            print(f"[{size:,}] read-time path ...", file=sys.stderr, flush=True)
            plain = ClickHouseSource(client, derived=False)
            read_time = {name: _once(_bound(fn, plain)) for name, fn in QUERIES.items()}
    finally:
        client.close()
    print(f"[{size:,}] cold ...", file=sys.stderr, flush=True)
    cold_s = cold(path)
    store: dict[str, float | None] = dict.fromkeys(QUERIES)
    if with_store:
        print(f"[{size:,}] embedded store ...", file=sys.stderr, flush=True)
        store = dict(store_times(work, seed_spans, copies, answers))
    return SizeResult(spans, traces, rate, seconds, warm, cold_s, read_time, store, decode)


DECODE_PARTS = (
    "get_trace, whole (SQL, client rows, records)",
    "of which: JSON texts -> SpanRecords (span_json.decode_spans)",
    "baseline: the same texts -> plain dicts (stdlib json.loads)",
)


def _cpu_median(fn: Callable[[], object], repeats: int = 3) -> float:
    """Median CPU seconds of this process (chdb's threads included): other load on the machine
    does not inflate it, unlike the wall-clock figures."""
    times = []
    for _ in range(repeats):
        began = time.process_time()
        fn()
        times.append(time.process_time() - began)
    return statistics.median(times)


def decode_cpu(client: ChdbClient, source: ClickHouseSource) -> dict[str, float]:
    """CPU seconds of reading the 10,000-span trace: whole, its decoding into records, and a
    same-run baseline decoding the same JSON texts into plain dicts."""
    rows = client.query(
        f"SELECT {SPAN_JSON} FROM otel_traces WHERE TraceId = {{id:String}}", {"id": BIG_TRACE}
    ).result_rows
    texts = [str(row[0]) for row in rows]
    return {
        "spans": float(len(texts)),
        DECODE_PARTS[0]: _cpu_median(lambda: source.get_trace(BIG_TRACE)),
        DECODE_PARTS[1]: _cpu_median(lambda: decode_spans(texts)),
        DECODE_PARTS[2]: _cpu_median(lambda: [json.loads(text) for text in texts]),
    }


def _decode_report(results: list[SizeResult]) -> None:
    print()
    print("| spans | reading one 10k-span trace (CPU of this process, median of 3) | CPU | spans/s |")
    print("|---|---|---:|---:|")
    for r in results:
        for part in DECODE_PARTS:
            seconds = r.decode[part]
            rate = r.decode["spans"] / max(seconds, 1e-9)
            print(f"| {r.spans:,} | {part} | {_ms(seconds)} | {rate:,.0f} |")


def _ms(value: float | None) -> str:
    return (
        "not run" if value is None else f"{value * 1e3:,.0f} ms" if value >= 0.01 else f"{value * 1e3:.1f} ms"
    )


def report(results: list[SizeResult]) -> bool:
    """Print the tables; True when every query of the largest size met its targets."""
    print("| spans | query | derived: warm / cold | read-time path (once) | embedded store (warm) |")
    print("|---|---|---:|---:|---:|")
    for r in results:
        for name in QUERIES:
            print(
                f"| {r.spans:,} | {name} | {_ms(r.warm[name])} / {_ms(r.cold[name])} "
                f"| {_ms(r.read_time[name])} | {_ms(r.store[name])} |"
            )
    for r in results:
        print(f"| {r.spans:,} | {OPEN_ONLY} | - / {_ms(r.cold[OPEN_ONLY])} | | |")
    print()
    print(
        "| spans | traces | deriver, one process (the seed, derived for real) | catch-up run (up to date) |"
    )
    print("|---|---:|---:|---:|")
    for r in results:
        print(f"| {r.spans:,} | {r.traces:,} | {r.derive_spans_per_s:,.0f} spans/s | {r.catch_up_s:,.1f} s |")
    _decode_report(results)
    if len(results) >= 2:
        _growth(results)
        _projection(results[-2], results[-1])
    last = results[-1]
    return all(last.warm[n] < WARM_TARGET_S and last.cold[n] < COLD_TARGET_S for n in QUERIES)


def _growth(results: list[SizeResult]) -> None:
    """Each query's measured warm growth over every step between two sizes (`--sizes` with three
    sizes measures it over two steps: whether it stays flat or keeps growing)."""
    steps = list(pairwise(results))
    print()
    print("MEASURED growth of each query's warm time, per step:")
    print("| query | " + " | ".join(f"{a.spans:,} -> {b.spans:,}" for a, b in steps) + " |")
    print("|---|" + "---:|" * len(steps))
    for name in QUERIES:
        growths = " | ".join(f"{b.warm[name] / max(a.warm[name], 1e-6):.1f}x" for a, b in steps)
        print(f"| {name} | {growths} |")


def _projection(small: SizeResult, large: SizeResult) -> None:
    """100M spans, PROJECTED: each query's warm time grown by its measured growth from the smaller
    to the larger size, once more by the same factor per 10x of spans."""
    print()
    target = 100_000_000
    steps = __import__("math").log(target / large.spans) / __import__("math").log(large.spans / small.spans)
    print(
        f"PROJECTION (not measured) to {target:,} spans, from the growth {small.spans:,} -> {large.spans:,}:"
    )
    print("| query | measured growth | projected warm |")
    print("|---|---:|---:|")
    for name in QUERIES:
        growth = large.warm[name] / max(small.warm[name], 1e-6)
        print(f"| {name} | {growth:.1f}x | {_ms(large.warm[name] * growth**steps)} (projection) |")
    rate = large.derive_spans_per_s
    print(f"\nderiving {target:,} spans at {rate:,.0f} spans/s: {target / rate / 3600:.1f} h for one deriver")


def main(argv: list[str] | None = None) -> int:
    """Print the tables; exit 1 when a query misses its target at the largest size."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="100,000 and 300,000 spans")
    parser.add_argument("--sizes", default="1000000,10000000", help="span counts, comma separated")
    parser.add_argument("--no-store", action="store_true", help="skip the embedded store")
    parser.add_argument("--store-up-to", type=int, default=1_000_000, help="embedded store up to this size")
    parser.add_argument("--read-time-up-to", type=int, default=1_100_000, help="read-time path up to this")
    parser.add_argument("--keep", default=None, help="keep the data under this directory and reuse it")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    parser.add_argument(
        "--prepare", default=None, help="only build and derive the sizes under this directory"
    )
    parser.add_argument("--cold", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--query", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold:
        return _cold_main(args.cold, args.query)
    sizes = [100_000, 300_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    if args.prepare:
        smaller = None
        seed_spans = seed()
        for size in sorted(sizes):
            work = Path(args.prepare) / str(size)
            work.mkdir(parents=True, exist_ok=True)
            print(size, _build_and_derive(work / "chdb", size, seed_spans, smaller))
            smaller = (work / "chdb", size)
        return 0
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        smaller = None  # each size grows from the one before (sizes in increasing order)
        for size in sorted(sizes):
            with_store = not args.no_store and size <= args.store_up_to
            work = Path(args.keep or tmp) / str(size)
            work.mkdir(parents=True, exist_ok=True)
            results.append(measure(size, work, with_store, args.read_time_up_to, smaller))
            smaller = (work / "chdb", size)
    ok = report(results)
    if args.json:
        Path(args.json).write_text(json.dumps([dataclasses.asdict(r) for r in results], indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
