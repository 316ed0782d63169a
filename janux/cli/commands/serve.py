"""`janux serve`: the receiver and the dashboard in one command, optionally fed with the demo.

The one-process-per-job equivalent of `phoenix serve`: OTLP in on 4318/4317, the embedded
store in between, the dashboard on 8501, all bound to 127.0.0.1 unless told otherwise.
With `--demo`, the built-in scenarios run in a child `janux demo` process that sends its
traces over real OTLP/HTTP to the receiver, exactly as a user's own app would.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from typing import Any

from janux.cli.commands.ui import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    add_dashboard_arguments,
    dashboard_access,
    free_port,
    launch_ui,
    stop_child,
)
from janux.cli.receiver_args import (
    add_receiver_arguments,
    open_store_for_writing,
    resolve_token,
    start_receiver_from_args,
)
from janux.dashboard.access import exposure_problem
from janux.tracing.receiver.process import tune_malloc

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def register(subparsers: Any) -> None:
    """Add the `serve` subcommand."""
    parser = subparsers.add_parser(
        "serve",
        help="run the OTLP receiver and the dashboard together (optionally with the demo)",
        description=(
            "Receive OTLP traces into the embedded store and serve the dashboard on them, in one "
            "command. With --demo, the built-in scripted scenarios are sent to the receiver over "
            "OTLP/HTTP once it is up. Runs until SIGINT or SIGTERM."
        ),
    )
    add_receiver_arguments(parser)
    parser.add_argument(
        "--ui-host",
        default=DEFAULT_HOST,
        help="address the dashboard binds, separate from the receiver's --host (default: %(default)s; "
        "any other needs --ui-token-file or $JANUX_UI_TOKEN)",
    )
    parser.add_argument(
        "--ui-port",
        type=int,
        default=DEFAULT_PORT,
        help="dashboard port, 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument("--no-ui", action="store_true", help="receive only; do not start the dashboard")
    parser.add_argument(
        "--demo", action="store_true", help="send the built-in scenarios to the receiver once it is up"
    )
    add_dashboard_arguments(parser)
    parser.set_defaults(func=_run)


def demo_command(http_port: int, host: str) -> list[str]:
    """argv of the child that sends the demo scenarios to this receiver over OTLP/HTTP."""
    # A wildcard bind address is not a destination; the receiver is reachable on loopback.
    target = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    endpoint = f"http://[{target}]:{http_port}" if ":" in target else f"http://{target}:{http_port}"
    return [
        sys.executable, "-m", "janux", "demo", "--endpoint", endpoint, "--protocol", "http/protobuf",
    ]  # fmt: skip


def demo_env(token: str | None) -> dict[str, str]:
    """Environment additions for the demo child: the bearer token as an OTLP header, and no
    metrics export (the receiver stores traces only; metrics would be answered 404)."""
    env = {"OTEL_METRICS_EXPORTER": "none"}
    if token:
        env["OTEL_EXPORTER_OTLP_HEADERS"] = f"Authorization=Bearer {token}"
    return env


def _run(args: argparse.Namespace) -> int:
    token = resolve_token(args, command="janux serve")
    access = dashboard_access(args)
    problem = None if args.no_ui else exposure_problem(args.ui_host, access)
    if problem is not None:
        raise SystemExit(f"janux serve: refusing to start: {problem}")
    tune_malloc()  # before the store's and the servers' threads start
    store = open_store_for_writing(args.data_dir, "janux serve")
    stop = threading.Event()
    for signum in _STOP_SIGNALS:
        signal.signal(signum, lambda *_: stop.set())
    try:
        receiver = start_receiver_from_args(args, store, token)
    except OSError as err:
        store.close()
        raise SystemExit(f"janux serve: {err}") from None
    dashboard: subprocess.Popen[bytes] | None = None
    demo: subprocess.Popen[bytes] | None = None
    try:
        print(
            f"janux serve: OTLP/HTTP http://{args.host}:{receiver.http_port}/v1/traces, "
            f"OTLP/gRPC {args.host}:{receiver.grpc_port}, store {store.path}",
            flush=True,
        )
        if not args.no_ui:
            port = args.ui_port or free_port(args.ui_host)
            dashboard = launch_ui(store.data_dir, args.ui_host, port, access=access)
            print(f"janux serve: dashboard http://{args.ui_host}:{port}", flush=True)
        if args.demo and receiver.http_port is not None:
            env = dict(os.environ, **demo_env(token))
            demo = subprocess.Popen(demo_command(receiver.http_port, args.host), env=env)
        while not stop.wait(0.5):
            if dashboard is not None and dashboard.poll() is not None:
                print("janux serve: the dashboard exited", file=sys.stderr, flush=True)
                return 1
    finally:
        for child in (demo, dashboard):
            if child is not None:
                stop_child(child)
        receiver.stop()
        store.close()
    print("janux serve: stopped", flush=True)
    return 0
