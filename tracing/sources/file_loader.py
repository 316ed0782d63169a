"""Trace files (OTLP/JSON lines, OTLP protobuf, compressed) into spans for an in-memory source.

Decoding is `janux.tracing.otlp`'s; this module only gathers the records of a file and counts what
was refused, so a bad line never hides the good ones and nothing is dropped silently.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource

MAX_ERRORS = 20
"""Rejection messages kept per load."""


@dataclass(slots=True)
class LoadResult:
    """Spans read from one or more files, and what was refused."""

    spans: list[SpanRecord] = field(default_factory=list)
    """Spans decoded cleanly."""
    rejected: int = 0
    """Spans or records refused."""
    errors: list[str] = field(default_factory=list)
    """The first rejection messages, each naming its file, line and field."""
    decompressed_bytes: int = 0
    """Bytes of content read (after decompression)."""

    def merge(self, other: LoadResult) -> None:
        """Add another load's spans and rejections."""
        self.decompressed_bytes += other.decompressed_bytes
        self.spans.extend(other.spans)
        self.rejected += other.rejected
        self.errors.extend(other.errors[: max(0, MAX_ERRORS - len(self.errors))])

    def _reject(self, message: str, count: int = 1) -> None:
        self.rejected += count
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(message)


def load_trace_file(
    path: str | Path, *, label: str | None = None, max_total_bytes: int | None = None
) -> LoadResult:
    """Every span of a trace file; unreadable files and records are counted, never raised.

    `max_total_bytes` caps the decompressed size read (the rest is refused with a message)."""
    from janux.tracing.otlp.files import TraceFile

    result = LoadResult()
    shown = label or str(path)
    try:
        trace_file = TraceFile(path, max_total_bytes=max_total_bytes)
    except OSError as exc:
        result._reject(f"{shown}: cannot open ({exc.strerror or exc})")
        return result
    with trace_file:
        for record in trace_file.records():
            where = record.location.replace(str(path), shown, 1)
            if record.error is not None:
                result._reject(f"{where}: {record.error}")
                continue
            if record.result is None:
                continue
            result.spans.extend(record.result.spans)
            if record.result.rejected:
                first = record.result.first_error
                result._reject(f"{where}: {first}", record.result.rejected)
        result.decompressed_bytes = trace_file.bytes_read
    return result


def load_trace_bytes(name: str, data: bytes, max_total_bytes: int | None = None) -> LoadResult:
    """Spans of an uploaded file's bytes (format detected from the content), reading at most
    `max_total_bytes` once decompressed."""
    handle, tmp = tempfile.mkstemp(prefix="janux-upload-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        return load_trace_file(tmp, label=name, max_total_bytes=max_total_bytes)
    finally:
        Path(tmp).unlink(missing_ok=True)


def source_from_files(paths: list[str | Path]) -> MemoryTraceSource:
    """An in-memory source holding every span of the given files."""
    total = LoadResult()
    for path in paths:
        total.merge(load_trace_file(path))
    return MemoryTraceSource(total.spans, rejected=total.rejected, errors=total.errors)
