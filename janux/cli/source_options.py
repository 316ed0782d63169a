"""The trace-source options shared by the commands that read traces (`janux traces`, `janux trace`,
`janux export`), and the trace-list filters `janux traces` and `janux export` share.

They open a source exactly as the dashboard does (`janux.tracing.sources.source_config`): `--source` and
`--data-dir` first, then `JANUX_SOURCE`, `JANUX_DATA_DIR` and `JANUX_CLICKHOUSE_*`; `--chdb DIR` reads a
local chdb directory instead (the scale path tried on one machine).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from janux.tracing.sources.protocol import TraceFilter, TraceSource
from janux.tracing.sources.source_config import (
    DATA_DIR_ENV,
    SOURCE_ENV,
    SourceUnavailable,
    config_from_env,
    open_source,
)

_CLICKHOUSE = ("host", "port", "database", "table", "user", "password")


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """`--source`, `--data-dir` and the `--clickhouse-*` options."""
    parser.add_argument(
        "--source", default=None,
        help=f"store (default) | clickhouse | memory-file:<trace file> (default: ${SOURCE_ENV} or store)",
    )  # fmt: skip
    parser.add_argument(
        "--data-dir", default=None, help=f"store directory (default: ${DATA_DIR_ENV} or ~/.janux/data)"
    )
    parser.add_argument(
        "--chdb", default=None, metavar="DIR",
        help="read a local chdb directory (ClickHouse in-process, e.g. one `janux derive --chdb` fills)",
    )  # fmt: skip
    for name in _CLICKHOUSE:
        parser.add_argument(
            f"--clickhouse-{name}", default=None, type=int if name == "port" else str,
            help=f"ClickHouse {name} (default: $JANUX_CLICKHOUSE_{name.upper()})",
        )  # fmt: skip


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    """The Traces page's filters: service, root agent, conversation, status, failed handoffs, cost, id."""
    parser.add_argument("--service", default=None, help="only this service.name")
    parser.add_argument("--root-agent", default=None, help="only traces whose root agent is this")
    parser.add_argument("--conversation", default=None, help="only this gen_ai.conversation.id")
    parser.add_argument("--status", choices=("ok", "error"), default=None, help="with / without ERROR spans")
    parser.add_argument("--failed-handoffs", action="store_true", help="only traces with failed handoffs")
    parser.add_argument("--min-cost", type=float, default=None, help="only traces billed at least this (USD)")
    parser.add_argument("--trace-id", default=None, help="only trace ids starting with this")


def filter_from_args(args: argparse.Namespace) -> TraceFilter:
    """The `TraceFilter` the options of `add_filter_arguments` ask for."""
    return TraceFilter(
        service=args.service, root_agent=args.root_agent, conversation_id=args.conversation,
        status=args.status, has_failed_handoffs=args.failed_handoffs, min_cost=args.min_cost,
        trace_id=args.trace_id,
    )  # fmt: skip


def open_from_args(args: argparse.Namespace, command: str) -> TraceSource:
    """The source the options name; exits with a clear message when it cannot be opened."""
    argv = [part for flag, value in (("--source", args.source), ("--data-dir", args.data_dir)) if value
            for part in (flag, value)]  # fmt: skip
    if getattr(args, "chdb", None):
        return _open_chdb(args.chdb, args.clickhouse_table or "otel_traces", command)
    try:
        cfg = config_from_env(argv=argv)
        overrides = {name: getattr(args, f"clickhouse_{name}") for name in _CLICKHOUSE}
        settings = replace(cfg.clickhouse, **{k: v for k, v in overrides.items() if v is not None})
        return open_source(replace(cfg, clickhouse=settings))
    except SourceUnavailable as exc:
        raise SystemExit(f"janux {command}: {exc}") from exc


def _open_chdb(path: str, table: str, command: str) -> TraceSource:
    """A ClickHouse source over a local chdb directory (chdb is a development dependency)."""
    try:
        from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
        from janux.tracing.sources.clickhouse.source import ClickHouseSource

        return ClickHouseSource(ChdbClient(path), table=table)
    except Exception as exc:  # chdb missing, or the directory cannot be opened: say which
        raise SystemExit(f"janux {command}: cannot open chdb directory {path}: {exc}") from exc
