"""`janux ui`: the dashboard (Streamlit) on the embedded store, bound to 127.0.0.1 by default.

`janux serve` reuses `ui_command` + `ui_env` (or `launch_ui`) to start the same app next to the
receiver. The app reads its source from `--data-dir`/`--source` script arguments and the
`JANUX_DATA_DIR`/`JANUX_SOURCE` environment (see `janux.dashboard.sources`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from janux.dashboard.sources import DATA_DIR_ENV, SOURCE_ENV, SourceConfig, SourceUnavailable, parse_source

DEFAULT_HOST = "127.0.0.1"
"""Address the dashboard binds to unless told otherwise (local only)."""
DEFAULT_PORT = 8501
"""Streamlit's usual port."""


def app_path() -> Path:
    """The packaged Streamlit entry script (links resolved, so Streamlit watches the real file)."""
    spec = importlib.util.find_spec("janux.dashboard.streamlit_app")
    if spec is None or spec.origin is None:
        raise SystemExit("janux ui: the dashboard package is not installed (dashboard/streamlit_app.py)")
    return Path(spec.origin).resolve()


def free_port(host: str = DEFAULT_HOST) -> int:
    """A TCP port that is free on `host` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def ui_command(
    data_dir: str | Path | None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    source: str | None = None,
) -> list[str]:
    """argv that runs the dashboard headless (no usage stats, no file watcher) on host:port."""
    command = [
        sys.executable, "-m", "streamlit", "run", str(app_path()),
        "--server.headless", "true",
        "--server.address", host,
        "--server.port", str(port),
        "--server.fileWatcherType", "none",
        "--server.runOnSave", "false",
        "--browser.gatherUsageStats", "false",
        # "minimal" drops Streamlit's developer menu (Deploy, rerun settings) from the toolbar.
        "--client.toolbarMode", "minimal",
        "--",
    ]  # fmt: skip
    if data_dir is not None:
        command += ["--data-dir", str(Path(data_dir).expanduser())]
    if source:
        command += ["--source", source]
    return command


def ui_env(
    data_dir: str | Path | None,
    source: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Environment for the dashboard process: `base` (default os.environ) plus the source settings."""
    env = dict(os.environ if base is None else base)
    env["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] = "false"
    if data_dir is not None:
        env[DATA_DIR_ENV] = str(Path(data_dir).expanduser())
    if source:
        env[SOURCE_ENV] = source
    env.update(extra_env or {})
    return env


def launch_ui(
    data_dir: str | Path | None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    source: str | None = None,
    extra_env: Mapping[str, str] | None = None,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start the dashboard as a child process (the caller stops it with `terminate()`)."""
    return subprocess.Popen(
        ui_command(data_dir, host, port, source), env=ui_env(data_dir, source, extra_env), **popen
    )


def register(subparsers: Any) -> None:
    """Add the `ui` subcommand."""
    parser = subparsers.add_parser(
        "ui",
        help="open the dashboard (Streamlit) on the embedded store",
        description=(
            "Start the Janux dashboard: handoff trees, attempts, per-delegation cost and failed "
            "handoffs, rebuilt from stored traces. Binds to 127.0.0.1 unless --host says otherwise."
        ),
    )
    parser.add_argument(
        "--data-dir", default=None, help=f"store directory (default: ${DATA_DIR_ENV} or ~/.janux/data)"
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default: %(default)s)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="port, 0 picks a free one (default: %(default)s)"
    )
    parser.add_argument(
        "--source",
        default=None,
        help="store (default) | clickhouse (JANUX_CLICKHOUSE_* settings) | memory-file:<trace file>",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.source:
        try:
            parse_source(args.source, SourceConfig())
        except SourceUnavailable as exc:
            raise SystemExit(f"janux ui: --source: {exc}") from exc
    if not 0 <= args.port <= 65535:
        raise SystemExit(f"janux ui: --port: must be 0..65535, got {args.port}")
    port = args.port or free_port(args.host)
    print(f"Janux dashboard: http://{args.host}:{port}", flush=True)
    child = launch_ui(args.data_dir, args.host, port, args.source)
    # SIGTERM to `janux ui` stops the dashboard too (no orphaned Streamlit server).
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    try:
        return child.wait()
    except KeyboardInterrupt:
        stop_child(child)
        return 130


def stop_child(child: subprocess.Popen[bytes]) -> None:
    """Terminate a child process, killing it if it has not exited within 10 s."""
    if child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(timeout=10)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
