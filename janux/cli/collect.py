"""`janux collect`: run the OTLP receiver (HTTP and gRPC) into the embedded store until stopped."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from typing import Any

from janux.tracing.receiver import (
    DEFAULT_GRPC_PORT,
    DEFAULT_HOST,
    DEFAULT_HTTP_PORT,
    DEFAULT_MAX_BODY_BYTES,
    RunningReceiver,
    start_receiver,
)
from janux.tracing.sources.store import DATA_DIR_ENV, TraceStore, open_store

TOKEN_ENV = "JANUX_RECEIVER_TOKEN"
"""Environment variable read for the bearer token when --token is not given."""
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
            "durably committed. Runs in the foreground until SIGINT or SIGTERM."
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


def add_receiver_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the receiver's flags (bind address, ports, token, data dir, body limit); shared with `serve`."""
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to bind (default: %(default)s; 0.0.0.0 accepts remote senders)",
    )
    parser.add_argument(
        "--http-port",
        type=int,
        default=DEFAULT_HTTP_PORT,
        help="OTLP/HTTP port, 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--grpc-port",
        type=int,
        default=DEFAULT_GRPC_PORT,
        help="OTLP/gRPC port, 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV),
        help=f"require 'Authorization: Bearer TOKEN' on every request (default: ${TOKEN_ENV}, else none)",
    )
    parser.add_argument(
        "--data-dir", default=None, help=f"store directory (default: ${DATA_DIR_ENV} or ~/.janux/data)"
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help="largest request after decompression; larger get 413/RESOURCE_EXHAUSTED (default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="OTLP/HTTP processes sharing the port, to decode on more cores (default: %(default)s)",
    )


def _run(args: argparse.Namespace) -> int:
    if args.retention_days is None:
        args.retention_days = _retention_from_env()
    if args.retention_days is not None and args.retention_days < 0:
        raise SystemExit("janux collect: --retention-days must be >= 0")
    store = open_store(args.data_dir)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        receiver = start_receiver_from_args(args, store, http_workers=max(1, args.workers))
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


def start_receiver_from_args(
    args: argparse.Namespace, store: TraceStore, http_workers: int = 1
) -> RunningReceiver:
    """Start the receiver into `store` as the flags of `add_receiver_arguments` say."""
    return start_receiver(
        store,
        host=args.host,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        token=args.token or None,
        max_body_bytes=args.max_body_bytes,
        http_workers=http_workers,
    )
