"""`janux check`: evaluate alert rules over a range of traces; exit 1 when one is crossed.

Reads any source through the dashboard's own code (`--data-dir`, `--source store|clickhouse|
memory-file:<path>`, the `JANUX_CLICKHOUSE_*` settings or the `--clickhouse-*` options), so CI
or cron sees the numbers the agent map shows. Exit status: 0 no rule crossed, 1 at least one
crossed (the table says which), 2 a usage or configuration error (the message names the field).
Rules: docs/alerts.md.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from janux.errors import JanuxError
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.source_config import SourceConfig, SourceUnavailable, config_from_env, open_source

if TYPE_CHECKING:
    from janux.tracing.alerts import Finding, Report

EXIT_OK, EXIT_CROSSED, EXIT_USAGE = 0, 1, 2
"""Exit statuses: nothing crossed, a rule crossed, a usage or configuration error."""
_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")


class UsageError(JanuxError, ValueError):
    """A command-line value that cannot be used; the message names the option."""


def parse_since(text: str | None, now_ns: int) -> int | None:
    """`--since 24h` as a start bound in Unix ns (None: all time); raises `UsageError`."""
    if text is None:
        return None
    match = _DURATION.match(text)
    if match is None:
        raise UsageError(f"--since: expected a duration like 30m, 24h or 7d, got {text!r}")
    return now_ns - int(float(match.group(1)) * _UNITS[match.group(2)] * 1e9)


def register(subparsers: Any) -> None:
    """Add the `check` subcommand."""
    parser = subparsers.add_parser(
        "check",
        help="evaluate alert rules over a range; exit 1 when a rule is crossed (for CI or cron)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--rules", required=True, type=Path, help="the rules file (YAML, see docs/alerts.md)")
    parser.add_argument(
        "--since", default=None, help="only traces that started this long ago or later (30m, 24h, 7d)"
    )
    parser.add_argument("--service", default=None, help="only traces of this service.name")
    parser.add_argument("--root-agent", default=None, help="only traces whose root agent is this")
    parser.add_argument(
        "--data-dir",
        default=None,
        help="embedded store directory (default: $JANUX_DATA_DIR or ~/.janux/data)",
    )
    parser.add_argument("--source", default=None, help="store (default), clickhouse, or memory-file:<path>")
    for name in ("host", "port", "database", "table", "user"):
        parser.add_argument(
            f"--clickhouse-{name}", default=None, help=f"ClickHouse {name} (with --source clickhouse)"
        )
    parser.set_defaults(func=_run)


def source_config(args: argparse.Namespace) -> SourceConfig:
    """The source the options name (script arguments, then the environment, as the dashboard)."""
    argv = [
        *(["--data-dir", args.data_dir] if args.data_dir else []),
        *(["--source", args.source] if args.source else []),
    ]
    cfg = config_from_env(argv=argv)
    settings = cfg.clickhouse
    overrides: dict[str, Any] = {}
    for name in ("host", "database", "table", "user"):
        value = getattr(args, f"clickhouse_{name}")
        if value is not None:
            overrides[name] = value
    if args.clickhouse_port is not None:
        try:
            overrides["port"] = int(args.clickhouse_port)
        except ValueError as exc:
            raise UsageError(f"--clickhouse-port: not a port number: {args.clickhouse_port!r}") from exc
    return replace(cfg, clickhouse=replace(settings, **overrides)) if overrides else cfg


def _value(finding: Finding) -> str:
    if finding.value is None:
        return "—"
    if finding.check.endswith("_rate"):
        return f"{finding.value:.1%}"
    if finding.check == "cost_per_turn_p95":
        return f"${finding.value:.6f}"
    return f"{finding.value:g}"


def _limit(finding: Finding) -> str:
    if finding.check.endswith("_rate"):
        return f"{finding.limit:.1%}"
    if finding.check == "cost_per_turn_p95":
        return f"${finding.limit:.6f}"
    return f"{finding.limit:g}"


def format_table(report: Report) -> str:
    """The findings as a plain-text table (crossed rows marked)."""
    header = ("", "rule", "check", "subject", "value", "limit", "counts")
    rows = [
        (
            "CROSSED" if f.crossed else ("skipped" if f.skipped else "ok"),
            f.rule,
            f.check,
            f.subject,
            _value(f),
            _limit(f),
            f.note,
        )
        for f in report.findings
    ]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    return "\n".join(lines)


def check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the check; returns the exit status."""
    # Imported here, not at the top: `janux` registers every subcommand at start, and the rules
    # pull in pydantic and yaml, which `janux collect` and `janux import` must not carry.
    from janux.tracing.alerts import RulesError, evaluate, load_rules

    try:
        rules = load_rules(args.rules)
        flt = TraceFilter(
            start_ns=parse_since(args.since, time.time_ns()), service=args.service, root_agent=args.root_agent
        )
        source = open_source(source_config(args))
    except (RulesError, UsageError, SourceUnavailable) as exc:
        print(f"janux check: {exc}", file=err)
        return EXIT_USAGE
    try:
        report = evaluate(rules, source, flt)
    finally:
        close = getattr(source, "close", None)
        if callable(close):
            close()
    if not report.findings:
        print("No rule had anything to judge in this range.", file=out)
        return EXIT_OK
    print(format_table(report), file=out)
    crossed = report.crossed
    skipped = sum(1 for f in report.findings if f.skipped)
    tail = f" ({skipped} skipped: nothing to judge)" if skipped else ""
    print(f"\n{len(crossed)} of {len(report.findings)} checks crossed{tail}.", file=out)
    return EXIT_CROSSED if crossed else EXIT_OK


def _run(args: argparse.Namespace) -> int:
    return check(args, sys.stdout, sys.stderr)
