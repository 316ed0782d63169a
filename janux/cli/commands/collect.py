"""`janux collect`: run the OTLP receiver (HTTP and gRPC) into the embedded store until stopped."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from typing import Any

from janux.cli.receiver_args import (
    add_receiver_arguments,
    open_store_for_writing,
    resolve_token,
    start_receiver_from_args,
)
from janux.tracing.receiver.process import tune_malloc
from janux.tracing.sources.store import TraceStore

RETENTION_ENV = "JANUX_RETENTION_DAYS"
"""Environment variable read for the retention in days when --retention-days is not given."""
PRUNE_INTERVAL_S = 3600.0
"""How often the retention setting prunes while the receiver runs (and once at start)."""

logger = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    """Add the `collect` subcommand."""
    parser = subparsers.add_parser(
        "collect",
        help="receive OTLP traces (HTTP and gRPC) into the embedded store",
        description=(
            "Receive OpenTelemetry traces over OTLP/HTTP (POST /v1/traces, protobuf or JSON, gzip) "
            "and OTLP/gRPC, and store them in the embedded store. Any OpenTelemetry SDK or Collector "
            "pointed at it works unchanged. Each request is acknowledged only after its spans are "
            "durably committed. Runs in the foreground until SIGINT or SIGTERM. Every request is held "
            "to the limits below (docs/configuration.md lists them); the bearer token is best given "
            "with --token-file or $JANUX_RECEIVER_TOKEN, which other users cannot see in the process list."
        ),
    )
    add_receiver_arguments(parser)
    parser.add_argument(
        "--retention-days",
        type=float,
        default=None,
        metavar="N",
        help=f"delete traces that ended more than N days ago, at start and hourly "
        f"(default: ${RETENTION_ENV}, else keep everything; `janux prune` does it once)",
    )
    parser.set_defaults(func=_run)


def _retention_from_env() -> float | None:
    value = os.environ.get(RETENTION_ENV, "").strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise SystemExit(
            f"janux collect: {RETENTION_ENV}: expected a number of days, got {value!r}"
        ) from None


def _run(args: argparse.Namespace) -> int:
    if args.retention_days is None:
        args.retention_days = _retention_from_env()
    if args.retention_days is not None and args.retention_days < 0:
        raise SystemExit("janux collect: --retention-days must be >= 0")
    token = resolve_token(args, command="janux collect")
    tune_malloc()  # before the store's and the servers' threads start
    store = open_store_for_writing(args.data_dir, "janux collect")
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        receiver = start_receiver_from_args(args, store, token, http_workers=args.workers)
    except OSError as err:
        store.close()
        raise SystemExit(f"janux collect: {err}") from None
    retention = f", retention {args.retention_days:g} day(s)" if args.retention_days is not None else ""
    print(
        f"janux collect: OTLP/HTTP on http://{args.host}:{receiver.http_port}/v1/traces, "
        f"OTLP/gRPC on {args.host}:{receiver.grpc_port}, store {store.path}{retention}",
        flush=True,
    )
    pruner = _start_pruner(store, args.retention_days, stop)
    try:
        while not stop.wait(1.0):
            pass
    finally:
        receiver.stop()
        if pruner is not None:
            pruner.join()
        store.close()
    print("janux collect: stopped", flush=True)
    return 0


def _start_pruner(store: TraceStore, days: float | None, stop: threading.Event) -> threading.Thread | None:
    """With a retention setting: a thread pruning now and every `PRUNE_INTERVAL_S` until `stop`."""
    if days is None:
        return None

    def prune_until_stopped() -> None:
        """Prune, then wait; a failed prune is logged and retried next time."""
        while True:
            try:
                result = store.prune(days)
            except Exception:
                logger.exception("retention: prune failed")
            else:
                if result.traces:
                    logger.info("retention: deleted %d trace(s), %d span(s)", result.traces, result.spans)
            if stop.wait(PRUNE_INTERVAL_S):
                return

    thread = threading.Thread(target=prune_until_stopped, name="janux-retention", daemon=True)
    thread.start()
    return thread
