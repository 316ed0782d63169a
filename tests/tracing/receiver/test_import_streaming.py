"""An import streams: its memory depends on the batch size, not on the size of the file."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from janux.tracing.receiver.file_import import import_files
from janux.tracing.sources.store import open_store

SPANS_PER_LINE = 10


def _write_json_lines(path: Path, lines: int) -> None:
    """`lines` OTLP/JSON lines (one trace of 10 spans each, ~500 bytes of attributes per span)."""
    with path.open("w") as out:
        for line in range(lines):
            trace_id = f"{line + 1:032x}"
            spans = [
                {
                    "traceId": trace_id,
                    "spanId": f"{i + 1:016x}",
                    "parentSpanId": "" if i == 0 else f"{1:016x}",
                    "name": f"span {i}",
                    "startTimeUnixNano": str(1_700_000_000_000_000_000 + line * 1000 + i),
                    "endTimeUnixNano": str(1_700_000_000_000_000_000 + line * 1000 + i + 500),
                    "attributes": [{"key": f"k{k}", "value": {"stringValue": "v" * 40}} for k in range(10)],
                }
                for i in range(SPANS_PER_LINE)
            ]
            out.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")


def _peak_bytes(path: Path, data_dir: Path) -> int:
    with open_store(data_dir) as store:
        tracemalloc.start()
        try:
            report = import_files(store, [path], batch_spans=200, progress=False)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert report.stored == report.spans_read and report.problem_count == 0
    return peak


def test_memory_is_bounded_by_the_batch_not_the_file(tmp_path: Path) -> None:
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    _write_json_lines(small, 150)
    _write_json_lines(large, 600)
    small_peak = _peak_bytes(small, tmp_path / "s")
    large_peak = _peak_bytes(large, tmp_path / "l")
    # Four times the input, about the same peak; and well under the file's own size.
    assert large_peak < small_peak * 1.5
    assert large_peak < large.stat().st_size / 2
