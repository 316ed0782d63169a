"""`janux import`: stream trace files into the store in batches, skipping and reporting bad records.

Memory is bounded by the batch size and the largest single record, never by the file size:
JSON lines and length-prefixed records are read one at a time, and at most two batches are in
flight (one being committed while the next is decoded).
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from janux.tracing.otlp.files import DEFAULT_MAX_RECORD_BYTES, FileRecord, TraceFile
from janux.tracing.records import SpanRecord
from janux.tracing.sources.store import TraceStore, WriteResult

DEFAULT_BATCH_SPANS = 5_000
"""Spans per store transaction during an import."""
MAX_PROBLEMS_KEPT = 200
"""How many `file:line: message` problems the report keeps (all are counted)."""
_IN_FLIGHT = 2


@dataclass(slots=True)
class ImportReport:
    """What an import read, stored, skipped and why."""

    files: int = 0
    """Files opened."""
    records: int = 0
    """Records (lines, messages, documents) that could be read."""
    spans_read: int = 0
    """Spans decoded."""
    stored: int = 0
    """Spans newly stored."""
    duplicates: int = 0
    """Spans already in the store."""
    rejected: int = 0
    """Spans and whole records refused as malformed."""
    problems: list[str] = field(default_factory=list)
    """`file:line: message` for the first `MAX_PROBLEMS_KEPT` problems."""
    problem_count: int = 0
    """All problems, including those past the kept list."""

    @property
    def nothing_read(self) -> bool:
        """True when not a single span could be read (the import failed): every file missing, empty,
        unreadable, or with every record or span refused. One readable span makes it a success."""
        return self.spans_read == 0

    def problem(self, message: str) -> None:
        """Count a problem and keep its message while there is room."""
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(message)


class _Batcher:
    """Collects spans and rejections and hands them to the store in batches."""

    def __init__(self, store: TraceStore, report: ImportReport, batch_spans: int) -> None:
        self._store = store
        self._report = report
        self._batch_spans = batch_spans
        self._spans: list[SpanRecord] = []
        self._rejected = 0
        self._errors: list[str] = []
        self._in_flight: deque[Future[WriteResult]] = deque()

    def add(self, spans: list[SpanRecord], rejected: int, errors: Iterable[str]) -> None:
        """Collect spans and rejections; hand over a batch once it is full."""
        self._spans.extend(spans)
        self._rejected += rejected
        self._errors.extend(errors)
        if len(self._spans) >= self._batch_spans:
            self.flush()

    def flush(self) -> None:
        """Submit what is collected, keeping at most `_IN_FLIGHT` batches uncommitted."""
        if not self._spans and not self._rejected:
            return
        self._in_flight.append(self._store.submit(self._spans, self._rejected, self._errors[:50]))
        self._spans, self._rejected, self._errors = [], 0, []
        while len(self._in_flight) >= _IN_FLIGHT:
            self._settle(self._in_flight.popleft())

    def finish(self) -> None:
        """Submit the rest and wait for every commit."""
        self.flush()
        while self._in_flight:
            self._settle(self._in_flight.popleft())

    def _settle(self, future: Future[WriteResult]) -> None:
        result = future.result()
        self._report.stored += result.stored
        self._report.duplicates += result.duplicates


def import_files(
    store: TraceStore,
    paths: Iterable[str | Path],
    *,
    batch_spans: int = DEFAULT_BATCH_SPANS,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    progress: bool | None = None,
) -> ImportReport:
    """Import every file into `store`; bad records are skipped, counted and listed in the report.

    `progress`: show a progress bar (default: only when stderr is a terminal).
    """
    report = ImportReport()
    batcher = _Batcher(store, report, batch_spans)
    show = sys.stderr.isatty() if progress is None else progress
    for path in paths:
        _import_one(Path(path), batcher, report, max_record_bytes, show)
    batcher.finish()
    return report


def _import_one(
    path: Path, batcher: _Batcher, report: ImportReport, max_record_bytes: int, show: bool
) -> None:
    try:
        trace_file = TraceFile(path, max_record_bytes)
    except OSError as err:
        report.problem(f"{path}: cannot open: {err.strerror or err}")
        return
    report.files += 1
    with (
        trace_file,
        tqdm(
            total=trace_file.size, unit="B", unit_scale=True, desc=path.name, disable=not show, leave=False
        ) as bar,
    ):
        update = _progress_updater(bar, trace_file)
        try:
            for record in trace_file.records():
                _take(record, batcher, report)
                update()
        except OSError as err:
            report.problem(f"{path}: read failed: {err}")


def _progress_updater(bar: tqdm, trace_file: TraceFile) -> Callable[[], None]:  # type: ignore[type-arg]
    seen = [0]

    def update() -> None:
        """Advance the bar by the bytes read since the last call."""
        position = trace_file.position()
        if position > seen[0]:
            bar.update(position - seen[0])
            seen[0] = position

    return update


def _take(record: FileRecord, batcher: _Batcher, report: ImportReport) -> None:
    """Account for one record and pass its spans on."""
    if record.result is None:
        message = f"{record.location}: {record.error}"
        report.rejected += 1
        report.problem(message)
        batcher.add([], 1, [message])
        return
    result = record.result
    report.records += 1
    report.spans_read += len(result.spans)
    report.rejected += result.rejected
    messages = [f"{record.location}: {e}" for e in result.errors]
    for message in messages:
        report.problem(message)
    if result.rejected > len(result.errors):
        report.problem(f"{record.location}: {result.rejected - len(result.errors)} more span(s) rejected")
    batcher.add(result.spans, result.rejected, messages)
