"""`janux trace TRACE_ID [--json]`: one rebuilt trace, as the Trace page shows it.

Reads any source (`--source`, `--data-dir`, the ClickHouse options) and rebuilds the trace with
the dashboard's own code (`janux.tracing.analysis`), so the two cannot disagree.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from janux.cli.source_options import add_source_arguments, open_from_args
from janux.tracing.sources.protocol import TraceFilter, TraceSource

TRACE_ID_HEX = 32
"""Hex characters of a whole trace id."""
MAX_LISTED = 5
"""Ids named when a prefix matches several."""


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
    parser.add_argument(
        "trace_id", help="the trace id (32 hex characters), or a prefix of it only one id has"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    add_source_arguments(parser)
    parser.set_defaults(func=_run)


def full_trace_id(source: TraceSource, wanted: str, command: str = "trace") -> str | None:
    """The id of the one trace whose id starts with `wanted` (a whole id is taken as given); None,
    with a message naming `janux {command}`, when no id or more than one id starts with it."""
    if len(wanted) >= TRACE_ID_HEX:
        return wanted
    found = source.list_traces(TraceFilter(trace_id=wanted), limit=MAX_LISTED + 1)
    if len(found) == 1:
        return found[0].trace_id
    if not found:
        print(f"janux {command}: no trace id starts with {wanted}")
    else:
        listed = ", ".join(s.trace_id for s in found[:MAX_LISTED])
        more = " and more" if len(found) > MAX_LISTED else ""
        several = f"more than one trace id starts with {wanted} ({listed}{more})"
        print(f"janux {command}: {several}: type more of it")
    return None


def _run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `janux` registers every subcommand at start, and the report
    # pulls in pandas (~80 MiB), which `janux collect` and `janux import` must not carry.
    from janux.tracing.analysis.report import render_tree, trace_report
    from janux.tracing.analysis.trace_links import run_spans
    from janux.tracing.analysis.trace_view import reconstruct

    wanted = str(args.trace_id).strip().lower()
    source = open_from_args(args, "trace")
    trace_id = full_trace_id(source, wanted)
    if trace_id is None:
        return 1
    # A run split across traces joined by span links is read whole (`trace_links`).
    spans = run_spans([trace_id], source.trace_links, source.get_traces)[trace_id]
    if not spans:
        print(f"janux trace: no spans stored for trace {trace_id}")
        return 1
    report = trace_report(reconstruct(spans))
    print(json.dumps(report, indent=2) if args.json else render_tree(report))
    return 0
