"""Process bodies for the multi-process tests (run through multiprocessing's spawn context)."""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from janux.tracing.records import SpanRecord
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from tests.support.otlp_build import record

TRACES_PER_BATCH = 4
"""Each batch writes this many new traces..."""
SPANS_PER_TRACE = 25
"""... of this many spans each."""


def batch_spans(batch_no: int) -> list[SpanRecord]:
    """The spans of batch `batch_no` (1-based): whole traces only, so partial reads are detectable."""
    spans = []
    for t in range(TRACES_PER_BATCH):
        trace_id = f"{batch_no:024x}{t:08x}"
        for i in range(SPANS_PER_TRACE):
            parent = "" if i == 0 else f"{1:016x}"
            spans.append(
                record(f"{i + 1:016x}", parent, f"span {i}", {"n": i, "text": "x" * 200},
                       trace_id=trace_id, start=batch_no * 1_000_000 + i)
            )  # fmt: skip
    return spans


def writer(data_dir: str, batches: int, progress: str) -> None:
    """Write `batches` batches, recording after each acknowledgement how many were acknowledged."""
    with open_store(data_dir) as store:
        for batch_no in range(1, batches + 1):
            store.write(batch_spans(batch_no))
            _write_progress(progress, batch_no)


def endless_writer(data_dir: str, progress: str) -> None:
    """Write batches until killed (for the crash test)."""
    with open_store(data_dir) as store:
        batch_no = 0
        while True:
            batch_no += 1
            store.write(batch_spans(batch_no))
            _write_progress(progress, batch_no)


def reader(data_dir: str, progress: str, done: str) -> None:
    """Read continuously while the writer runs; exit non-zero on any inconsistency or error."""
    rng = random.Random(0)
    checks = 0
    with open_store(data_dir) as store:
        while not Path(done).exists() or checks < 5:
            acknowledged = _read_int(progress)
            traces = store.count_traces(TraceFilter())
            if traces % TRACES_PER_BATCH or traces < acknowledged * TRACES_PER_BATCH:
                sys.exit(f"saw {traces} traces after {acknowledged} acknowledged batches")
            for summary in store.list_traces(TraceFilter(), limit=20, offset=rng.randrange(max(1, traces))):
                if summary.span_count != SPANS_PER_TRACE:
                    sys.exit(f"partial trace in the list: {summary.span_count} spans")
                spans = store.get_trace(summary.trace_id)
                if len(spans) != SPANS_PER_TRACE:
                    sys.exit(f"partial trace fetched: {len(spans)} spans")
            checks += 1
            time.sleep(0.005)


def _write_progress(path: str, batch_no: int) -> None:
    """Record the acknowledged batch count atomically: a writer killed mid-write must not leave an
    empty file behind (truncate-then-write would read as 0 acknowledged batches)."""
    temporary = Path(f"{path}.tmp")
    temporary.write_text(str(batch_no))
    os.replace(temporary, path)


def _read_int(path: str) -> int:
    try:
        return int(Path(path).read_text() or 0)
    except (OSError, ValueError):
        return 0


def opener(data_dirs: list[str], barrier: Any, failures: Any) -> None:
    """Open (creating) each store in turn at the same moment as the other openers; count failures."""
    for data_dir in data_dirs:
        barrier.wait()
        try:
            open_store(data_dir).close()
        except Exception as err:  # the test reports what went wrong
            with failures.get_lock():
                failures.value += 1
            print(f"open_store failed: {err}", file=sys.stderr)
