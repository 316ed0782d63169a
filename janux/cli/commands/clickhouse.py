"""`janux clickhouse init`: create (or keep) Janux's derived tables next to the Collector's `otel_traces`.

Idempotent and versioned (`janux.tracing.sources.clickhouse.schema`); `--print` shows the DDL
instead of running it, `--cluster NAME` the `ON CLUSTER` / `Replicated*` / `Distributed` variant.
"""

from __future__ import annotations

import argparse
from typing import Any

from janux.cli.clickhouse_client import add_clickhouse_arguments, client_from_args, table_from_args
from janux.tracing.sources.clickhouse import schema


def register(subparsers: Any) -> None:
    """Add the `clickhouse` subcommand (and its `init`)."""
    parser = subparsers.add_parser(
        "clickhouse",
        help="manage Janux's tables in ClickHouse (the scale path)",
        description="Manage the tables Janux derives trace facts into, next to the Collector's otel_traces.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    init = actions.add_parser(
        "init",
        help="create Janux's derived tables (idempotent)",
        description=(
            "Create Janux's derived tables and the insertion-time column of otel_traces the deriver "
            "reads from; safe to run again (every statement is IF NOT EXISTS)."
        ),
    )
    init.add_argument("--print", action="store_true", help="print the DDL instead of running it")
    init.add_argument(
        "--cluster", default=None, help="print the DDL for this cluster (ON CLUSTER, Replicated)"
    )
    add_clickhouse_arguments(init)
    init.set_defaults(func=_init)


def _init(args: argparse.Namespace) -> int:
    table = table_from_args(args)
    if args.cluster or args.print:
        statements = (
            schema.cluster_ddl(args.cluster, table=table) if args.cluster else schema.ddl(table=table)
        )
        print(";\n\n".join(statements) + ";")
        return 0
    client = client_from_args(args, "clickhouse init")
    try:
        version = schema.init(client, table)
    except ValueError as exc:
        raise SystemExit(f"janux clickhouse init: {exc}") from exc
    finally:
        client.close()
    print(f"janux clickhouse init: schema version {version} ready next to {table}")
    return 0
