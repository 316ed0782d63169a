"""`janux derive`: the deriver service of the scale path (see `janux.tracing.sources.clickhouse.deriver`).

Runs `derive_pending` every `--interval` seconds (`--once`: what is pending, then exit). A failed
run (ClickHouse unreachable, a restart) is logged and retried: nothing is lost, the watermark moves
only after a run's rows are written. `--health-file` is touched after every successful run, for a
container healthcheck.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

from janux.cli.clickhouse_client import add_clickhouse_arguments, client_from_args, table_from_args
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.deriver import (
    BATCH_SPANS,
    QUIET_SECONDS,
    DeriveStats,
    Shard,
    derive_pending,
    parse_shard,
)

logger = logging.getLogger("janux.derive")


def register(subparsers: Any) -> None:
    """Add the `derive` subcommand."""
    parser = subparsers.add_parser(
        "derive",
        help="derive trace facts from ClickHouse otel_traces into Janux's tables",
        description=(
            "Read otel_traces incrementally and write each trace's facts (summary, agent map rows, "
            "usage rows, failed handoffs) into Janux's tables, once the trace has been quiet for "
            "--quiet-seconds. Several derivers can run side by side with --shard i/n."
        ),
    )
    parser.add_argument("--once", action="store_true", help="derive what is pending, then exit")
    parser.add_argument(
        "--shard", default="0/1", help="this deriver's part of the traces, i/n (default: 0/1)"
    )
    parser.add_argument(
        "--quiet-seconds", type=float, default=QUIET_SECONDS,
        help="derive a trace once no span arrived for this long (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--interval", type=float, default=5.0, help="seconds between runs (default: %(default)s)"
    )
    parser.add_argument(
        "--batch-spans", type=int, default=BATCH_SPANS,
        help="spans read and written per batch (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument("--init", action="store_true", help="run `janux clickhouse init` first (idempotent)")
    parser.add_argument("--health-file", default=None, help="touch this file after every successful run")
    add_clickhouse_arguments(parser)
    parser.set_defaults(func=_run)


def _report(stats: DeriveStats) -> str:
    return (
        f"derived {stats.traces} trace(s), {stats.spans} span(s) in {stats.seconds:.2f} s; "
        f"{stats.held} still receiving spans; watermark {stats.watermark_ms}"
    )


def _init_when_ready(client: Any, table: str, interval: float) -> None:
    """`janux clickhouse init`, retried until it succeeds: next to a Collector that has not created
    `otel_traces` yet (it does at its first start), the deriver waits for it instead of exiting."""
    while True:
        try:
            schema.init(client, table)
            return
        except Exception as exc:
            logger.warning("janux clickhouse init not possible yet (%s); retrying in %.1f s", exc, interval)
            time.sleep(interval)


def _run(args: argparse.Namespace) -> int:
    try:
        shard = parse_shard(args.shard)
    except ValueError as exc:
        raise SystemExit(f"janux derive: {exc}") from exc
    if args.quiet_seconds < 0 or args.interval <= 0:
        raise SystemExit("janux derive: --quiet-seconds must be >= 0 and --interval > 0")
    client = client_from_args(args, "derive")
    try:
        return _serve(client, args, shard)
    finally:
        client.close()


def _serve(client: Any, args: argparse.Namespace, shard: Shard) -> int:
    """Derive every `--interval` seconds (once with `--once`); a failed run is logged and retried."""
    table = table_from_args(args)
    if args.init:
        _init_when_ready(client, table, args.interval)
    if schema.applied_version(client) < schema.SCHEMA_VERSION:
        raise SystemExit(
            f"janux derive: Janux's tables are missing or older than schema {schema.SCHEMA_VERSION}: "
            "run `janux clickhouse init` first"
        )
    while True:
        try:
            stats = derive_pending(
                client, table, quiet_s=args.quiet_seconds, shard=shard, batch_spans=args.batch_spans
            )
        except Exception:
            if args.once:
                raise
            logger.exception("derive run failed; retrying in %.1f s", args.interval)
        else:
            logger.info("%s", _report(stats))
            if args.health_file:
                Path(args.health_file).touch()
            if args.once:
                print(f"janux derive: {_report(stats)}")
                return 0
        time.sleep(args.interval)
