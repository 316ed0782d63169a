"""`janux trace TRACE_ID [--json]`: one rebuilt trace, as the Trace page shows it.

Reads any source (`--source`, `--data-dir`, the ClickHouse options) and rebuilds the trace with
the dashboard's own code (`janux.tracing.analysis`), so the two cannot disagree.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from janux.cli.source_options import add_source_arguments, open_from_args


def register(subparsers: Any) -> None:
    """Add the `trace` subcommand."""
    parser = subparsers.add_parser(
        "trace",
        help="print one rebuilt trace: tokens, cost, agents, delegations, checks, tree",
        description=(
            "Rebuild one trace from any source, with the dashboard's code, and print its numbers: "
            "input/output tokens, cost (null when unknown) and its kind, agents, delegations, "
            "transfers, attempts, failed handoffs, errors, how much usage was read, the checks, and "
            "the handoff tree. Exit status 1 when the trace has no spans."
        ),
    )
    parser.add_argument("trace_id", help="the trace id (32 hex characters)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    add_source_arguments(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `janux` registers every subcommand at start, and the report
    # pulls in pandas (~80 MiB), which `janux collect` and `janux import` must not carry.
    from janux.tracing.analysis.report import render_tree, trace_report
    from janux.tracing.analysis.trace_view import reconstruct

    trace_id = str(args.trace_id).strip().lower()
    source = open_from_args(args, "trace")
    spans = source.get_trace(trace_id)
    if not spans:
        print(f"janux trace: no spans stored for trace {trace_id}")
        return 1
    report = trace_report(reconstruct(spans))
    print(json.dumps(report, indent=2) if args.json else render_tree(report))
    return 0
