"""The deriver: reads `otel_traces` incrementally and writes each trace's facts into Janux's tables.

`derive_pending(client)` runs once over what is pending: the spans inserted after the shard's
watermark (`schema.INSERTED_COLUMN`). A trace is derived once it has been quiet (no span inserted)
for `quiet_s`, with the analysis layer's `analyse()`, the same code the embedded store runs. Its
rows are written children first, facts row last; the watermark is committed only after every row
is written. So a deriver killed at any point resumes from the last committed watermark and writes
the same rows again (same keys: `ReplacingMergeTree` keeps one), losing nothing and doubling nothing.

Why the watermark can move past a trace's spans: it moves to the quiet cutoff, but never past the
first span of a trace that is still receiving spans (held), so a trace without a facts row has all
its spans after the watermark and is read from the window alone. A trace that already has facts
and receives late spans is read whole (by trace id) and gets a new version row.

Shards (`shard=(i, n)`) split traces by `cityHash64(TraceId) % n`; each keeps its own watermark.

The engine's work overlaps the analysis: every client call runs in order on one thread of its own
(`_Pipelined`), so the next batch's spans are read and an analysed part's rows written while this
thread analyses (the engine, chdb in this process or a server over HTTP, runs without the GIL).
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from janux.tracing.analysis.agentmap.build import gc_paused
from janux.tracing.analysis.trace_facts import analyse
from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse import schema as s
from janux.tracing.sources.clickhouse.fact_rows import (
    NO_MAP_REPLACED,
    NOTHING_REPLACED,
    Replaced,
    ReplacedMap,
    TableRows,
    day_of,
    fact_rows,
    failure_rows,
    trace_link_rows,
    typed_value,
)
from janux.tracing.sources.clickhouse.span_json import ANALYSED_SPAN_JSON, decode_spans, span_texts

logger = logging.getLogger(__name__)

QUIET_SECONDS = 30.0
"""Default time without new spans after which a trace is derived."""
MAX_OPEN_SECONDS = 3600.0
"""A trace receiving spans for longer than this is derived anyway (and again as spans arrive), so
one endless conversation cannot hold the watermark back."""
BATCH_SPANS = 100_000
"""Spans read per query when a window is large (the next query runs while a batch is analysed)."""
WRITE_SPANS = 25_000
"""Spans analysed between two writes of their rows (each write runs while the next part is
analysed; every insert has a fixed cost in the engine, the rollups' views above all)."""
MAX_WINDOW_SPANS = 5_000_000
"""Rows of `otel_traces` whose traces one pass keeps in memory (a larger backlog is read in parts)."""
IDS_PER_QUERY = 2_000
"""Trace ids per `IN` list."""
NAMED_TRACES = 20_000
"""Up to this many traces to derive from a larger window are named in the window's scan."""


class DeriveClient(Protocol):
    """The part of a ClickHouse client the deriver needs (`clickhouse_connect`, `ChdbClient`)."""

    def query(self, query: str, parameters: dict[str, Any] | None = None) -> Any:
        """Run a SELECT; the result has `result_rows`."""
        ...

    def command(self, statement: str) -> Any:
        """Run a statement that returns nothing."""
        ...

    def insert(self, table: str, data: Sequence[Sequence[Any]], column_names: Sequence[str]) -> Any:
        """Insert rows."""
        ...


WRITES_IN_FLIGHT = 2
"""Batches' rows handed to the writing thread and not written yet, at most (bounds memory)."""


class _Pipelined:
    """The run's client, its calls made in order on one thread of their own.

    Why a thread: the engine's work (chdb in this process, or a server's answer awaited over HTTP)
    runs without the GIL, so the next batch's spans are read and the last batch's rows written
    while this thread decodes and analyses. Why one thread, in order: a client's session takes one
    query at a time, and the crash-safety order stays as written (a batch's children before its
    facts rows, every batch before the watermark: `derive_pending` drains before committing)."""

    def __init__(self, client: DeriveClient) -> None:
        self._client = client
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="janux-derive-io")
        self._writes: deque[Future[None]] = deque()

    def query(self, query: str, parameters: dict[str, Any] | None = None) -> Any:
        """Run a SELECT after every call made before it; wait for its result."""
        return self.query_later(query, parameters).result()

    def query_later(self, query: str, parameters: dict[str, Any] | None = None) -> Future[Any]:
        """Run a SELECT after every call made before it; its result when asked."""
        return self._thread.submit(self._client.query, query, parameters)

    def command(self, statement: str) -> Any:
        """Run a statement after every call made before it; wait for it."""
        return self._thread.submit(self._client.command, statement).result()

    def insert(self, table: str, data: Sequence[Sequence[Any]], column_names: Sequence[str]) -> Any:
        """Insert rows after every call made before it; wait for it."""
        return self._thread.submit(self._client.insert, table, data, column_names).result()

    def write_later(self, rows: TableRows) -> None:
        """Write a batch's rows (`write`) after every call made before it, without waiting; waits
        first when `WRITES_IN_FLIGHT` batches are not written yet (a failed write raises here or
        in `drain`)."""
        while len(self._writes) >= WRITES_IN_FLIGHT:
            self._writes.popleft().result()
        self._writes.append(self._thread.submit(self._write, rows))

    def _write(self, rows: TableRows) -> None:
        write(self._client, rows)
        logger.debug("wrote the facts of %d trace(s)", len(rows.get(s.FACTS, [])))

    def drain(self) -> None:
        """Wait until every batch handed over is written; raise the first write's error."""
        while self._writes:
            self._writes.popleft().result()

    def close(self) -> None:
        """Let the call under way finish, drop the ones not started (the watermark is not
        committed after a failure, so a later run writes them)."""
        self._thread.shutdown(wait=True, cancel_futures=True)


@dataclass(slots=True)
class DeriveStats:
    """What one `derive_pending` run did."""

    traces: int = 0
    """Traces derived (written)."""
    spans: int = 0
    """Spans read and analysed."""
    held: int = 0
    """Traces left for a later run because they are still receiving spans."""
    up_to_date: int = 0
    """Traces in the window whose facts were already written (a re-run after a kill)."""
    watermark_ms: int = 0
    """The watermark committed (Unix ms of insertion time)."""
    seconds: float = 0.0
    """Wall clock of the run."""


@dataclass(frozen=True, slots=True)
class Shard:
    """One deriver's part of the traces: those with `cityHash64(TraceId) % count == index`."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index}/{self.count}: need 0 <= i < n")

    @property
    def key(self) -> str:
        """The shard's name in `janux_derive_state`."""
        return f"{self.index}/{self.count}"

    def sql(self) -> str:
        """Its condition on `otel_traces` rows."""
        return f"cityHash64(TraceId) % {self.count} = {self.index}"


def parse_shard(text: str) -> Shard:
    """`i/n` as a `Shard`; ValueError with the expected form otherwise."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected i/n, e.g. 0/2") from None
    return Shard(index, count)


def watermark(client: DeriveClient, shard: Shard, table: str = "otel_traces") -> int:
    """The committed watermark of `shard` over `table` (0 before its first run)."""
    rows = client.query(
        f"SELECT watermark_ms FROM {s.STATE} FINAL "
        "WHERE source = {source:String} AND shard = {shard:String}",
        parameters={"source": table, "shard": shard.key},
    ).result_rows
    return int(rows[0][0]) if rows else 0


def _commit(client: DeriveClient, table: str, shard: Shard, watermark_ms: int) -> None:
    row = [table, shard.key, shard.count, watermark_ms, time.time_ns()]
    client.insert(s.STATE, [row], ["source", "shard", "shards", "watermark_ms", "updated_ns"])


@dataclass(slots=True)
class _Window:
    """Traces of one hash part of the rows inserted in (start, end]: their spans, first and last
    insertion (ms)."""

    start_ms: int
    end_ms: int
    part: tuple[int, int] = (0, 1)
    """(k, K): the traces with `intDiv(cityHash64(TraceId), shards) % K = k` (memory bounded by
    `max_window_spans` however large the backlog)."""
    traces: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def sql(self, shard: Shard) -> str:
        k, parts = self.part
        in_part = f" AND intDiv(cityHash64(TraceId), {shard.count}) % {parts} = {k}" if parts > 1 else ""
        return (
            f"{s.INSERTED_COLUMN} > fromUnixTimestamp64Milli(toInt64({self.start_ms})) AND "
            f"{s.INSERTED_COLUMN} <= fromUnixTimestamp64Milli(toInt64({self.end_ms})) AND "
            f"{shard.sql()}{in_part}"
        )

    def sub_bucket(self, shard: Shard, buckets: int, bucket: int) -> str:
        """A hash bucket of this part (independent of the part's own hash digits)."""
        return f"intDiv(cityHash64(TraceId), {shard.count * self.part[1]}) % {buckets} = {bucket}"


def _end_and_size(client: DeriveClient, table: str, shard: Shard, start_ms: int) -> tuple[int, int]:
    """The window's end and its row count. It ends a millisecond before now: a row inserted later
    gets a later time, so the watermark (at most the window's end) never passes a row this run
    could not see."""
    now = client.query("SELECT toUnixTimestamp64Milli(now64(3)) - 1").result_rows
    window = _Window(start_ms, int(now[0][0]))
    rows = client.query(f"SELECT count() FROM {table} WHERE {window.sql(shard)}").result_rows
    return window.end_ms, int(rows[0][0]) if rows else 0


def _window(client: DeriveClient, table: str, shard: Shard, window: _Window) -> _Window:
    ins = f"toUnixTimestamp64Milli({s.INSERTED_COLUMN})"
    rows = client.query(
        f"SELECT TraceId, count(), min({ins}), max({ins}) FROM {table} WHERE {window.sql(shard)} "
        "GROUP BY TraceId"
    ).result_rows
    window.traces = {str(t): (int(n), int(lo), int(hi)) for t, n, lo, hi in rows}
    return window


@dataclass(frozen=True, slots=True)
class _Known:
    """The current facts row of a trace derived before."""

    day: Any
    """Its partition day (kept when it is derived again)."""
    last_ms: int
    """Insertion time of the newest span it was derived from."""
    version: int
    start_ns: int


def _known(client: DeriveClient, trace_ids: list[str]) -> dict[str, _Known]:
    """The current facts of the traces that already have facts."""
    found: dict[str, _Known] = {}
    for start in range(0, len(trace_ids), IDS_PER_QUERY):
        rows = client.query(
            f"SELECT trace_id, day, last_inserted_ms, version, start_ns FROM {s.FACTS} FINAL "
            "WHERE trace_id IN {ids:Array(String)}",
            parameters={"ids": trace_ids[start : start + IDS_PER_QUERY]},
        ).result_rows
        found.update({str(t): _Known(day, int(last), int(v), int(at)) for t, day, last, v, at in rows})
    return found


def _replaced(client: DeriveClient, known: dict[str, _Known], trace_ids: list[str]) -> dict[str, Replaced]:
    """The usage rows of the current version of each trace about to be derived again (the rollup
    takes them back when the new version's facts row is written)."""
    found: dict[str, Replaced] = {t: (known[t].start_ns, []) for t in trace_ids}
    for start in range(0, len(trace_ids), IDS_PER_QUERY):
        chunk = trace_ids[start : start + IDS_PER_QUERY]
        rows = client.query(
            "SELECT trace_id, dimension, key, count, failed, input_sum, output_sum, cost_sum, unpriced_sum, "
            f"unread_sum FROM {s.USAGE} FINAL WHERE (trace_id, version) IN "
            "(SELECT arrayJoin(arrayZip({ids:Array(String)}, {versions:Array(UInt64)}))) "
            "ORDER BY trace_id, seq",
            parameters={"ids": chunk, "versions": [known[t].version for t in chunk]},
        ).result_rows
        for row in rows:
            found[str(row[0])][1].append(_usage_row(row[1:]))
    return found


def _map_rows(
    client: DeriveClient, table: str, fields: Sequence[str], ids: list[str], versions: list[int]
) -> dict[str, list[tuple[Any, ...]]]:
    """The `fields` of the rows of `table` of each (trace, version), in order."""
    kinds = dict(next(t.columns for t in s.TABLES if t.name == table))
    rows = client.query(
        f"SELECT trace_id, {', '.join(fields)} FROM {table} FINAL WHERE (trace_id, version) IN "
        "(SELECT arrayJoin(arrayZip({ids:Array(String)}, {versions:Array(UInt64)}))) ORDER BY trace_id, seq",
        parameters={"ids": ids, "versions": versions},
    ).result_rows
    found: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        found.setdefault(str(row[0]), []).append(
            tuple(typed_value(kinds[name], value) for name, value in zip(fields, row[1:], strict=True))
        )
    return found


def _replaced_map(
    client: DeriveClient, known: dict[str, _Known], trace_ids: list[str]
) -> dict[str, ReplacedMap]:
    """The loops and delegations of the current version of each trace about to be derived again
    (the agent-map rollup takes them back when the new version's facts row is written)."""
    found: dict[str, ReplacedMap] = {}
    for start in range(0, len(trace_ids), IDS_PER_QUERY):
        chunk = trace_ids[start : start + IDS_PER_QUERY]
        versions = [known[t].version for t in chunk]
        loops = _map_rows(client, s.LOOPS, s.MAP_LOOP_FIELDS, chunk, versions)
        delegations = _map_rows(client, s.DELEGATIONS, s.MAP_DELEGATION_FIELDS, chunk, versions)
        for trace_id, version in zip(chunk, versions, strict=True):
            found[trace_id] = (version, loops.get(trace_id, []), delegations.get(trace_id, []))
    return found


def _usage_row(row: Sequence[Any]) -> tuple[Any, ...]:
    """A `janux_usage` row as read back (chdb gives 64-bit ints as text) in Python types."""
    dimension, key, count, failed, tokens_in, tokens_out, cost, unpriced, unread = row
    return (str(dimension), str(key), int(count), int(failed), _int(tokens_in), _int(tokens_out),
            None if cost is None else float(cost), _int(unpriced), int(unread))  # fmt: skip


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _as_date(value: Any) -> dt.date:
    """A `Date` as read back (a date from clickhouse_connect, text from chdb)."""
    return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value)[:10])


_Batch = dict[str, tuple[list[SpanRecord], int]]
"""Spans and newest insertion (ms) of each trace of a batch."""


def _spans(rows: Sequence[Sequence[Any]], wanted: set[str]) -> _Batch:
    """Rows (`_SELECT`) grouped by trace: spans and newest insertion; only the `wanted` traces'
    spans are decoded."""
    kept = [row for row in rows if str(row[0]) in wanted]
    # Grouped in two plain dicts, the pair built once per trace (not once per span): a third of
    # this function's CPU went to rebuilding it.
    spans_of: dict[str, list[SpanRecord]] = {}
    newest_of: dict[str, int] = {}
    for row, span in zip(kept, decode_spans(span_texts(kept, 2)), strict=True):
        trace_id = str(row[0])  # as the window and `wanted` spell it
        inserted = int(row[1])
        spans = spans_of.get(trace_id)
        if spans is None:
            spans_of[trace_id] = [span]
            newest_of[trace_id] = inserted
        else:
            spans.append(span)
            if inserted > newest_of[trace_id]:
                newest_of[trace_id] = inserted
    return {trace_id: (spans, newest_of[trace_id]) for trace_id, spans in spans_of.items()}


_SELECT = f"SELECT TraceId, toUnixTimestamp64Milli({s.INSERTED_COLUMN}), {ANALYSED_SPAN_JSON}"


def _read_ahead(client: _Pipelined, reads: list[tuple[str, dict[str, Any], set[str]]]) -> Iterator[_Batch]:
    """The batches of `reads` ((SELECT `_SELECT`, parameters, wanted traces) each), the next one's
    query running while the caller analyses the last."""
    pending = client.query_later(*reads[0][:2]) if reads else None
    for index, (_, _, wanted) in enumerate(reads):
        assert pending is not None
        rows = pending.result().result_rows
        pending = client.query_later(*reads[index + 1][:2]) if index + 1 < len(reads) else None
        yield _spans(rows, wanted)


def _fresh_batches(
    client: _Pipelined, table: str, shard: Shard, window: _Window, fresh: dict[str, int], batch_spans: int
) -> Iterator[_Batch]:
    """The spans of traces derived for the first time, from the window, in hash buckets of about
    `batch_spans` spans (one scan of the window each). When they are a few of the window's traces
    (the others up to date, or still receiving spans), the scan names them, so only their rows
    come back."""
    buckets = max(1, math.ceil(sum(fresh.values()) / max(1, batch_spans)))
    named = len(fresh) <= NAMED_TRACES and len(fresh) < len(window.traces)
    parameters = {"ids": sorted(fresh)} if named else {}
    wanted = set(fresh)
    reads = [
        (
            f"{_SELECT} FROM {table} WHERE {window.sql(shard)} AND "
            f"{window.sub_bucket(shard, buckets, bucket)} "
            f"{'AND TraceId IN {ids:Array(String)} ' if named else ''}LIMIT 1 BY TraceId, SpanId",
            parameters,
            wanted,
        )
        for bucket in range(buckets)
    ]
    return _read_ahead(client, reads)


def _whole_batches(client: _Pipelined, table: str, trace_ids: list[str]) -> Iterator[_Batch]:
    """The spans of traces derived before that received late spans, read whole by trace id."""
    step = IDS_PER_QUERY // 4
    sql = f"{_SELECT} FROM {table} WHERE TraceId IN {{ids:Array(String)}} LIMIT 1 BY TraceId, SpanId"
    chunks = [trace_ids[start : start + step] for start in range(0, len(trace_ids), step)]
    return _read_ahead(client, [(sql, {"ids": chunk}, set(chunk)) for chunk in chunks])


def write(client: DeriveClient, rows: TableRows) -> None:
    """Insert derived rows: every child table first, the facts rows last (a reader joins children to
    the current facts version, so it never sees a trace whose children are not written yet)."""
    for table in (s.LOOPS, s.DELEGATIONS, s.USAGE, s.FAILURES, s.TRACE_LINKS, s.FACTS):
        data = rows.get(table)
        if data:
            columns = next(t.columns for t in s.TABLES if t.name == table)
            client.insert(table, data, s.column_names(columns))


def _derive_batch(
    client: _Pipelined, batch: _Batch, known: dict[str, _Known], stats: DeriveStats, write_spans: int
) -> None:
    """Analyse a batch's traces; hand their rows over to be written every `write_spans` spans
    (so the engine writes a part while the next is analysed)."""
    rows: TableRows = {}
    again = sorted(t for t in batch if t in known)
    replaced, replaced_map = _replaced(client, known, again), _replaced_map(client, known, again)
    pending = 0
    for trace_id, (spans, newest) in batch.items():
        facts = analyse(trace_id, spans)
        day = _as_date(known[trace_id].day) if trace_id in known else day_of(facts.summary.start_ns)
        fact_rows(facts, day, newest, rows, replaced.get(trace_id, NOTHING_REPLACED),
                  replaced_map.get(trace_id, NO_MAP_REPLACED))  # fmt: skip
        failure_rows(facts, day, spans, rows)
        trace_link_rows(trace_id, day, spans, rows)
        stats.traces += 1
        stats.spans += len(spans)
        pending += len(spans)
        if pending >= write_spans:
            client.write_later(rows)
            rows, pending = {}, 0
    if rows:
        client.write_later(rows)


@dataclass(slots=True)
class _Limits:
    """When a trace is ready, and how much is read at once."""

    cutoff_ms: int
    """A trace whose last span was inserted after this is still receiving spans."""
    oldest_open_ms: int
    """A trace receiving spans since before this is derived anyway."""
    batch_spans: int
    write_spans: int


def _derive_window(
    client: _Pipelined, table: str, shard: Shard, window: _Window, limits: _Limits, stats: DeriveStats
) -> list[int]:
    """Derive the ready traces of one window part; returns the first insertion (minus 1 ms) of
    each held trace (the watermark must not pass them)."""
    ready, held_from = {}, []
    for trace_id, (count, first, last) in window.traces.items():
        if last <= limits.cutoff_ms or first < limits.oldest_open_ms:
            ready[trace_id] = (count, last)
        else:
            stats.held += 1
            held_from.append(first - 1)
    known = _known(client, sorted(ready))
    late = sorted(t for t, (_, last) in ready.items() if t in known and known[t].last_ms < last)
    stats.up_to_date += sum(1 for t, (_, last) in ready.items() if t in known and known[t].last_ms >= last)
    fresh = {t: count for t, (count, _) in ready.items() if t not in known}
    if fresh:
        for batch in _fresh_batches(client, table, shard, window, fresh, limits.batch_spans):
            _derive_batch(client, batch, known, stats, limits.write_spans)
    for batch in _whole_batches(client, table, late):
        _derive_batch(client, batch, known, stats, limits.write_spans)
    return held_from


def derive_pending(
    client: DeriveClient, table: str = "otel_traces", quiet_s: float = QUIET_SECONDS,
    shard: Shard | tuple[int, int] = Shard(), max_open_s: float = MAX_OPEN_SECONDS,
    batch_spans: int = BATCH_SPANS, max_window_spans: int = MAX_WINDOW_SPANS,
    write_spans: int = WRITE_SPANS,
) -> DeriveStats:  # fmt: skip
    """Derive every trace of `shard` that is pending and quiet; commit the watermark; return stats.

    A large backlog (a first run over a full table) is read in hash parts of about
    `max_window_spans` rows, so memory stays bounded; the watermark moves once, after all parts."""
    shard = shard if isinstance(shard, Shard) else Shard(*shard)
    if s.applied_version(client) < s.SCHEMA_VERSION:
        raise RuntimeError(
            f"Janux's tables are at schema {s.applied_version(client)}, the deriver writes "
            f"{s.SCHEMA_VERSION}: run `janux clickhouse init` first"
        )
    began = time.perf_counter()
    stats = DeriveStats()
    start = watermark(client, shard, table)
    end, size = _end_and_size(client, table, shard, start)
    limits = _Limits(end - int(quiet_s * 1000), end - int(max_open_s * 1000), batch_spans, write_spans)
    held_from = [limits.cutoff_ms]
    parts = max(1, math.ceil(size / max(1, max_window_spans)))
    pipelined = _Pipelined(client)
    try:
        for k in range(parts if size else 0):
            window = _window(pipelined, table, shard, _Window(start, end, (k, parts)))
            # A part holds up to `max_window_spans` spans as records, facts and rows: the cyclic
            # collector would scan them again and again (a quarter of the run's time) and none of
            # them holds a reference cycle; what the part leaves behind is freed by reference count.
            with gc_paused():
                held_from += _derive_window(pipelined, table, shard, window, limits, stats)
        pipelined.drain()  # every batch written before the watermark moves past it
    finally:
        pipelined.close()
    stats.watermark_ms = max(start, min(held_from))
    if stats.watermark_ms != start:
        _commit(client, table, shard, stats.watermark_ms)
    stats.seconds = time.perf_counter() - began
    return stats
