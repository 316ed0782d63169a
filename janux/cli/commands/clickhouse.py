"""`janux clickhouse init`: create (or keep) Janux's derived tables next to the Collector's `otel_traces`.

Idempotent and versioned (`janux.tracing.sources.clickhouse.schema`); `--print` shows the DDL
instead of running it (the same statements `init` runs, back-fills of an upgrade from
`--from-version N` and the version row included), `--cluster NAME` the `ON CLUSTER` /
`Replicated*` / `Distributed` variant.
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
    init.add_argument(
        "--from-version",
        type=int,
        default=0,
        metavar="N",
        help=(
            "with --print/--cluster: the schema version the database is at (0: none yet); the "
            "printed SQL includes that upgrade's one-time back-fills and records the new version"
        ),
    )
    add_clickhouse_arguments(init)
    init.set_defaults(func=_init)


def _init(args: argparse.Namespace) -> int:
    table = table_from_args(args)
    if args.cluster or args.print:
        if not 0 <= args.from_version <= schema.SCHEMA_VERSION:
            raise SystemExit(
                f"janux clickhouse init: --from-version must be 0..{schema.SCHEMA_VERSION}, "
                f"got {args.from_version}"
            )
        # an upgrade's database has the insertion-time column already: materializing it again
        # would stamp every stored span as new and have the deriver derive them all again
        statements = schema.init_statements(
            args.from_version, table=table, cluster=args.cluster, had_column=args.from_version > 0
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
