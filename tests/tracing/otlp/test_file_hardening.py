"""Trace files that are not what they seem: decompression bombs, cut-off and multi-part
compression, files of zero bytes, UTF-16 text. Each gets bounded memory and one clear message."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import zstandard

from janux.tracing.otlp.files import TraceFile
from janux.tracing.receiver.file_import import import_files
from janux.tracing.sources.store import open_store
from tests.support.paths import FIXTURES, REPO_ROOT

LINES = (FIXTURES / "collector_file_exporter.jsonl").read_bytes()  # 2 lines of 2 spans each
MIB = 1024 * 1024


def _read(path: Path, **options: int) -> tuple[int, int, list[str]]:
    """(records read, spans, problems) of a file."""
    records = spans = 0
    problems = []
    with TraceFile(path, **options) as trace_file:
        for record in trace_file.records():
            if record.result is None:
                problems.append(str(record.error))
                continue
            records += 1
            spans += len(record.result.spans)
    return records, spans, problems


def test_a_file_of_zero_bytes_is_no_records_and_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "zeros.bin"
    path.write_bytes(bytes(MIB))  # was 262,144 "records" of length 0
    assert _read(path) == (0, 0, ["record of length 0: not a length-prefixed OTLP file"])
    with open_store(tmp_path / "data") as store:
        report = import_files(store, [path])
    assert report.records == 0 and report.nothing_read and report.problem_count == 1


def test_utf16_text_is_named_not_decoded_as_records(tmp_path: Path) -> None:
    for name, data in (("bom.json", LINES.decode().encode("utf-16")),
                       ("le.json", LINES.decode().encode("utf-16-le")),
                       ("be.json", LINES.decode().encode("utf-16-be")),
                       ("32.json", LINES.decode().encode("utf-32"))):  # fmt: skip
        path = tmp_path / name
        path.write_bytes(data)
        records, _, problems = _read(path)
        assert records == 0 and len(problems) == 1, (name, problems)
        assert problems[0].startswith("not UTF-8: the file looks UTF-") and "iconv" in problems[0]


def test_a_utf8_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + LINES)
    assert _read(path) == (2, 4, [])


def test_a_gzip_cut_at_its_end_keeps_the_complete_lines_before_the_cut(tmp_path: Path) -> None:
    data = gzip.compress(LINES * 100)
    for cut in (8, len(data) // 2):  # in the trailer, then in the middle of the data
        path = tmp_path / f"cut{cut}.jsonl.gz"
        path.write_bytes(data[:-cut])
        records, spans, problems = _read(path)
        assert records > 0 and spans == 2 * records  # every complete line kept
        assert problems[-1] == "truncated gzip data: the file ends inside a member"
    path = tmp_path / "cut8.jsonl.gz"
    assert _read(path)[0] == 200  # cut in the trailer: every line is complete


def test_every_gzip_member_is_read_and_trailing_bytes_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl.gz"
    path.write_bytes(gzip.compress(LINES) + gzip.compress(LINES))
    assert _read(path) == (4, 8, [])
    path.write_bytes(gzip.compress(LINES) + b"not gzip at all")
    assert _read(path) == (2, 4, ["the data after the last gzip member is not gzip; it was not read"])


_READ_BOMB = """
import sys, time
from janux.tracing.otlp.files import TraceFile
started = time.monotonic()
with TraceFile(sys.argv[1], max_record_bytes=1024 * 1024) as trace_file:
    problems = [r.error for r in trace_file.records()]
peak = next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]
print(int(peak) // 1024, f"{time.monotonic() - started:.1f}", problems)
"""


def test_a_small_zst_that_expands_to_256_mib_is_read_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "bomb.jsonl.zst"
    compressor = zstandard.ZstdCompressor(level=19)
    path.write_bytes(compressor.compress(b'{"resourceSpans": "' + b"x" * (256 * MIB) + b'"}\n'))
    assert path.stat().st_size < 64 * 1024
    out = subprocess.run([sys.executable, "-c", _READ_BOMB, str(path)], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True, timeout=240).stdout  # fmt: skip
    peak_mib, _, problems = out.split(maxsplit=2)
    assert "line longer than 1 MiB (the record size limit); skipped" in problems
    assert int(peak_mib) < 120, out  # was 554 MiB (the whole output pending, copied on every read)


def test_the_decompressed_size_of_a_whole_file_can_be_capped(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(LINES * 10_000))
    records, _, problems = _read(path, max_total_bytes=MIB)
    assert 0 < records < 20_000
    assert len(problems) == 1 and "the decompressed data exceeds the limit of 1 MiB" in problems[0]
