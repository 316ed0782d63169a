"""`janux traces [--json] [filters]`: the trace list, with the Traces page's columns (`--json`: the
API of docs/json.md, one object per trace).

Reads any source (`--source`, `--data-dir`, the ClickHouse options) and builds the rows with the
page's own code (`janux.tracing.analysis.trace_list`): traces without a bill are rebuilt for their
badge and estimate exactly as the page rebuilds them.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from janux.cli.source_options import (
    add_filter_arguments,
    add_source_arguments,
    filter_from_args,
    open_from_args,
)

_SHOWN = (
    "trace", "started (UTC)", "agents", "conversation", "status", "failure", "cost USD", "estimated USD",
    "checks", "delegations", "transfers", "attempts", "failed handoffs", "input tokens", "output tokens",
    "usage read",
)  # fmt: skip


def register(subparsers: Any) -> None:
    """Add the `traces` subcommand."""
    parser = subparsers.add_parser(
        "traces",
        help="list traces with the Traces page's columns",
        description="List stored traces, newest first, with the Traces page's columns and filters.",
    )
    parser.add_argument("--json", action="store_true", help="print JSON lines (one object per trace)")
    parser.add_argument("--limit", type=int, default=50, help="rows (default: %(default)s)")
    parser.add_argument("--offset", type=int, default=0, help="rows to skip (default: %(default)s)")
    add_filter_arguments(parser)
    add_source_arguments(parser)
    parser.set_defaults(func=_run)


def _text(column: str, value: Any) -> str:
    from janux.tracing.analysis import money_cells as cells
    from janux.tracing.analysis.report import json_cell

    if cells.is_money(column):
        return cells.money_text(value, estimated=cells.ESTIMATED_MARK in column)
    if cells.is_tokens(column) and value == cells.UNKNOWN:
        return cells.token_text(value)
    value = json_cell(value)
    return cells.MISSING if value is None else str(value)


def _run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `janux` registers every subcommand at start, and these pull
    # in pandas (~80 MiB), which `janux collect` and `janux import` must not carry.
    from janux.tracing.analysis.api_json import trace_row
    from janux.tracing.analysis.trace_list import needs_rebuild, traces_frame
    from janux.tracing.analysis.trace_view import reconstruct

    source = open_from_args(args, "traces")
    flt = filter_from_args(args)
    summaries = source.list_traces(flt, limit=max(0, args.limit), offset=max(0, args.offset))
    rebuild = [s.trace_id for s in summaries if needs_rebuild(s)]
    spans = source.get_traces(rebuild) if rebuild else {}
    views = {trace_id: reconstruct(spans.get(trace_id, [])) for trace_id in rebuild}
    if args.json:  # the API (docs/json.md): raw values under stable keys, not the page's labels
        for summary in summaries:
            print(json.dumps(trace_row(summary, views.get(summary.trace_id))))
        return 0
    if not summaries:
        print("no traces match")
        return 0
    frame = traces_frame(summaries, views, lambda trace_id: trace_id)
    table = [list(_SHOWN)] + [[_text(c, row[c]) for c in _SHOWN] for row in frame.to_dict("records")]
    widths = [max(len(line[i]) for line in table) for i in range(len(_SHOWN))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())
    return 0
