"""Group commit: one thread owns the write connection and commits queued batches together.

Callers hand a batch to `submit` and get a future; the writer thread takes every batch waiting
in the queue (up to a span budget), stores them in ONE transaction (one fsync), and resolves each
future only after COMMIT returned, so an acknowledgement always means "durably stored".

The writer checkpoints the WAL itself, after a commit and outside the inter-process write lock
(the connection's automatic checkpoint would run inside COMMIT, with the lock held): while one
receiver process copies pages into the database file, another can commit.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from janux.tracing.sources.store.ingest import apply_batches
from janux.tracing.sources.store.lock import WriteLock
from janux.tracing.sources.store.rows import StagedBatch
from janux.tracing.sources.store.schema import RECENT_ERRORS_KEPT

logger = logging.getLogger(__name__)

MAX_GROUP_SPANS = 20_000
"""Most spans committed in one transaction (bounds commit latency and the WAL's growth)."""

CHECKPOINT_EVERY_SPANS = 8_000
"""Spans committed between two WAL checkpoints of a writer (about 2,000 pages of log, twice
SQLite's automatic checkpoint interval)."""

SWITCH_INTERVAL_S = 0.0005
"""The thread switch interval of a process that writes to the store (CPython's default is 5 ms;
the writer only ever lowers it). Each statement of the write path hands the GIL over while
SQLite works and must win it back: with the default, a writer whose process is busy in Python
(decoding the next request) waits up to 5 ms per statement, with the write lock held, which
multiplies the time per stored span under load (`python -m bench.bench_ingest` shows the rate)."""

WAL_RESET_PAGES = 25_000
"""Log size (pages) past which a checkpoint runs under the write lock. Checkpoints outside it race
the other writers' appends and may never catch up; one under the lock completes, so the next
transaction starts the log from the beginning again (bounds the WAL file at ~100 MB)."""


FAILURE_LOG_EVERY_S = 60.0
"""At most one log line per this many seconds about failing commits (the others are counted)."""


class CommitFailureLog:
    """Logs failing commits as one line per `FAILURE_LOG_EVERY_S`, with the count of the others.

    A full or broken disk fails every commit until it is fixed: a line (and a traceback) per refused
    request would fill the log, on that same disk, in seconds. The disk's errors (sqlite3 and OS
    errors) get no traceback: the message says it all; anything else gets one, once per period."""

    def __init__(self) -> None:
        self._last = -FAILURE_LOG_EVERY_S
        self._unreported = 0
        self._failing = 0

    def failed(self, err: BaseException, batches: int) -> None:
        """A commit of `batches` batches failed with `err` (their requests are refused, retryable)."""
        self._failing += 1
        now = time.monotonic()
        if now - self._last < FAILURE_LOG_EVERY_S:
            self._unreported += 1
            return
        more = f" ({self._unreported} more failed commits since the last report)" if self._unreported else ""
        self._last, self._unreported = now, 0
        disk = isinstance(err, (sqlite3.Error, OSError))
        logger.error(
            "store commit failed for %d batch(es), refused with a retryable error: %s: %s%s",
            batches, type(err).__name__, err, more, exc_info=None if disk else err,
        )  # fmt: skip

    def succeeded(self) -> None:
        """A commit succeeded: say so once after a stretch of failures."""
        if self._failing:
            logger.warning("store commits succeed again, after %d failed", self._failing)
            self._failing = self._unreported = 0
            self._last = -FAILURE_LOG_EVERY_S


@dataclass(slots=True)
class WriteResult:
    """What one submitted batch did to the store."""

    stored: int = 0
    """Spans newly stored."""
    duplicates: int = 0
    """Spans already stored (same trace id and span id), skipped and counted."""
    rejected: int = 0
    """Malformed spans reported with the batch, counted in the ingest statistics."""
    truncated: int = 0
    """Spans stored with an oversized value cut to the store's limit (see `rows.MAX_VALUE_CHARS`)."""
    repaired: int = 0
    """Spans stored with text that was not valid Unicode replaced by U+FFFD."""


@dataclass(slots=True)
class _Job:
    rows: StagedBatch
    rejected: int
    errors: Sequence[str]
    future: Future[WriteResult] = field(default_factory=Future)


class GroupCommitWriter:
    """A daemon thread committing queued batches; `connect` opens its private connection."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        lock: Callable[[], WriteLock] | None = None,
        name: str = "janux-store-writer",
    ) -> None:
        self._connect = connect
        self._make_lock = lock
        self._lock_file: WriteLock | None = None
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._uncheckpointed = 0
        self._failures = CommitFailureLog()
        self.commits = 0
        """Transactions committed so far (one per group of batches)."""

    def submit(self, rows: StagedBatch, rejected: int = 0, errors: Sequence[str] = ()) -> Future[WriteResult]:
        """Queue staged rows (and rejection counts) for the next commit; the future resolves after it."""
        job = _Job(rows, rejected, errors)
        with self._lock:
            if self._closed:
                raise RuntimeError("the store is closed")
            if not self._thread.is_alive():
                self._thread.start()
                self._started.wait()
                if self._start_error is not None:
                    raise RuntimeError(f"cannot open the store for writing: {self._start_error}")
            self._queue.put(job)
        return job.future

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            alive = self._thread.is_alive()
            if alive:
                self._queue.put(None)
        if alive:
            self._thread.join()

    def _run(self) -> None:
        if sys.getswitchinterval() > SWITCH_INTERVAL_S:
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        try:
            conn = self._connect()
            self._lock_file = self._make_lock() if self._make_lock is not None else None
        except BaseException as err:  # reported to the first submitter
            self._start_error = err
            self._started.set()
            return
        self._started.set()
        try:
            running = True
            while running:
                jobs, running = self._take()
                if jobs:
                    running = self._commit_group(conn, jobs, running)
                    self._uncheckpointed += sum(len(job.rows) for job in jobs)
                    if self._uncheckpointed >= CHECKPOINT_EVERY_SPANS or not running:
                        self._uncheckpointed = 0
                        self._checkpoint(conn)
        finally:
            conn.close()
            if self._lock_file is not None:
                self._lock_file.close()

    def _take(self) -> tuple[list[_Job], bool]:
        """Block for one job, then drain whatever else is waiting; False once close was asked."""
        first = self._queue.get()
        if first is None:
            return [], False
        jobs = [first]
        return jobs, self._drain(jobs)

    def _drain(self, jobs: list[_Job]) -> bool:
        """Add the jobs waiting now to `jobs` (up to the span budget); False if close was asked."""
        spans = sum(len(job.rows) for job in jobs)
        while spans < MAX_GROUP_SPANS:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return True
            if job is None:
                return False
            jobs.append(job)
            spans += len(job.rows)
        return True

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """Copy committed pages from the WAL into the database file; never fails a write."""
        try:
            pages = _checkpoint(conn)
            if pages > WAL_RESET_PAGES and self._lock_file is not None:
                with self._lock_file.held():
                    _checkpoint(conn)
        except sqlite3.Error as err:  # busy (another checkpoint runs) or I/O: the next one retries
            logger.debug("WAL checkpoint skipped: %s", err)

    def _commit_group(self, conn: sqlite3.Connection, jobs: list[_Job], running: bool) -> bool:
        """Commit `jobs` under the write lock, with the jobs queued while waiting for it (another
        process was committing: a bigger group costs one commit and one lock hand-over less).
        Returns False once close was asked."""
        if self._lock_file is None:
            self._commit(conn, jobs)
            return running
        with self._lock_file.held():
            if running:
                running = self._drain(jobs)
            self._commit(conn, jobs)
        return running

    def _commit(self, conn: sqlite3.Connection, jobs: list[_Job]) -> None:
        """Commit `jobs` in one transaction (the caller holds the write lock)."""
        try:
            results = commit_jobs(conn, [(j.rows, j.rejected, j.errors) for j in jobs])
        except BaseException as err:
            if len(jobs) > 1 and isinstance(err, Exception):
                # One bad batch must not fail the others committed with it: retry them one by one.
                for job in jobs:
                    self._commit(conn, [job])
                return
            self._failures.failed(err, len(jobs))
            for job in jobs:
                job.future.set_exception(err)
            return
        self._failures.succeeded()
        self.commits += 1
        for job, result in zip(jobs, results, strict=True):
            job.future.set_result(result)


def _checkpoint(conn: sqlite3.Connection) -> int:
    """A passive checkpoint (waits for no reader or writer); returns the pages in the log."""
    row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    if row is None:
        return 0
    _busy, log_pages, _checkpointed = row  # the pragma's three columns
    return int(log_pages)


def commit_jobs(
    conn: sqlite3.Connection, jobs: Sequence[tuple[StagedBatch, int, Sequence[str]]]
) -> list[WriteResult]:
    """Store several batches in one transaction and update the counters; rolls back on failure."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        results = []
        counts = apply_batches(conn, [rows for rows, _, _ in jobs])
        for (rows, rejected, errors), (stored, duplicates) in zip(jobs, counts, strict=True):
            results.append(WriteResult(stored, duplicates, rejected, rows.truncated, rows.repaired))
            _record_errors(conn, [*errors, *rows.notes])
        _bump_counters(conn, results)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return results


def _bump_counters(conn: sqlite3.Connection, results: list[WriteResult]) -> None:
    totals = {
        "spans": sum(r.stored for r in results),
        "duplicates": sum(r.duplicates for r in results),
        "rejected": sum(r.rejected for r in results),
        "truncated": sum(r.truncated for r in results),
        "repaired": sum(r.repaired for r in results),
    }
    for name, value in totals.items():
        if value:
            # An upsert: stores created before a counter existed get its row on first use.
            conn.execute(
                "INSERT INTO store_counters (Name, Value) VALUES (?, ?) "
                "ON CONFLICT (Name) DO UPDATE SET Value = Value + excluded.Value",
                (name, value),
            )


def _record_errors(conn: sqlite3.Connection, errors: Sequence[str]) -> None:
    if not errors:
        return
    conn.executemany("INSERT INTO ingest_errors (Message) VALUES (?)", [(e[:2000],) for e in errors])
    conn.execute(
        "DELETE FROM ingest_errors WHERE Id <= (SELECT max(Id) FROM ingest_errors) - ?", (RECENT_ERRORS_KEPT,)
    )
