"""The deriver's CPU part: traces' span texts -> rows of Janux's tables, in its process or in workers.

`rows_of_traces(jobs)` decodes each trace's spans (`span_json`), analyses them (the analysis
layer's `analyse`) and builds its rows (`fact_rows`). The deriver runs it in its own process, or,
with `DerivePool(n)`, in `n` worker processes: only the deriver's process talks to ClickHouse (so
it works with chdb, which one process opens), the workers get span texts and return rows, both
cheap to pass between processes. The rows are the same either way: the same function makes them.

Why worker processes: deciding a trace's facts is pure Python, bound by one core per process;
reading and writing are the ClickHouse client's and the server's. Workers are started by a fork
server, not forked from the deriver: a process running chdb's (or a client's) threads cannot be
forked safely.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import NamedTuple

from janux.tracing.analysis.agentmap.build import gc_paused
from janux.tracing.analysis.trace_facts import analyse
from janux.tracing.sources.clickhouse.fact_rows import (
    Replaced,
    ReplacedMap,
    TableRows,
    day_of,
    fact_rows,
    failure_rows,
)
from janux.tracing.sources.clickhouse.span_json import decode_spans

PART_SPANS = 5_000
"""Spans per task sent to a worker: small enough that every worker has work until a batch's end."""


class TraceJob(NamedTuple):
    """One trace to derive, as the deriver read it."""

    trace_id: str
    texts: list[str | bytes]
    """Its spans as `span_json.ANALYSED_SPAN_JSON` texts."""
    newest_ms: int
    """Insertion time (Unix ms) of its newest span."""
    day: dt.date | None
    """The partition of the facts it replaces (kept); None: the day it started."""
    replaced: Replaced
    replaced_map: ReplacedMap


class DerivedRows(NamedTuple):
    """Rows of some traces, and how many traces and spans they came from."""

    rows: TableRows
    traces: int
    spans: int
    cpu_s: float
    """CPU time spent making them (in the process that did)."""


def rows_of_traces(jobs: Sequence[TraceJob]) -> DerivedRows:
    """The rows of `jobs`' traces (children first per table, as `fact_rows` appends them)."""
    began = time.process_time()
    rows: TableRows = {}
    spans_read = 0
    with gc_paused():  # many small objects, no cycles (see `deriver.derive_pending`)
        for job in jobs:
            spans = decode_spans(job.texts)
            facts = analyse(job.trace_id, spans)
            day = job.day if job.day is not None else day_of(facts.summary.start_ns)
            fact_rows(facts, day, job.newest_ms, rows, job.replaced, job.replaced_map)
            failure_rows(facts, day, spans, rows)
            spans_read += len(spans)
    return DerivedRows(rows, len(jobs), spans_read, time.process_time() - began)


def _parts(jobs: Sequence[TraceJob], part_spans: int) -> Iterator[list[TraceJob]]:
    """`jobs` in consecutive parts of about `part_spans` spans (a trace is never split)."""
    part: list[TraceJob] = []
    size = 0
    for job in jobs:
        part.append(job)
        size += len(job.texts)
        if size >= part_spans:
            yield part
            part, size = [], 0
    if part:
        yield part


_NOTHING = DerivedRows({}, 0, 0, 0.0)


def _merged(first: DerivedRows, then: DerivedRows) -> DerivedRows:
    """Both groups' rows, table by table (`first`'s rows first)."""
    rows = dict(first.rows)
    for table, table_rows in then.rows.items():
        rows[table] = rows.get(table, []) + table_rows
    return DerivedRows(rows, first.traces + then.traces, first.spans + then.spans, first.cpu_s + then.cpu_s)


class DerivePool:
    """`workers` processes computing `rows_of_traces` for the deriver (`derive_pending(workers=...)`).

    Kept across runs by a long-running deriver (`janux derive --workers N`): starting the workers
    costs an interpreter and the analysis modules' imports each."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers: {workers}, need at least 1")
        self.workers = workers
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])  # each worker starts with the analysis imported
        self._executor = ProcessPoolExecutor(workers, mp_context=context)

    def rows(self, jobs: Sequence[TraceJob], part_spans: int, write_spans: int) -> Iterator[DerivedRows]:
        """The rows of `jobs`, computed by the workers in parts, in order, merged into groups of at
        least `write_spans` spans (the last one smaller). At most two parts per worker are sent
        ahead, so memory stays bounded by the batch the deriver read."""
        parts = _parts(jobs, max(1, part_spans))
        ahead: deque[Future[DerivedRows]] = deque()
        merged = _NOTHING
        try:
            while True:
                while len(ahead) < 2 * self.workers and (part := next(parts, None)) is not None:
                    ahead.append(self._executor.submit(rows_of_traces, part))
                if not ahead:
                    break
                done = ahead.popleft().result()
                merged = _merged(merged, done)
                if merged.spans >= write_spans or not ahead:
                    yield merged
                    merged = _NOTHING
        finally:  # a failed part or a closed generator: the parts sent ahead are not wanted
            for future in ahead:
                future.cancel()

    def close(self) -> None:
        """Stop the workers."""
        self._executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> DerivePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
