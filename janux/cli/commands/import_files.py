"""`janux import PATH...`: load OTLP trace files (JSON lines, protobuf, Tempo, Jaeger) into the store."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from janux.tracing.otlp.files import DEFAULT_MAX_RECORD_BYTES
from janux.tracing.receiver.file_import import DEFAULT_BATCH_SPANS, import_files
from janux.tracing.receiver.process import settle_heap
from janux.tracing.sources.store import DATA_DIR_ENV, open_store

_SHOWN_PROBLEMS = 20


def register(subparsers: Any) -> None:
    """Add the `import` subcommand."""
    parser = subparsers.add_parser(
        "import",
        help="import trace files into the embedded store",
        description=(
            "Import trace files into the embedded store. Reads OTLP/JSON lines (the Collector file "
            "exporter, opentelemetry-exporter-otlp-json-file), a single OTLP/JSON document, OTLP "
            "protobuf files (one message or the file exporter's length-prefixed records), Tempo "
            "responses (batches / trace wrappers) and Jaeger v3 responses (result wrapper); any of "
            "them zstd- or gzip-compressed. Ids may be hex or base64, enums numbers or names. Bad "
            "lines are skipped, counted and reported with file and line; the exit status is non-zero "
            "only when nothing could be read."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files to import")
    parser.add_argument(
        "--data-dir", default=None, help=f"store directory (default: ${DATA_DIR_ENV} or ~/.janux/data)"
    )
    parser.add_argument(
        "--batch-spans",
        type=int,
        default=DEFAULT_BATCH_SPANS,
        help="spans per store commit (default: %(default)s)",
    )
    parser.add_argument(
        "--max-record-mb",
        type=int,
        default=DEFAULT_MAX_RECORD_BYTES // (1024 * 1024),
        help="largest line, record or whole JSON document read into memory, MiB (default: %(default)s)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    settle_heap()  # a batch of decoded spans is thousands of objects: collect less often
    with open_store(args.data_dir) as store:
        report = import_files(
            store,
            args.paths,
            batch_spans=max(1, args.batch_spans),
            max_record_bytes=max(1, args.max_record_mb) * 1024 * 1024,
        )
    print(
        f"janux import: {report.files} file(s), {report.records} record(s), "
        f"{report.spans_read} span(s) read, "
        f"{report.stored} stored, {report.duplicates} duplicate(s), {report.rejected} rejected"
    )
    for problem in report.problems[:_SHOWN_PROBLEMS]:
        print(f"  skipped: {problem}", file=sys.stderr)
    if report.problem_count > _SHOWN_PROBLEMS:
        print(f"  ... and {report.problem_count - _SHOWN_PROBLEMS} more problem(s)", file=sys.stderr)
    if report.nothing_read:
        print("janux import: nothing could be read (not one valid span)", file=sys.stderr)
        return 1
    return 0
