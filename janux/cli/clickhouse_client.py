"""The ClickHouse connection of `janux clickhouse init` and `janux derive`.

The same `--clickhouse-*` options and `JANUX_CLICKHOUSE_*` variables as the commands that read
traces (`janux.cli.source_options`), or `--chdb DIR`: a local chdb directory (the ClickHouse engine
in-process, a development dependency) for tests, benches and trying the scale path on one machine.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import replace
from typing import Any

from janux.tracing.sources.source_config import ClickHouseSettings, SourceUnavailable, config_from_env

_OPTIONS = ("host", "port", "database", "table", "user", "password")


def add_clickhouse_arguments(parser: argparse.ArgumentParser) -> None:
    """`--chdb` and the `--clickhouse-*` options."""
    parser.add_argument(
        "--chdb", default=None, metavar="DIR", help="use a local chdb directory instead of a server"
    )
    for name in _OPTIONS:
        parser.add_argument(
            f"--clickhouse-{name}", default=None, type=int if name == "port" else str,
            help=f"ClickHouse {name} (default: $JANUX_CLICKHOUSE_{name.upper()})",
        )  # fmt: skip


def settings_from_args(args: argparse.Namespace) -> ClickHouseSettings:
    """The ClickHouse settings: options first, then `JANUX_CLICKHOUSE_*`, then the defaults."""
    base = config_from_env(argv=[]).clickhouse
    overrides = {name: getattr(args, f"clickhouse_{name}") for name in _OPTIONS}
    return replace(base, **{k: v for k, v in overrides.items() if v is not None})


def client_from_args(args: argparse.Namespace, command: str) -> Any:
    """A client (`clickhouse_connect`'s, or a `ChdbClient` for `--chdb`); exits with a clear message
    when it cannot connect."""
    try:
        if args.chdb:
            from janux.tracing.sources.clickhouse.chdb_client import ChdbClient

            return ChdbClient(args.chdb)
        settings = settings_from_args(args)
        clickhouse_connect: Any = importlib.import_module("clickhouse_connect")
        return clickhouse_connect.get_client(
            host=settings.host, port=settings.port, username=settings.user, password=settings.password,
            database=settings.database,
        )  # fmt: skip
    except (ImportError, SourceUnavailable) as exc:
        raise SystemExit(f"janux {command}: {exc} (pip install 'janux[clickhouse]' for a server)") from exc
    except Exception as exc:  # connection refused, authentication, unknown database: say which
        raise SystemExit(f"janux {command}: cannot connect to ClickHouse: {exc}") from exc


def table_from_args(args: argparse.Namespace) -> str:
    """The Collector's traces table (`--clickhouse-table`, `JANUX_CLICKHOUSE_TABLE`, `otel_traces`)."""
    return settings_from_args(args).table
