"""Which trace source the dashboard reads: configuration from env/arguments, and opening it.

`JANUX_SOURCE` = `store` (default: the embedded store in `JANUX_DATA_DIR`, else ~/.janux/data)
| `clickhouse` (an OpenTelemetry Collector `otel_traces` table, `JANUX_CLICKHOUSE_*`)
| `memory-file:<path>` (a trace file loaded into memory). Script arguments `--data-dir` and
`--source` (as passed by `janux ui`) take precedence. Optional backends are imported lazily so
the dashboard runs with only what is installed.
"""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from janux.errors import JanuxError
from janux.tracing.sources.protocol import TraceSource

SOURCE_ENV = "JANUX_SOURCE"
"""Environment variable choosing the source (`store`, `clickhouse`, `memory-file:<path>`)."""
DATA_DIR_ENV = "JANUX_DATA_DIR"
"""Environment variable naming the embedded store's data directory."""
MEMORY_FILE_PREFIX = "memory-file:"
"""`JANUX_SOURCE` prefix of a trace file loaded into memory."""
CLICKHOUSE_ENV_PREFIX = "JANUX_CLICKHOUSE_"
"""Prefix of the ClickHouse settings (`HOST`, `PORT`, `DATABASE`, `TABLE`, `USER`, `PASSWORD`, `CHDB`)."""

SourceKind = Literal["store", "clickhouse", "memory-file"]
"""The configurable source kinds (uploads are chosen in the sidebar, not configured)."""


class SourceUnavailable(JanuxError, RuntimeError):
    """The configured source cannot be opened; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class ClickHouseSettings:
    """Where the Collector's `otel_traces` table lives."""

    host: str = "127.0.0.1"
    port: int = 8123
    database: str = "otel"
    table: str = "otel_traces"
    user: str = "default"
    password: str = ""
    chdb: str = ""
    """A local chdb directory to read instead of a server (`JANUX_CLICKHOUSE_CHDB`; chdb is a
    development dependency: tests, benches, trying the scale path on one machine)."""


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """A chosen source; `key()` identifies it for caches (without secrets)."""

    kind: SourceKind = "store"
    data_dir: str = ""
    """Embedded store directory ("" = the default)."""
    path: str = ""
    """Trace file of a `memory-file` source."""
    clickhouse: ClickHouseSettings = ClickHouseSettings()
    """ClickHouse settings of a `clickhouse` source."""

    def key(self) -> str:
        """Cache key of the source (no password)."""
        if self.kind == "store":
            return f"store:{self.resolved_data_dir()}"
        if self.kind == "memory-file":
            return f"{MEMORY_FILE_PREFIX}{self.path}"
        ch = self.clickhouse
        if ch.chdb:
            return f"clickhouse:chdb:{ch.chdb}/{ch.table}"
        return f"clickhouse:{ch.user}@{ch.host}:{ch.port}/{ch.database}.{ch.table}"

    def resolved_data_dir(self) -> Path:
        """The data directory the embedded store uses."""
        if self.data_dir:
            return Path(self.data_dir).expanduser()
        return Path.home() / ".janux" / "data"


def _clickhouse_from_env(env: Mapping[str, str]) -> ClickHouseSettings:
    base = ClickHouseSettings()

    def get(name: str, default: str) -> str:
        return env.get(CLICKHOUSE_ENV_PREFIX + name, default)

    port_text = get("PORT", str(base.port))
    try:
        port = int(port_text)
    except ValueError as exc:
        raise SourceUnavailable(f"{CLICKHOUSE_ENV_PREFIX}PORT: not a port number: {port_text!r}") from exc
    return ClickHouseSettings(
        host=get("HOST", base.host),
        port=port,
        database=get("DATABASE", base.database),
        table=get("TABLE", base.table),
        user=get("USER", base.user),
        password=get("PASSWORD", base.password),
        chdb=get("CHDB", base.chdb),
    )


def parse_source(text: str, base: SourceConfig) -> SourceConfig:
    """Apply a `JANUX_SOURCE` / `--source` value to `base`."""
    text = text.strip()
    if text in ("", "store"):
        return replace(base, kind="store")
    if text == "clickhouse":
        return replace(base, kind="clickhouse")
    if text.startswith(MEMORY_FILE_PREFIX) and len(text) > len(MEMORY_FILE_PREFIX):
        return replace(base, kind="memory-file", path=text[len(MEMORY_FILE_PREFIX) :])
    raise SourceUnavailable(
        f"{SOURCE_ENV}: unknown source {text!r} (use store, clickhouse or {MEMORY_FILE_PREFIX}<path>)"
    )


def config_from_env(env: Mapping[str, str] | None = None, argv: Sequence[str] | None = None) -> SourceConfig:
    """The configured source: script arguments first, then the environment, then the defaults."""
    env = os.environ if env is None else env
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--source", default=None)
    args, _ = parser.parse_known_args(list(argv or []))
    base = SourceConfig(
        data_dir=args.data_dir or env.get(DATA_DIR_ENV, ""),
        clickhouse=_clickhouse_from_env(env),
    )
    return parse_source(args.source or env.get(SOURCE_ENV, "store"), base)


def open_source(cfg: SourceConfig) -> TraceSource:
    """Open the configured source, or raise `SourceUnavailable` saying why."""
    if cfg.kind == "store":
        return _open_store(cfg.resolved_data_dir())
    if cfg.kind == "memory-file":
        from janux.tracing.sources.file_loader import source_from_files

        if not Path(cfg.path).is_file():
            raise SourceUnavailable(f"{SOURCE_ENV}: no such trace file: {cfg.path}")
        return source_from_files([cfg.path])
    return _open_clickhouse(cfg.clickhouse)


def _open_store(data_dir: Path) -> TraceSource:
    try:
        from janux.tracing.sources.store import open_store
    except ImportError as exc:  # the store ships with janux; this guards partial installs
        raise SourceUnavailable(f"the embedded store is not available: {exc}") from exc
    try:
        store: Any = open_store(data_dir, map_process=True)
    except Exception as exc:
        raise SourceUnavailable(f"cannot open the embedded store in {data_dir}: {exc}") from exc
    return store  # type: ignore[no-any-return]


def _open_clickhouse(settings: ClickHouseSettings) -> TraceSource:
    if settings.chdb:
        return _open_chdb(settings)
    try:
        from janux.tracing.sources.clickhouse.source import ClickHouseSource

        clickhouse_connect: Any = importlib.import_module("clickhouse_connect")
    except ImportError as exc:
        raise SourceUnavailable(
            "the ClickHouse source needs clickhouse-connect (pip install 'janux[clickhouse]'): " + str(exc)
        ) from exc
    try:
        client = clickhouse_connect.get_client(
            host=settings.host,
            port=settings.port,
            username=settings.user,
            password=settings.password,
            database=settings.database,
        )
        return ClickHouseSource(client, table=settings.table)
    except Exception as exc:
        raise SourceUnavailable(
            f"cannot open ClickHouse table {settings.database}.{settings.table} at "
            f"{settings.host}:{settings.port}: {exc}"
        ) from exc


def _open_chdb(settings: ClickHouseSettings) -> TraceSource:
    try:
        from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
        from janux.tracing.sources.clickhouse.source import ClickHouseSource

        return ClickHouseSource(ChdbClient(settings.chdb), table=settings.table)
    except Exception as exc:  # chdb not installed, or the directory cannot be opened
        raise SourceUnavailable(f"cannot open chdb directory {settings.chdb}: {exc}") from exc
