"""`janux demo`: run the built-in scripted scenarios and ship their traces.

    janux demo --out traces.jsonl                     # OTLP JSON lines, no server needed
    janux demo --endpoint http://127.0.0.1:4318       # OTLP/HTTP to a receiver or collector
    janux demo --endpoint http://127.0.0.1:4317 --protocol grpc
    janux demo --list                                 # the scenario names

The scenarios use scripted models (no network, no API key). Telemetry is configured through
`janux.tracing.sdk.configure_telemetry`, so the usual OTEL_* variables apply where no flag is given.
Exit status: 0 when every scenario ran and every span reached its destination, 1 when a scenario
failed, spans were dropped or the `--wait-for` URL never answered, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from janux.tracing.sdk.telemetry import Telemetry, TelemetryConfigError, configure_telemetry

DEFAULT_SERVICE_NAME = "janux-demo"
"""`service.name` of the demo's traces unless --service-name or OTEL_SERVICE_NAME says otherwise."""


def register(subparsers: Any) -> None:
    """Add the `demo` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="run the built-in scripted scenarios and write or send their traces",
        description=(
            "Run the built-in scripted scenarios (plain answer, delegation, parallel delegations, "
            "retry, timeout then fallback, denials, budget cuts, transfer, nested delegation, ...) "
            "through the runtime with scripted models, and write their traces as OTLP JSON lines "
            "(--out) or send them over OTLP (--endpoint). No API key and no server are needed for --out."
        ),
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write the traces as OTLP JSON lines to FILE (replaced unless --append)",
    )
    target.add_argument(
        "--endpoint", metavar="URL", help="send the traces over OTLP to URL (e.g. http://127.0.0.1:4318)"
    )
    parser.add_argument(
        "--protocol",
        choices=("http/protobuf", "grpc"),
        default=None,
        help="OTLP protocol for --endpoint (default: OTEL_EXPORTER_OTLP_PROTOCOL or http/protobuf)",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        metavar="NAME",
        dest="scenarios",
        help="run only this scenario (repeatable; see --list)",
    )
    parser.add_argument("--list", action="store_true", help="print the scenario names and exit")
    parser.add_argument("--append", action="store_true", help="append to --out instead of replacing it")
    parser.add_argument(
        "--service-name",
        default=None,
        help=f"service.name of the traces (default: OTEL_SERVICE_NAME or {DEFAULT_SERVICE_NAME})",
    )
    parser.add_argument(
        "--latency-scale",
        type=float,
        default=1.0,
        metavar="F",
        help="multiply the scripted model latencies by F (0 = as fast as possible)",
    )
    parser.add_argument(
        "--wait-for",
        metavar="URL",
        help="first wait until URL answers HTTP 200 (e.g. the collector's health check)",
    )
    parser.add_argument(
        "--wait-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long --wait-for waits (default 60)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Execute `janux demo` with parsed arguments; return the exit status."""
    from janux.demo.scenarios import SCENARIO_NAMES

    if args.list:
        for name in SCENARIO_NAMES:
            print(name)
        return 0
    problem = _usage_problem(args, SCENARIO_NAMES)
    if problem:
        print(f"janux demo: {problem}", file=sys.stderr)
        return 2
    if args.wait_for and not wait_until_up(args.wait_for, args.wait_timeout):
        print(f"janux demo: {args.wait_for} did not answer within {args.wait_timeout:g} s", file=sys.stderr)
        return 1
    try:
        telemetry = _telemetry(args)
    except TelemetryConfigError as error:
        print(f"janux demo: {error}", file=sys.stderr)
        return 2
    return _run_and_report(args, telemetry, sys.stdout)


def _usage_problem(args: argparse.Namespace, known: Sequence[str]) -> str | None:
    if args.out is None and args.endpoint is None:
        return "say where the traces go: --out FILE or --endpoint URL (or --list)"
    if args.protocol and args.endpoint is None:
        return "--protocol only applies to --endpoint"
    unknown = [name for name in args.scenarios or () if name not in known]
    if unknown:
        return f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(known)}"
    if args.latency_scale < 0:
        return "--latency-scale must be 0 or more"
    if args.wait_for and not args.wait_for.startswith(("http://", "https://")):
        return f"--wait-for must be an http:// or https:// URL, got {args.wait_for!r}"
    return None


def _telemetry(args: argparse.Namespace) -> Telemetry:
    service_name = args.service_name or os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    if args.out is not None:
        if not args.append and args.out.exists():
            args.out.unlink()
        # A trace file holds spans only, so metrics stay off here.
        return configure_telemetry(
            service_name=service_name,
            exporter="otlp_json_file",
            file_path=args.out,
            metrics=False,
            set_global=False,
        )
    return configure_telemetry(
        service_name=service_name,
        exporter="otlp",
        endpoint=args.endpoint,
        protocol=args.protocol,
        set_global=False,
    )


def _run_and_report(args: argparse.Namespace, telemetry: Telemetry, out: TextIO) -> int:
    from janux.demo.scenarios import ENDS_BY_DESIGN, run_scenarios

    names = tuple(args.scenarios) if args.scenarios else None
    try:
        outcomes = asyncio.run(
            run_scenarios(
                names,
                tracer_provider=telemetry.tracer_provider,
                meter_provider=telemetry.meter_provider,
                latency_scale=args.latency_scale,
            )
        )
    finally:
        clean = telemetry.shutdown()
    width = max((len(outcome.name) for outcome in outcomes), default=8)
    print(f"{'scenario':<{width}}  {'trace id':<32}  {'outcome':<7}  shows by design", file=out)
    for outcome in outcomes:
        verdict = f"error: {outcome.error}" if outcome.error is not None else "ok"
        design = ENDS_BY_DESIGN.get(outcome.name, "-")
        print(f"{outcome.name:<{width}}  {outcome.trace_id or '-':<32}  {verdict:<7}  {design}", file=out)
    destination = str(args.out) if args.out is not None else args.endpoint
    print(f"{telemetry.exported_spans} spans of {len(outcomes)} scenarios -> {destination}", file=out)
    failed = [outcome.name for outcome in outcomes if outcome.error is not None]
    if failed:  # a built-in scenario that raises is a bug: its trace is not what the demo promises
        print(f"janux demo: scenario(s) failed: {', '.join(failed)}", file=sys.stderr)
    if not clean:
        print(
            f"janux demo: {telemetry.dropped_spans} spans could not be delivered to {destination}",
            file=sys.stderr,
        )
    return 1 if failed or not clean else 0


def wait_until_up(url: str, timeout_s: float, interval_s: float = 0.5) -> bool:
    """Poll `url` until it answers HTTP 200 or `timeout_s` passes; True when it answered."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=max(0.1, min(2.0, timeout_s))) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass  # not up yet (refused, reset, 503): keep polling until the deadline
        if time.monotonic() + interval_s > deadline:
            return False
        time.sleep(interval_s)
