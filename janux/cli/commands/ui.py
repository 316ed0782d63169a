"""`janux ui`: the dashboard (Streamlit) on the embedded store, bound to 127.0.0.1 by default.

`janux serve` reuses `ui_command` + `ui_env` (or `launch_ui`) to start the same app next to the
receiver. The app reads its source from `--data-dir`/`--source` script arguments and the
`JANUX_DATA_DIR`/`JANUX_SOURCE` environment (see `janux.tracing.sources.source_config`), and its access
settings (token, source editing, upload limits) from the environment `DashboardAccess.env()` gives.
A dashboard on any address but loopback starts only with a token (`exposure_problem`).
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

from janux.dashboard.access import (
    DEFAULT_MAX_UPLOAD_DECOMPRESSED_MB,
    DEFAULT_MAX_UPLOAD_MB,
    DEFAULT_UPLOAD_SESSION_MB,
    DEFAULT_UPLOAD_TOTAL_MB,
    UI_TOKEN_ENV,
    DashboardAccess,
    exposure_problem,
    new_token,
    token_problem,
)
from janux.tracing.sources.source_config import (
    DATA_DIR_ENV,
    SOURCE_ENV,
    SourceConfig,
    SourceUnavailable,
    parse_source,
)

DEFAULT_HOST = "127.0.0.1"
"""Address the dashboard binds to unless told otherwise (local only)."""
DEFAULT_PORT = 8501
"""Streamlit's usual port."""


def app_path() -> Path:
    """The packaged entry script `streamlit run` is given: the Streamlit app behind the sign-in
    gate (`dashboard/server_app.py`; links resolved, so Streamlit watches the real file)."""
    spec = importlib.util.find_spec("janux.dashboard.server_app")
    if spec is None or spec.origin is None:
        raise SystemExit("janux ui: the dashboard package is not installed (dashboard/server_app.py)")
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
    max_upload_mb: int = DEFAULT_MAX_UPLOAD_MB,
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
        "--server.maxUploadSize", str(max_upload_mb),
        # The sign-in gate knows a browser by its anti-forgery cookie (janux.dashboard.sign_ins).
        "--server.enableXsrfProtection", "true",
        # No way to drive the app but a browser's page (Streamlit's agent API stays off).
        "--server.enableAgentApi", "false",
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
    access: DashboardAccess | None = None,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start the dashboard as a child process (the caller stops it with `terminate()`).

    Raises `SystemExit` when `host` is not loopback and `access` has no token."""
    access = access or DashboardAccess()
    problem = exposure_problem(host, access)
    if problem is not None:
        raise SystemExit(f"janux: refusing to start: {problem}")
    env = ui_env(data_dir, source, {**access.env(), **(extra_env or {})})
    return subprocess.Popen(ui_command(data_dir, host, port, source, access.max_upload_mb), env=env, **popen)


def add_dashboard_arguments(parser: argparse.ArgumentParser) -> None:
    """The dashboard's access flags (shared by `janux ui` and `janux serve`)."""
    group = parser.add_argument_group("dashboard access")
    group.add_argument(
        "--ui-token-file",
        default=None,
        metavar="PATH",
        help=f"ask visitors for the token in this file before any page renders (default: ${UI_TOKEN_ENV}, "
        "else no sign-in); required when the dashboard binds anything but loopback",
    )
    group.add_argument(
        "--new-ui-token-file",
        default=None,
        metavar="PATH",
        help="like --ui-token-file, but first write a new random token (256 bits) to PATH if it does "
        "not exist yet (readable by you only)",
    )
    group.add_argument(
        "--allow-source-edit",
        action="store_true",
        help="let the page change the data directory and the ClickHouse connection (otherwise they "
        "are this command's settings, shown read-only)",
    )
    group.add_argument(
        "--max-upload-mb",
        type=int,
        default=DEFAULT_MAX_UPLOAD_MB,
        help="largest uploaded file, MiB (default: %(default)s)",
    )
    group.add_argument(
        "--max-upload-decompressed-mb",
        type=int,
        default=DEFAULT_MAX_UPLOAD_DECOMPRESSED_MB,
        help="largest decompressed size of one upload, MiB (default: %(default)s)",
    )
    group.add_argument(
        "--upload-memory-session-mb",
        type=int,
        default=DEFAULT_UPLOAD_SESSION_MB,
        help="most memory one visitor's uploaded files may hold, MiB (default: %(default)s)",
    )
    group.add_argument(
        "--upload-memory-total-mb",
        type=int,
        default=DEFAULT_UPLOAD_TOTAL_MB,
        help="most memory all uploaded files may hold together, MiB (default: %(default)s)",
    )


def dashboard_access(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> DashboardAccess:
    """The access settings the flags of `add_dashboard_arguments` (and $JANUX_UI_TOKEN) ask for."""
    environ = os.environ if env is None else env
    token: str | None
    if args.new_ui_token_file is not None:
        write_new_token(Path(args.new_ui_token_file))
        args.ui_token_file = args.new_ui_token_file
    if args.ui_token_file is not None:
        try:
            token = Path(args.ui_token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as err:
            raise SystemExit(f"janux: --ui-token-file: cannot read {args.ui_token_file}: {err}") from None
        where = f"--ui-token-file {args.ui_token_file}"
    else:
        token, where = environ.get(UI_TOKEN_ENV), f"${UI_TOKEN_ENV}"
        token = token.strip() if token is not None else None
    if token is not None and not token:
        raise SystemExit(f"janux: {where} is empty; give a token, or unset it (loopback only then)")
    if token is not None and (problem := token_problem(token)) is not None:
        raise SystemExit(f"janux: {where}: {problem}")
    sizes = (args.max_upload_mb, args.max_upload_decompressed_mb, args.upload_memory_session_mb,
             args.upload_memory_total_mb)  # fmt: skip
    if min(sizes) < 1:
        raise SystemExit(
            "janux: the upload limits (--max-upload-mb, --max-upload-decompressed-mb, "
            "--upload-memory-session-mb, --upload-memory-total-mb) must be at least 1"
        )
    return DashboardAccess(token, args.allow_source_edit, *sizes)


def write_new_token(path: Path) -> None:
    """Write a new random token to `path` (mode 0600) unless the file exists."""
    try:
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as out:
            out.write(new_token() + "\n")
    except FileExistsError:
        return
    except OSError as err:
        raise SystemExit(f"janux: --new-ui-token-file: cannot write {path}: {err}") from None
    print(f"janux: wrote a new dashboard token to {path}", file=sys.stderr, flush=True)


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
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to bind (default: %(default)s; any other needs --ui-token-file or $JANUX_UI_TOKEN)",
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="port, 0 picks a free one (default: %(default)s)"
    )
    parser.add_argument(
        "--source",
        default=None,
        help="store (default) | clickhouse (JANUX_CLICKHOUSE_* settings) | memory-file:<trace file>",
    )
    add_dashboard_arguments(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.source:
        try:
            parse_source(args.source, SourceConfig())
        except SourceUnavailable as exc:
            raise SystemExit(f"janux ui: --source: {exc}") from exc
    if not 0 <= args.port <= 65535:
        raise SystemExit(f"janux ui: --port: must be 0..65535, got {args.port}")
    access = dashboard_access(args)
    problem = exposure_problem(args.host, access)
    if problem is not None:
        raise SystemExit(f"janux ui: refusing to start: {problem}")
    port = args.port or free_port(args.host)
    print(f"Janux dashboard: http://{args.host}:{port}", flush=True)
    child = launch_ui(args.data_dir, args.host, port, args.source, access=access)
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
