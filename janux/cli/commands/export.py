"""`janux export [ID ...] [filters]`: traces as OTLP, to a file, stdout or an OTLP/HTTP endpoint.

Selects traces by id (or a prefix only one id has) or with the filters of `janux traces`, from any
source the CLI reads, and writes their spans as stored (`janux.tracing.otlp.encode`): OTLP/JSON
lines, length-delimited protobuf, or OTLP/HTTP protobuf POSTs. `--redact` takes captured content
out first (`janux.tracing.analysis.captured_content`). `janux import` of the output gives the same
traces back. Bad input (an unknown id, an unwritable file, an unreachable endpoint) is one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import string
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from janux.cli.export_output import (
    FORMAT_JSON,
    FORMAT_PROTOBUF,
    EndpointOutput,
    ExportFailed,
    FileOutput,
    Output,
    requests_of,
)
from janux.cli.source_options import (
    add_filter_arguments,
    add_source_arguments,
    filter_from_args,
    open_from_args,
)
from janux.tracing.analysis.captured_content import redact
from janux.tracing.records import SpanRecord
from janux.tracing.sources.protocol import TraceFilter, TraceSource

TRACE_ID_HEX = 32
"""Hex characters of a whole trace id."""
PAGE_TRACES = 200
"""Traces read from the source at once (memory is bounded by a page, not by the export)."""
DEFAULT_BATCH_SPANS = 512
"""Spans per request by default (the OpenTelemetry SDK's batch size)."""
BAD_INPUT = 2
"""Exit status for input the export cannot work with."""


def register(subparsers: Any) -> None:
    """Add the `export` subcommand."""
    parser = subparsers.add_parser(
        "export",
        help="write traces as OTLP (JSON lines, protobuf) or send them to an OTLP endpoint",
        description=(
            "Export traces, by id or with the filters of `janux traces`, from any source, as stored: "
            "OTLP/JSON lines (one ExportTraceServiceRequest per line, hex ids, as the Collector's file "
            "exporter writes), length-delimited protobuf (each request after its 4-byte big-endian "
            "length, the Collector's `format: proto`), or OTLP/HTTP protobuf to an endpoint. "
            "`janux import` reads both file formats back. Exit status 0 when all was exported, 1 when "
            "no trace matched or the endpoint refused spans, 2 for bad input."
        ),
    )
    parser.add_argument(
        "trace_ids", nargs="*", metavar="ID", help="trace ids (or prefixes only one id has); none: filters"
    )
    parser.add_argument("-o", "--output", default=None, metavar="FILE", help="file (default: stdout)")
    parser.add_argument(
        "--format", choices=(FORMAT_JSON, FORMAT_PROTOBUF), default=None,
        help="json: OTLP/JSON lines (default); protobuf: length-delimited ExportTraceServiceRequests",
    )  # fmt: skip
    parser.add_argument(
        "--endpoint", default=None, metavar="URL",
        help="send OTLP/HTTP protobuf here instead (http://host:4318 gets /v1/traces; a URL with a path "
        "is used as given)",
    )  # fmt: skip
    parser.add_argument(
        "--token-file", default=None, metavar="PATH",
        help="with --endpoint: send 'Authorization: Bearer TOKEN', TOKEN read from this file",
    )  # fmt: skip
    parser.add_argument("--token", default=None, help="the bearer token itself (visible in the process list)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default: 30)")
    parser.add_argument(
        "--redact", action="store_true",
        help="drop captured content (prompts, outputs, tool arguments and results, task text)",
    )  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="at most this many traces (newest first)")
    parser.add_argument(
        "--batch-spans", type=int, default=DEFAULT_BATCH_SPANS,
        help="spans per request (default: %(default)s; a bigger trace spans several requests)",
    )  # fmt: skip
    add_filter_arguments(parser)
    add_source_arguments(parser)
    parser.set_defaults(func=_run)


@dataclass(slots=True)
class Tally:
    """What was exported."""

    traces: int = 0
    """Traces read and written."""
    spans: int = 0
    """Their spans."""
    requests: int = 0
    """`ExportTraceServiceRequest`s written or sent."""
    redacted: int = 0
    """Attribute values `--redact` removed."""


def _fail(message: str) -> int:
    print(f"janux export: {message}", file=sys.stderr)
    return BAD_INPUT


def _usage_problem(args: argparse.Namespace) -> str | None:
    if args.endpoint is not None and (args.output is not None or args.format is not None):
        return "--endpoint sends OTLP/HTTP protobuf: -o and --format apply to files only"
    if args.endpoint is None and (args.token is not None or args.token_file is not None):
        return "--token and --token-file apply to --endpoint only"
    if args.trace_ids and (args.limit is not None or filter_from_args(args) != TraceFilter()):
        return "give trace ids or filters, not both"
    if args.batch_spans < 1 or (args.limit is not None and args.limit < 1):
        return "--batch-spans and --limit must be at least 1"
    if not args.timeout > 0:
        return f"--timeout must be more than 0 seconds, got {args.timeout:g}"
    return None


def _full_ids(source: TraceSource, wanted: list[str]) -> list[str]:
    """Each wanted id in full, once, in the order given; raises `ExportFailed` naming a bad one."""
    found: list[str] = []
    for raw in wanted:
        text = raw.strip().lower()
        if not text or len(text) > TRACE_ID_HEX or not set(text) <= set(string.hexdigits):
            raise ExportFailed(f"{raw!r} is not a trace id (up to 32 hex characters)")
        if len(text) < TRACE_ID_HEX:
            matches = source.list_traces(TraceFilter(trace_id=text), limit=2)
            if len(matches) != 1:
                how = "no trace id starts" if not matches else "more than one trace id starts"
                raise ExportFailed(f"{how} with {text}")
            text = matches[0].trace_id
        if text not in found:
            found.append(text)
    return found


def _by_ids(source: TraceSource, trace_ids: list[str]) -> Iterator[list[SpanRecord]]:
    """The traces named, all read (and checked to exist) before the first is written."""
    stored = source.get_traces(trace_ids)
    missing = [trace_id for trace_id in trace_ids if not stored.get(trace_id)]
    if missing:
        raise ExportFailed(f"unknown trace id{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    return (stored[trace_id] for trace_id in trace_ids)


def _by_filter(source: TraceSource, flt: TraceFilter, limit: int | None) -> Iterator[list[SpanRecord]]:
    """The traces the filter matches, newest first, a page at a time. A trace stored during the
    export moves the pages down by one: the trace at a page's edge comes again and is skipped."""
    offset = 0
    seen: set[str] = set()
    while limit is None or offset < limit:
        size = PAGE_TRACES if limit is None else min(PAGE_TRACES, limit - offset)
        page = [summary.trace_id for summary in source.list_traces(flt, limit=size, offset=offset)]
        if not page:
            return
        offset += len(page)
        page = [trace_id for trace_id in page if trace_id not in seen]
        seen.update(page)
        spans = source.get_traces(page) if page else {}
        yield from (spans[trace_id] for trace_id in page if spans.get(trace_id))


def _batches(
    traces: Iterator[list[SpanRecord]], batch_spans: int, tally: Tally, redacting: bool
) -> Iterator[list[SpanRecord]]:
    """Whole traces packed into batches of about `batch_spans` spans; a bigger trace is split."""
    pending: list[SpanRecord] = []
    for spans in traces:
        if redacting:
            redacted = redact(spans)
            spans = redacted.spans
            tally.redacted += redacted.removed
        tally.traces += 1
        tally.spans += len(spans)
        if pending and len(pending) + len(spans) > batch_spans:
            yield pending
            pending = []
        pending.extend(spans)
        while len(pending) >= batch_spans:
            yield pending[:batch_spans]
            pending = pending[batch_spans:]
    if pending:
        yield pending


def _output(args: argparse.Namespace) -> Output:
    if args.endpoint is None:
        return FileOutput(args.output, args.format or FORMAT_JSON)
    from janux.cli.receiver_args import resolve_token

    try:
        token = resolve_token(args, env={}, command="janux export")
    except SystemExit as exc:  # an unreadable or empty token: its message, exit status 2
        raise ExportFailed(str(exc).removeprefix("janux export: ")) from None
    return EndpointOutput(args.endpoint, token, args.timeout)


def _run(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem:
        return _fail(problem)
    try:
        source = open_from_args(args, "export")
    except SystemExit as exc:  # the source cannot be opened: its message, exit status 2
        print(exc, file=sys.stderr)
        return BAD_INPUT
    tally = Tally()
    try:
        if args.trace_ids:
            traces = _by_ids(source, _full_ids(source, args.trace_ids))
        else:
            traces = _by_filter(source, filter_from_args(args), args.limit)
        output = _output(args)
    except ExportFailed as err:
        return _fail(str(err))
    try:
        _write(traces, output, tally, args)
    except ExportFailed as err:
        output.abandon()
        sent = tally.requests if isinstance(output, EndpointOutput) else 0
        return _fail(f"{err} ({sent} request(s) sent before)" if sent else str(err))
    except BaseException:  # interrupted, or the reader of stdout went away: no half file stays
        output.abandon()
        raise
    return _report(args, tally, output)


def _write(
    traces: Iterator[list[SpanRecord]], output: Output, tally: Tally, args: argparse.Namespace
) -> None:
    """Every trace into `output` as requests; the output completed, or dropped when nothing matched."""
    for batch in _batches(traces, args.batch_spans, tally, args.redact):
        for request in requests_of(batch):
            output.write(request)
            tally.requests += 1
    if tally.traces:
        output.finish()
    else:
        output.abandon()  # no empty file where a user expects traces


def _report(args: argparse.Namespace, tally: Tally, output: Output) -> int:
    if not tally.traces:
        print("janux export: no traces match: nothing written", file=sys.stderr)
        return 1
    print(
        f"janux export: {tally.traces} trace(s), {tally.spans} span(s) in {tally.requests} request(s) "
        f"to {output.where}",
        file=sys.stderr,
    )
    if args.redact:
        print(f"janux export: --redact removed {tally.redacted} captured value(s)", file=sys.stderr)
    refused = getattr(output, "refused", None)
    if refused is not None and refused.spans:
        print(f"janux export: the endpoint refused {refused.spans} span(s): {refused.message}",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0
