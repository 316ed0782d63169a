"""End-to-end ingest: OTLP/HTTP -> durable -> queryable, file import, and store queries.

Run: `.venv/bin/python -m bench.bench_ingest [--quick] [--import-mb N] [--list-spans N]`.
Prints a markdown table. Same-run baselines make the figures read as ratios:
- receiver throughput (spans/s, requests of 512 janux-shaped spans, ~10 attributes and events,
  sent by concurrent client threads to a `janux collect` subprocess, acknowledged after commit,
  then queryable) next to the raw protobuf parse of the same bodies
  (`ExportTraceServiceRequest.FromString`) and our decode to records;
- receiver peak RSS; import of a JSON-lines file of `--import-mb` (spans/s, importer peak RSS);
- trace list / count over `--list-spans` stored spans, one 10,000-span trace fetch, and the
  cost aggregates (`usage_by`) over all of them.
Targets (design brief): 50,000 spans/s end to end on 2 cores; 1 GB import under 500 MB RSS;
trace list over 1,000,000 spans under 2 s; a 10,000-span trace fetched under 0.2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from janux.tracing import conventions as c
from janux.tracing.otlp import decode_proto_request
from janux.tracing.sources.protocol import USAGE_DIMENSIONS, TraceFilter
from janux.tracing.sources.store import TraceStore, open_store

SPANS_PER_REQUEST = 512
"""Spans per OTLP/HTTP request, as the OTel SDK's batch processor sends them."""
CLIENT_THREADS = 16
"""Concurrent sender threads (connections), like many instrumented processes exporting at once."""
_ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------------ span shapes


def _kv(key: str, value: Any) -> KeyValue:
    any_value = AnyValue()
    if isinstance(value, bool):
        any_value.bool_value = value
    elif isinstance(value, int):
        any_value.int_value = value
    elif isinstance(value, float):
        any_value.double_value = value
    elif isinstance(value, list):
        any_value.array_value.values.extend(AnyValue(string_value=v) for v in value)
    else:
        any_value.string_value = str(value)
    return KeyValue(key=key, value=any_value)


def _template(name: str, kind: int, attrs: dict[str, Any], events: list[tuple[str, dict[str, Any]]]) -> Span:
    span = Span(name=name, kind=kind)  # type: ignore[arg-type]
    span.attributes.extend(_kv(k, v) for k, v in attrs.items())
    for event_name, event_attrs in events:
        event = span.events.add(name=event_name)
        event.attributes.extend(_kv(k, v) for k, v in event_attrs.items())
    return span


def _handoff_events(status: str) -> list[tuple[str, dict[str, Any]]]:
    common = {
        c.JANUX_HANDOFF_ID: "h-1",
        c.JANUX_HANDOFF_CALL_ID: "call-1",
        c.JANUX_HANDOFF_KIND: c.KIND_DELEGATE,
        c.JANUX_HANDOFF_TOOL: "delegate.researcher",
        c.JANUX_HANDOFF_TARGET: "researcher",
        c.JANUX_HANDOFF_DEPTH: 1,
        c.JANUX_HANDOFF_SESSION_MODE: c.SESSION_NEW,
    }
    end = {
        **common,
        c.JANUX_HANDOFF_STATUS: status,
        c.JANUX_HANDOFF_ATTEMPTS: 2,
        c.JANUX_HANDOFF_DURATION_MS: 812,
    }
    return [
        (c.EVENT_HANDOFF_START, {**common, c.JANUX_HANDOFF_STATUS: c.STATUS_STARTING}),
        (c.EVENT_HANDOFF_END, end),
    ]


_AGENT = {
    c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
    c.JANUX_TURN_INPUT_TOKENS: 1200,
    c.JANUX_TURN_OUTPUT_TOKENS: 300,
    c.JANUX_TURN_COST: 0.0042,
    c.JANUX_TURN_ROUNDS: 3,
}
_ROOT_ATTRS = {
    **_AGENT,
    c.GEN_AI_AGENT_NAME: "planner",
    c.GEN_AI_CONVERSATION_ID: "conv-42",
    c.JANUX_AGENT_DEPTH: 0,
    c.JANUX_BILL_INPUT_TOKENS: 5000,
    c.JANUX_BILL_OUTPUT_TOKENS: 900,
    c.JANUX_BILL_COST: 0.017,
    c.JANUX_BILL_UNPRICED_TOKENS: 0,
}
_CHAT = {
    c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
    c.GEN_AI_PROVIDER_NAME: "openai",
    c.GEN_AI_REQUEST_MODEL: "gpt-4o",
    c.GEN_AI_RESPONSE_MODEL: "gpt-4o-2024-08-06",
    c.GEN_AI_RESPONSE_FINISH_REASONS: ["tool_calls"],
    c.GEN_AI_USAGE_INPUT_TOKENS: 400,
    c.GEN_AI_USAGE_OUTPUT_TOKENS: 100,
    c.GEN_AI_AGENT_NAME: "planner",
    c.JANUX_ROUND_COST: 0.0014,
}
_TOOL = {
    c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
    c.GEN_AI_TOOL_NAME: "search",
    c.GEN_AI_TOOL_CALL_ID: "call-7",
    c.GEN_AI_TOOL_TYPE: "function",
}
_DELEGATE = {
    c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
    c.GEN_AI_TOOL_NAME: "delegate.researcher",
    c.GEN_AI_TOOL_CALL_ID: "call-1",
    c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_DELEGATE,
    c.JANUX_HANDOFF_STATUS: c.STATUS_COMPLETED,
    c.JANUX_HANDOFF_ATTEMPTS: 2,
    c.JANUX_HANDOFF_TARGET: "researcher",
}
_ATTEMPT = {
    **_AGENT,
    c.GEN_AI_AGENT_NAME: "researcher",
    c.JANUX_HANDOFF_ATTEMPT: 1,
    c.JANUX_HANDOFF_ID: "h-1",
    c.JANUX_AGENT_DEPTH: 1,
    c.JANUX_BUDGET_MAX_TURNS: 8,
}


def _trace_templates() -> list[tuple[Span, int]]:
    """One janux turn of 20 spans: (template, index of its parent in the list or -1)."""
    root = _template("invoke_agent planner", 1, _ROOT_ATTRS, [])
    chat = _template("chat gpt-4o", 3, _CHAT, [])
    tool = _template("execute_tool search", 1, _TOOL, [])
    delegate = _template(
        "execute_tool delegate.researcher", 1, _DELEGATE, _handoff_events(c.STATUS_COMPLETED)
    )
    attempt = _template("invoke_agent researcher", 1, _ATTEMPT, [])
    shape = [(root, -1), (chat, 0), (chat, 0), (tool, 0), (tool, 0), (chat, 0), (delegate, 0), (delegate, 0)]
    for parent in (6, 7):
        first = len(shape)
        shape += [
            (attempt, parent),
            (chat, first),
            (chat, first),
            (tool, first),
            (chat, first),
            (tool, first),
        ]
    return shape


def span_stream(seed: int) -> Iterator[Span]:
    """An endless stream of janux-shaped spans with unique ids, trace after trace."""
    shape = _trace_templates()
    trace_no = 0
    base = 1_700_000_000_000_000_000 + seed * 10**15
    while True:
        trace_no += 1
        trace_id = (seed << 64 | trace_no).to_bytes(16, "big")
        ids = [(trace_no << 16 | i | 1 << 62).to_bytes(8, "big") for i in range(len(shape))]
        start = base + trace_no * 10_000_000
        for i, (template, parent) in enumerate(shape):
            span = Span()
            span.CopyFrom(template)
            span.trace_id = trace_id
            span.span_id = ids[i]
            if parent >= 0:
                span.parent_span_id = ids[parent]
            span.start_time_unix_nano = start + i * 1000
            span.end_time_unix_nano = start + 5_000_000 - i * 1000
            for event in span.events:
                event.time_unix_nano = start + i * 1000 + 1
            yield span


def request_bodies(count: int, seed: int, spans_per_request: int = SPANS_PER_REQUEST) -> list[bytes]:
    """`count` serialized ExportTraceServiceRequests of `spans_per_request` spans each."""
    stream = span_stream(seed)
    bodies = []
    for _ in range(count):
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.extend(
            [_kv(c.SERVICE_NAME, "bench-agent"), _kv("telemetry.sdk.language", "python"),
             _kv("telemetry.sdk.name", "opentelemetry"), _kv("telemetry.sdk.version", "1.45.2")]
        )  # fmt: skip
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = c.INSTRUMENTATION_SCOPE
        scope_spans.spans.extend(next(stream) for _ in range(spans_per_request))
        bodies.append(request.SerializeToString())
    return bodies


# ------------------------------------------------------------------------------------ baselines


def _decode_costs(bodies: list[bytes]) -> tuple[float, float]:
    """Spans/s of the bare protobuf parse and of our decode to records, over the same bodies."""
    spans = len(bodies) * SPANS_PER_REQUEST
    start = time.perf_counter()
    for body in bodies:
        ExportTraceServiceRequest.FromString(body)
    parse_s = time.perf_counter() - start
    start = time.perf_counter()
    for body in bodies:
        decode_proto_request(body)
    decode_s = time.perf_counter() - start
    return spans / parse_s, spans / decode_s


# ------------------------------------------------------------------------------------ receiver


def _peak_rss_mb(pid: int) -> float:
    """Peak resident set size of a live process (VmHWM), MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else float("nan")


def _start_collector(data_dir: Path, workers: int = 1) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "janux", "collect", "--data-dir", str(data_dir)]
    proc = subprocess.Popen(
        [*command, "--workers", str(workers), "--http-port", "0", "--grpc-port", "0"],
        cwd=_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"http://[^ ]+:(\d+)/v1/traces", line)
    if not match:
        proc.kill()
        raise RuntimeError(f"collector did not start: {line!r}")
    return proc, int(match.group(1))


def _send_all(port: int, bodies: list[bytes]) -> list[str]:
    """POST every body from CLIENT_THREADS threads; returns error descriptions (empty when all 200)."""
    url = f"http://127.0.0.1:{port}/v1/traces"
    lock = threading.Lock()
    pending = list(reversed(bodies))
    errors: list[str] = []

    def worker() -> None:
        """Send bodies until none is left."""
        with httpx.Client(timeout=120, headers={"content-type": "application/x-protobuf"}) as client:
            while True:
                with lock:
                    if not pending:
                        return
                    body = pending.pop()
                response = client.post(url, content=body)
                if response.status_code != 200:
                    with lock:
                        errors.append(f"{response.status_code}: {response.text[:200]}")

    threads = [threading.Thread(target=worker) for _ in range(CLIENT_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def bench_receiver(requests: int, work: Path, workers: int, bodies: list[bytes]) -> dict[str, float]:
    """Acknowledged and queryable spans/s through a `janux collect --workers N` subprocess."""
    data_dir = work / f"receiver-{workers}"
    proc, port = _start_collector(data_dir, workers)
    reader = open_store(data_dir)
    try:
        time.sleep(1.0)  # let worker processes finish importing before the clock starts
        expected = requests * SPANS_PER_REQUEST
        start = time.perf_counter()
        errors = _send_all(port, bodies)
        acked_s = time.perf_counter() - start
        while reader.ingest_stats().spans < expected and time.perf_counter() - start < acked_s + 30:
            time.sleep(0.01)
        queryable_s = time.perf_counter() - start
        stored = reader.ingest_stats().spans
        rss = sum(_peak_rss_mb(pid) for pid in _process_tree(proc.pid))
    finally:
        reader.close()
        proc.terminate()
        proc.wait(30)
    if errors or stored != expected:
        raise RuntimeError(f"receiver bench lost data: stored {stored}/{expected}, errors {errors[:3]}")
    return {
        "workers": workers, "spans": expected, "acked_rate": expected / acked_s,
        "queryable_rate": expected / queryable_s, "rss_mb": rss,
    }  # fmt: skip


def _process_tree(pid: int) -> list[int]:
    """`pid` and its direct children (the collector's worker processes)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.append(int(entry.name))
    return [pid, *children]


# ------------------------------------------------------------------------------------ import


def _hex_ids(doc: dict[str, Any]) -> dict[str, Any]:
    """Protobuf's JSON mapping writes ids as base64; OTLP/JSON files carry hex."""
    import base64

    for resource in doc["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return doc


def write_jsonl(path: Path, megabytes: int) -> int:
    """A Collector-style OTLP/JSON-lines file of about `megabytes`; returns its span count."""
    from google.protobuf.json_format import MessageToDict

    body = request_bodies(1, seed=7)[0]
    doc = _hex_ids(MessageToDict(ExportTraceServiceRequest.FromString(body)))
    line = json.dumps(doc, separators=(",", ":")) + "\n"
    marker = f'"traceId":"{7:016x}'
    target = megabytes * 1024 * 1024
    written = lines = 0
    with path.open("w") as out:
        while written < target:
            lines += 1
            # Only the trace id's high half changes: (trace id, span id) stays unique per line.
            text = line.replace(marker, f'"traceId":"{lines + 1000:016x}')
            out.write(text)
            written += len(text)
    return lines * SPANS_PER_REQUEST


def bench_import(megabytes: int, work: Path) -> dict[str, float]:
    """`janux import` of a JSON-lines file in a subprocess: spans/s and the importer's peak RSS."""
    path = work / "import.jsonl"
    spans = write_jsonl(path, megabytes)
    size_mb = path.stat().st_size / 1024 / 1024
    command = [sys.executable, "-m", "janux", "import", str(path), "--data-dir", str(work / "import")]
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    path.unlink()
    if proc.returncode != 0:
        raise RuntimeError(f"import failed with status {proc.returncode}")
    return {"size_mb": size_mb, "spans": spans, "rate": spans / elapsed, "rss_mb": usage.ru_maxrss / 1024}


# ------------------------------------------------------------------------------------ queries


def _populate(store: TraceStore, spans: int) -> float:
    """Write `spans` janux-shaped spans through the store API; returns spans/s."""
    templates = decode_proto_request(request_bodies(1, seed=3)[0]).spans
    written = 0
    start = time.perf_counter()
    trace_no = 0
    while written < spans:
        batch: list[Any] = []
        while len(batch) < 20_000 and written + len(batch) < spans:
            trace_no += 1
            prefix = f"{trace_no:016x}"
            batch.extend(_retrace(t, prefix + t.trace_id[16:]) for t in templates)
        store.write(batch)
        written += len(batch)
    return written / (time.perf_counter() - start)


def _populate_foreign(data_dir: Path, spans: int) -> tuple[float, float]:
    """Spans/s of the store's write path for traces without Janux accounting (each batch's traces
    are read whole again, `store/derive.py`) and, in the same run, for the same traces with it."""
    from janux.tracing.testing import synthetic_trace

    rates = []
    for janux in (False, True):
        traces = [synthetic_trace(200, seed=seed, janux=janux) for seed in range(max(1, spans // 200))]
        flat = [span for trace in traces for span in trace]
        with open_store(data_dir / ("janux" if janux else "foreign")) as store:
            start = time.perf_counter()
            for first in range(0, len(flat), SPANS_PER_REQUEST):
                store.write(flat[first : first + SPANS_PER_REQUEST])
            rates.append(len(flat) / (time.perf_counter() - start))
    return rates[0], rates[1]


def _retrace(template: Any, trace_id: str) -> Any:
    from dataclasses import replace

    return replace(template, trace_id=trace_id)


def _big_trace(store: TraceStore, size: int) -> str:
    """Store one trace of `size` spans; returns its id."""
    templates = decode_proto_request(request_bodies(1, seed=5)[0]).spans
    trace_id = "f" * 32
    spans = []
    for i in range(size):
        template = templates[i % len(templates)]
        parent = "" if i == 0 else f"{(i - 1) // 4 + 1:016x}"
        spans.append(_retrace_full(template, trace_id, f"{i + 1:016x}", parent))
    store.write(spans)
    return trace_id


def _retrace_full(template: Any, trace_id: str, span_id: str, parent: str) -> Any:
    from dataclasses import replace

    return replace(template, trace_id=trace_id, span_id=span_id, parent_span_id=parent)


def _median(fn: Any, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def bench_queries(spans: int, work: Path) -> dict[str, float]:
    """Trace list over `spans` stored spans and a 10,000-span trace fetch, from a reading process."""
    data_dir = work / "queries"
    with open_store(data_dir) as store:
        write_rate = _populate(store, spans)
    foreign_rate, janux_rate = _populate_foreign(work / "foreign", min(spans, 40_000))
    with open_store(data_dir) as store:
        trace_id = _big_trace(store, 10_000)
    with open_store(data_dir) as reader:
        flt = TraceFilter()
        filtered = TraceFilter(root_agent="planner", min_cost=0.01)
        return {
            "spans": reader.ingest_stats().spans, "write_rate": write_rate, "foreign_rate": foreign_rate,
            "janux_rate": janux_rate,
            "list_s": _median(lambda: reader.list_traces(flt, 50)),
            "list_page_s": _median(lambda: reader.list_traces(flt, 50, 5000)),
            "count_s": _median(lambda: reader.count_traces(flt)),
            "filter_s": _median(lambda: reader.list_traces(filtered, 50)),
            "trace_s": _median(lambda: reader.get_trace(trace_id)),
            "trace_spans": len(reader.get_trace(trace_id)),
            **{f"usage_{d}_s": _median(lambda d=d: reader.usage_by(d, flt), 3) for d in USAGE_DIMENSIONS},
        }  # fmt: skip


# ------------------------------------------------------------------------------------ report


def _receiver_rows(
    runs: list[dict[str, float]], parse_rate: float, decode_rate: float
) -> list[tuple[str, str, str]]:
    rows = []
    for run in runs:
        label = f"OTLP/HTTP protobuf -> durable, {run['workers']:.0f} process(es)"
        ratio = parse_rate / run["acked_rate"]
        rows += [
            (label, f"{run['acked_rate']:,.0f} spans/s",
             f"raw parse {ratio:,.0f}x faster; target 50,000; {run['spans']:,.0f} spans"),
            ("... and queryable", f"{run['queryable_rate']:,.0f} spans/s",
             f"peak RSS {run['rss_mb']:,.0f} MiB (all processes)"),
        ]  # fmt: skip
    rows += [
        ("baseline: protobuf parse (FromString)", f"{parse_rate:,.0f} spans/s", "same bodies, 1 thread"),
        (
            "baseline: our decode to SpanRecord",
            f"{decode_rate:,.0f} spans/s",
            f"raw parse {parse_rate / decode_rate:,.0f}x faster",
        ),
    ]
    return rows


def _table(
    runs: list[dict[str, float]],
    rates: tuple[float, float],
    imported: dict[str, float],
    queries: dict[str, float],
) -> str:
    rows = _receiver_rows(runs, *rates)
    rows += [
        (f"import {imported['size_mb']:,.0f} MiB JSON lines", f"{imported['rate']:,.0f} spans/s",
         f"{imported['spans']:,.0f} spans; peak RSS {imported['rss_mb']:,.0f} MiB (target < 500 for 1 GiB)"),
        ("store write, in-process", f"{queries['write_rate']:,.0f} spans/s", "populating the query store"),
        ("store write, other runtimes' traces", f"{queries['foreign_rate']:,.0f} spans/s",
         f"read whole after each batch; with Janux accounting: {queries['janux_rate']:,.0f} spans/s"),
        (f"trace list, first page, {queries['spans']:,} spans", f"{queries['list_s'] * 1000:,.1f} ms",
         "target < 2 s"),
        ("trace list, page 100", f"{queries['list_page_s'] * 1000:,.1f} ms", ""),
        ("trace count (no filter)", f"{queries['count_s'] * 1000:,.1f} ms", ""),
        ("trace list, root_agent + min_cost filter", f"{queries['filter_s'] * 1000:,.1f} ms", ""),
        (f"fetch one {queries['trace_spans']:,.0f}-span trace", f"{queries['trace_s'] * 1000:,.1f} ms",
         "target < 200 ms"),
        *((f"usage_by {d}, all traces", f"{queries[f'usage_{d}_s'] * 1000:,.1f} ms", "cost page aggregates")
          for d in USAGE_DIMENSIONS),
    ]  # fmt: skip
    lines = ["| measure | result | note |", "| --- | --- | --- |"]
    lines += [f"| {a} | {b} | {n} |" for a, b, n in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run every part and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes (CI smoke run)")
    parser.add_argument("--requests", type=int, default=None, help="OTLP/HTTP requests of 512 spans")
    parser.add_argument("--import-mb", type=int, default=None, help="size of the JSON-lines import file")
    parser.add_argument("--list-spans", type=int, default=None, help="spans stored for the query part")
    args = parser.parse_args(argv)
    requests = args.requests or (60 if args.quick else 400)
    import_mb = args.import_mb or (20 if args.quick else 200)
    list_spans = args.list_spans or (100_000 if args.quick else 1_000_000)
    with tempfile.TemporaryDirectory(prefix="janux-bench-") as tmp:
        work = Path(tmp)
        bodies = request_bodies(requests, seed=1)
        rates = _decode_costs(bodies[: max(20, requests // 5)])
        runs = [bench_receiver(requests, work, workers, bodies) for workers in (1, 2)]
        imported = bench_import(import_mb, work)
        queries = bench_queries(list_spans, work)
    python = sys.version.split()[0]
    print(f"## ingest ({os.cpu_count()} CPUs, Python {python}, {CLIENT_THREADS} client threads)\n")
    print(_table(runs, rates, imported, queries))


if __name__ == "__main__":
    main()
