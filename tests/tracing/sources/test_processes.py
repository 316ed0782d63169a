"""Several processes on one store: a writer and readers at once, and a writer killed mid-batch."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
from pathlib import Path

from janux.tracing.sources.store.schema import DB_FILE_NAME
from tests.support.wait import wait_until
from tests.tracing.sources import workers

SPAWN = multiprocessing.get_context("spawn")


def test_writer_and_readers_at_once_see_only_whole_batches(tmp_path: Path) -> None:
    data_dir, progress, done = str(tmp_path / "data"), str(tmp_path / "progress"), str(tmp_path / "done")
    batches = 150
    writer = SPAWN.Process(target=workers.writer, args=(data_dir, batches, progress))
    readers = [SPAWN.Process(target=workers.reader, args=(data_dir, progress, done)) for _ in range(2)]
    writer.start()
    for process in readers:
        process.start()
    writer.join(120)
    Path(done).write_text("1")
    for process in readers:
        process.join(120)
    assert writer.exitcode == 0
    assert [p.exitcode for p in readers] == [0, 0]
    with sqlite3.connect(Path(data_dir) / DB_FILE_NAME) as conn:
        assert conn.execute("SELECT count(*) FROM otel_traces").fetchone()[0] == (
            batches * workers.TRACES_PER_BATCH * workers.SPANS_PER_TRACE
        )


def test_writer_killed_mid_batch_leaves_a_readable_store_of_whole_batches(tmp_path: Path) -> None:
    data_dir, progress = tmp_path / "data", tmp_path / "progress"
    writer = SPAWN.Process(target=workers.endless_writer, args=(str(data_dir), str(progress)))
    writer.start()
    wait_until(lambda: workers._read_int(str(progress)) >= 5, what="5 batches written")
    assert writer.pid is not None
    os.kill(writer.pid, signal.SIGKILL)
    writer.join(30)
    acknowledged = workers._read_int(str(progress))
    assert acknowledged >= 5
    per_batch = workers.TRACES_PER_BATCH * workers.SPANS_PER_TRACE
    with sqlite3.connect(data_dir / DB_FILE_NAME) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        spans = conn.execute("SELECT count(*) FROM otel_traces").fetchone()[0]
        summarized = conn.execute(
            "SELECT sum(SpanCount), min(SpanCount), max(SpanCount) FROM trace_summary"
        ).fetchone()
        counter = conn.execute("SELECT Value FROM store_counters WHERE Name = 'spans'").fetchone()[0]
    assert spans % per_batch == 0 and spans >= acknowledged * per_batch
    assert summarized == (spans, workers.SPANS_PER_TRACE, workers.SPANS_PER_TRACE)
    assert counter == spans


def test_processes_creating_the_same_store_at_once_never_see_a_lock_error(tmp_path: Path) -> None:
    # Two connections upgrading from a shared lock deadlock in SQLite, which answers one of them
    # "database is locked" without waiting: creating the schema must be serialized between processes.
    dirs = [str(tmp_path / f"store{i}") for i in range(40)]
    openers = 6
    barrier = SPAWN.Barrier(openers)
    failures = SPAWN.Value("i", 0)
    processes = [SPAWN.Process(target=workers.opener, args=(dirs, barrier, failures)) for _ in range(openers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
    assert [p.exitcode for p in processes] == [0] * openers
    assert failures.value == 0
