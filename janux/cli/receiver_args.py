"""The receiver's command-line flags, shared by `janux collect` and `janux serve`: where it listens,
its bearer token (from a file, the environment or the command line) and its limits."""

from __future__ import annotations

import argparse
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from janux.tracing.otlp.decode_limits import MIB, RECEIVER_LIMITS, DecodeLimits
from janux.tracing.receiver import (
    DEFAULT_GRPC_PORT,
    DEFAULT_HOST,
    DEFAULT_HTTP_PORT,
    ReceiverLimits,
    RunningReceiver,
    start_receiver,
)
from janux.tracing.sources.store import DATA_DIR_ENV, TraceStore, open_store

TOKEN_ENV = "JANUX_RECEIVER_TOKEN"
"""Environment variable read for the bearer token when neither --token-file nor --token is given."""

_DEFAULTS = ReceiverLimits()


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a number > 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def add_receiver_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the receiver's flags (bind address, ports, token, data dir, limits)."""
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address the receiver binds (default: %(default)s; 0.0.0.0 accepts remote senders)",
    )
    for name, port in (("HTTP", DEFAULT_HTTP_PORT), ("gRPC", DEFAULT_GRPC_PORT)):
        parser.add_argument(
            f"--{name.lower()}-port",
            type=int,
            default=port,
            help=f"OTLP/{name} port, 0 picks a free one (default: %(default)s)",
        )
    parser.add_argument(
        "--token-file",
        default=None,
        metavar="PATH",
        help=f"require 'Authorization: Bearer TOKEN' on every request, TOKEN read from this file; "
        f"without it, ${TOKEN_ENV} (set but empty is an error), else no token",
    )
    parser.add_argument(
        "--token",
        default=None,
        help="the bearer token itself; visible to every user in the process list, so prefer "
        f"--token-file or ${TOKEN_ENV}",
    )
    parser.add_argument(
        "--data-dir", default=None, help=f"store directory (default: ${DATA_DIR_ENV} or ~/.janux/data)"
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=min(2, os.cpu_count() or 1),
        help="OTLP/HTTP processes sharing the port, to decode on more cores (default: %(default)s)",
    )
    _add_limit_arguments(parser.add_argument_group("limits (see docs/configuration.md)"))


_INT, _SECONDS = positive_int, positive_float
_LIMIT_FLAGS: tuple[tuple[str, Callable[[str], object], object, str], ...] = (
    ("--max-body-bytes", _INT, _DEFAULTS.max_body_bytes, "largest request, as sent and decompressed (413)"),
    ("--max-spans-per-request", _INT, RECEIVER_LIMITS.max_spans, "spans in one request (413)"),
    ("--max-attributes-per-span", _INT, RECEIVER_LIMITS.max_attributes,
     "attributes of one span, event, link or resource (that span is refused)"),
    ("--max-events-per-span", _INT, RECEIVER_LIMITS.max_events, "events of one span (that span is refused)"),
    ("--max-links-per-span", _INT, RECEIVER_LIMITS.max_links, "links of one span (that span is refused)"),
    ("--max-value-depth", _INT, RECEIVER_LIMITS.max_depth,
     "nesting of array/kvlist values (that span is refused)"),
    ("--max-decoded-mb", _INT, RECEIVER_LIMITS.max_decoded_bytes // MIB,
     "estimated decoded size of one request (413)"),
    ("--memory-budget-mb", _INT, _DEFAULTS.memory_budget_bytes // MIB,
     "memory all requests of one process may hold at once; when full they wait, then 503"),
    ("--header-timeout", _SECONDS, _DEFAULTS.header_timeout_s, "seconds for a request head (then closed)"),
    ("--body-timeout", _SECONDS, _DEFAULTS.body_timeout_s, "seconds for a whole request body (408)"),
    ("--keep-alive-timeout", _SECONDS, _DEFAULTS.keep_alive_s, "seconds an idle connection is kept"),
    ("--max-connections", _INT, _DEFAULTS.max_connections,
     "connections per endpoint and process (503 beyond; lowered to fit the open-file limit)"),
    ("--max-concurrent-rpcs", _INT, _DEFAULTS.max_concurrent_rpcs, "gRPC calls at once (RESOURCE_EXHAUSTED)"),
)  # fmt: skip
"""(flag, type, default, help) of every receiver limit."""


def _add_limit_arguments(group: argparse._ArgumentGroup) -> None:
    for flag, kind, default, text in _LIMIT_FLAGS:
        help_text = f"{text} (default: %(default)s)"
        group.add_argument(flag, type=kind, default=default, metavar="N", help=help_text)


def receiver_limits(args: argparse.Namespace) -> ReceiverLimits:
    """The limits the flags of `add_receiver_arguments` ask for."""
    decode = DecodeLimits(
        max_spans=args.max_spans_per_request,
        max_attributes=args.max_attributes_per_span,
        max_events=args.max_events_per_span,
        max_links=args.max_links_per_span,
        max_depth=args.max_value_depth,
        max_decoded_bytes=args.max_decoded_mb * MIB,
    )
    return ReceiverLimits(
        decode=decode,
        max_body_bytes=args.max_body_bytes,
        memory_budget_bytes=args.memory_budget_mb * MIB,
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
        keep_alive_s=args.keep_alive_timeout,
        max_connections=args.max_connections,
        max_concurrent_rpcs=args.max_concurrent_rpcs,
    )


def resolve_token(
    args: argparse.Namespace, env: dict[str, str] | None = None, command: str = "janux"
) -> str | None:
    """The bearer token from --token-file, --token or $JANUX_RECEIVER_TOKEN (in that order), or None.

    An empty token anywhere is an error, never "authentication off" (exits with a message).
    """
    environ = dict(os.environ) if env is None else env
    if args.token_file is not None and args.token is not None:
        raise SystemExit(f"{command}: give --token-file or --token, not both")
    if args.token_file is not None:
        try:
            token = Path(args.token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as err:
            raise SystemExit(f"{command}: --token-file: cannot read {args.token_file}: {err}") from None
        where = f"--token-file {args.token_file}"
    elif args.token is not None:
        token, where = args.token.strip(), "--token"
    elif TOKEN_ENV in environ:
        token, where = environ[TOKEN_ENV].strip(), f"${TOKEN_ENV}"
    else:
        return None
    if not token:
        raise SystemExit(
            f"{command}: {where} is empty; give a token, or unset it to run without authentication"
        )
    return token


def start_receiver_from_args(
    args: argparse.Namespace, store: TraceStore, token: str | None, http_workers: int = 1
) -> RunningReceiver:
    """Start the receiver into `store` as the flags of `add_receiver_arguments` say."""
    return start_receiver(
        store,
        host=args.host,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        token=token,
        http_workers=http_workers,
        limits=receiver_limits(args),
    )


def open_store_for_writing(data_dir: str | None, command: str) -> TraceStore:
    """The store the receiver writes into; one clear message (and exit status 1) when it cannot be
    opened for writing (a read-only directory or file system, a full disk, no permission)."""
    try:
        return open_store(data_dir)
    except (sqlite3.Error, OSError) as err:
        where = data_dir or "the default data directory (~/.janux/data or $JANUX_DATA_DIR)"
        raise SystemExit(
            f"{command}: cannot write to the store in {where}: {err}. The receiver needs a writable "
            "data directory: check its permissions and free space, or give another with --data-dir"
        ) from None
