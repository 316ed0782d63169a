"""Hostile input: how fast bombs are refused, what /health and memory do meanwhile, and what
reading a compressed trace file costs next to the same file uncompressed.

Run: `.venv/bin/python -m bench.bench_hostile [--quick]`. Prints a markdown table. Same-run baselines:
- the receiver (`janux collect --workers 1`): /health answer times and peak RSS while idle, then
  while four 16 KB gzip bodies of 16 MiB of empty spans, 16 MiB of JSON `{}` spans and the same
  16 MiB over gRPC arrive together; the time each takes to be refused; an ordinary 512-span
  request before and after;
- the receiver under a burst of 64 concurrent 15 MiB OTLP/gRPC Export calls (a 128 MiB budget):
  what the burst adds to the peak RSS and what stays once it is over, against one call alone;
- `TraceFile` reading 256 MiB of JSON lines (a ~24 KB .zst: the case of issue 10) and one
  256 MiB line over the record limit (pure streaming) from a .zst against the same bytes
  uncompressed: time and peak RSS, each in a fresh process.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import grpc
import httpx
import zstandard
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

_ROOT = Path(__file__).resolve().parent.parent
_MIB = 1024 * 1024
_BOMB = 16 * _MIB - 64
_PROTO = {"content-type": "application/x-protobuf"}


def _field(tag: int, payload: bytes) -> bytes:
    out = bytearray([tag])
    size = len(payload)
    while True:
        low, size = size & 0x7F, size >> 7
        out.append(low | (0x80 if size else 0))
        if not size:
            return bytes(out) + payload


def _empty_spans() -> bytes:
    return _field(0x0A, _field(0x12, b"\x12\x00" * ((_BOMB - 12) // 2)))


def _json_bomb() -> bytes:
    head, tail = b'{"resourceSpans":[{"scopeSpans":[{"spans":[', b"]}]}]}"
    return head + b",".join([b"{}"] * ((_BOMB - len(head) - len(tail)) // 3)) + tail


def _ordinary() -> bytes:
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for n in range(512):
        spans.append(Span(trace_id=(n // 8 + 1).to_bytes(16, "big"), span_id=(n + 1).to_bytes(8, "big"),
                          name=f"span {n}", start_time_unix_nano=1, end_time_unix_nano=2))  # fmt: skip
    return request.SerializeToString()


_POLLER = """
import http.client, json, sys, threading, time
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
stop, out = threading.Event(), []
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
print("ready", flush=True)
while not stop.is_set():
    started = time.perf_counter()
    conn.request("GET", "/health"); conn.getresponse().read()
    out.append(time.perf_counter() - started)
    time.sleep(0.005)
print(json.dumps(out), flush=True)
"""


def _health_while(port: int, action: object) -> list[float]:
    poller = subprocess.Popen([sys.executable, "-c", _POLLER, str(port)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert poller.stdout is not None and poller.stdout.readline().strip() == "ready"
    action()  # type: ignore[operator]
    out, _ = poller.communicate("", timeout=120)
    return list(json.loads(out.strip().splitlines()[-1]))


def _peak_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("VmHWM")).split()[1]) / 1024


def _start(data_dir: Path) -> tuple[subprocess.Popen[str], int, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "janux", "collect", "--data-dir", str(data_dir), "--http-port", "0",
         "--grpc-port", "0", "--workers", "1"],
        cwd=_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    http_port = int(line.split("/v1/traces")[0].rsplit(":", 1)[1])
    grpc_port = int(line.split("OTLP/gRPC on ")[1].split(",")[0].rsplit(":", 1)[1])
    return proc, http_port, grpc_port


_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _grpc_export(port: int, body: bytes) -> None:
    options = [("grpc.max_send_message_length", 64 << 20)]
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        call = channel.unary_unary(_EXPORT, request_serializer=None, response_deserializer=None)
        with contextlib.suppress(grpc.RpcError):  # refused, as expected: only the time is measured
            call(body, timeout=300, compression=grpc.Compression.Gzip)


def _attack(http_port: int, grpc_port: int, times: dict[str, float]) -> None:
    """Send the six hostile bodies at once; record how long each took to be answered."""
    url = f"http://127.0.0.1:{http_port}/v1/traces"
    bomb, json_bomb, raw = gzip.compress(_empty_spans(), 9), _json_bomb(), _empty_spans()
    gzipped = {**_PROTO, "content-encoding": "gzip"}
    post_bomb = partial(httpx.post, url, content=bomb, headers=gzipped, timeout=300)
    sends: dict[str, Callable[[], object]] = {
        **{f"gzip {n}": post_bomb for n in range(4)},
        "json": partial(httpx.post, url, content=json_bomb, headers={"content-type": "application/json"},
                        timeout=300),
        "grpc": partial(_grpc_export, grpc_port, raw),
    }  # fmt: skip

    def timed(name: str) -> None:
        started = time.perf_counter()
        sends[name]()
        times[name] = time.perf_counter() - started

    senders = [threading.Thread(target=timed, args=(name,)) for name in sends]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()


def bench_receiver(work: Path) -> list[tuple[str, str, str]]:
    """Rows about the receiver under hostile bodies, with its idle figures as the baseline."""
    proc, http_port, grpc_port = _start(work / "data")
    url = f"http://127.0.0.1:{http_port}/v1/traces"
    ordinary = _ordinary()
    times: dict[str, float] = {}
    try:
        started = time.perf_counter()
        httpx.post(url, content=ordinary, headers=_PROTO)
        before = time.perf_counter() - started
        idle = _health_while(http_port, lambda: time.sleep(1.0))
        idle_peak = _peak_mib(proc.pid)
        during = _health_while(http_port, lambda: _attack(http_port, grpc_port, times))
        peak = _peak_mib(proc.pid)
        started = time.perf_counter()
        httpx.post(url, content=ordinary, headers=_PROTO)
        after = time.perf_counter() - started
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    idle_ms = f"idle: median {statistics.median(idle) * 1000:.1f} ms, max {max(idle) * 1000:.1f} ms"
    return [
        ("refusal of 6 hostile bodies at once (16 KB gzip -> 16 MiB of empty spans x4, "
         "16 MiB of JSON {} spans, 16 MiB over gRPC)", f"slowest {max(times.values()):.2f} s "
         f"({', '.join(f'{name} {took:.2f} s' for name, took in sorted(times.items()))})",
         "requirement: < 1 s each; before: 33-42 s each"),
        ("/health while they arrive", f"median {statistics.median(during) * 1000:.1f} ms, "
         f"max {max(during) * 1000:.1f} ms ({len(during)} answers)", f"{idle_ms}; requirement 100 ms"),
        ("receiver peak RSS", f"{peak:.0f} MiB", f"idle: {idle_peak:.0f} MiB; requirement < 300 MiB"),
        ("512-span request", f"after {after * 1000:.0f} ms", f"before {before * 1000:.0f} ms"),
    ]  # fmt: skip


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS")).split()[1]) / 1024


def bench_grpc_burst(work: Path, calls: int = 64) -> list[tuple[str, str, str]]:
    """Rows about a burst of large gRPC calls under a 128 MiB budget, one call alone as the baseline."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "janux", "collect", "--data-dir", str(work / "burst"), "--http-port", "0",
         "--grpc-port", "0", "--workers", "1", "--memory-budget-mb", "128"],
        cwd=_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    grpc_port = int(proc.stdout.readline().split("OTLP/gRPC on ")[1].split(",")[0].rsplit(":", 1)[1])
    message = _field(0x0A, _field(0x12, b"\x12\x00" * ((15 * _MIB - 12) // 2)))
    try:
        _grpc_export(grpc_port, message)
        alone_peak, alone_rss = _peak_mib(proc.pid), _rss_mib(proc.pid)
        started = time.perf_counter()
        callers = [threading.Thread(target=_grpc_export, args=(grpc_port, message)) for _ in range(calls)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
        took = time.perf_counter() - started
        burst_peak = _peak_mib(proc.pid)
        time.sleep(3.0)  # the heap is trimmed about a second after the budget empties
        after = _rss_mib(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    return [
        (f"gRPC burst: {calls} x 15 MiB Export calls at once, 128 MiB budget",
         f"peak +{burst_peak - alone_peak:.0f} MiB ({took:.1f} s), "
         f"{after - alone_rss:+.0f} MiB kept after 3 s",
         f"one call alone: peak {alone_peak:.0f} MiB; before the gRPC budget: +400 MiB, 210 MiB kept"),
    ]  # fmt: skip


_READ = """
import sys, time
from janux.tracing.otlp.files import TraceFile
started = time.perf_counter()
spans = 0
with TraceFile(sys.argv[1], max_record_bytes=int(sys.argv[2])) as f:
    for record in f.records():
        spans += len(record.result.spans) if record.result else 0
peak = next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]
print(f"{time.perf_counter() - started} {int(peak) // 1024} {spans}")
"""


def _read(path: Path, max_record: int) -> tuple[float, int, int]:
    out = subprocess.run([sys.executable, "-c", _READ, str(path), str(max_record)], cwd=_ROOT,
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    return float(out[0]), int(out[1]), int(out[2])


def bench_files(work: Path, size_mib: int, lines_mib: int) -> list[tuple[str, str, str]]:
    """Rows about reading a .zst against the same bytes uncompressed."""
    rows = []
    line = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "x",
        "attributes": [{"key": "k", "value": {"stringValue": "v" * 60}}]}]}]}]}).encode() + b"\n"  # fmt: skip
    long_line = b'{"resourceSpans": "' + b"x" * (size_mib * _MIB) + b'"}\n'
    cases = (
        (f"{lines_mib} MiB of JSON lines", line * (lines_mib * _MIB // len(line)), 256 * _MIB),
        (f"one {size_mib} MiB line (over a 1 MiB record limit, skipped)", long_line, _MIB),
    )
    for label, content, max_record in cases:
        plain, packed = work / "plain.jsonl", work / "packed.jsonl.zst"
        plain.write_bytes(content)
        packed.write_bytes(zstandard.ZstdCompressor(level=19).compress(content))
        del content
        base_s, base_rss, spans = _read(plain, max_record)
        zst_s, zst_rss, zst_spans = _read(packed, max_record)
        assert spans == zst_spans
        rows.append((f"read {label} from a {packed.stat().st_size / 1024:,.0f} KB .zst",
                     f"{zst_s:.2f} s, peak {zst_rss} MiB ({zst_s / base_s:.2f}x)",
                     f"uncompressed: {base_s:.2f} s, peak {base_rss} MiB; requirement < 2x"))  # fmt: skip
        plain.unlink()
        packed.unlink()
    return rows


def main(argv: list[str] | None = None) -> None:
    """Run both parts and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller files (CI smoke run)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="janux-bench-") as tmp:
        work = Path(tmp)
        rows = bench_receiver(work)
        rows += bench_grpc_burst(work)
        rows += bench_files(work, 64 if args.quick else 256, 32 if args.quick else 256)
    print(f"## hostile input ({os.cpu_count()} CPUs, Python {sys.version.split()[0]})\n")
    print("| measure | result | baseline in the same run |\n| --- | --- | --- |")
    for measure, result, baseline in rows:
        print(f"| {measure} | {result} | {baseline} |")


if __name__ == "__main__":
    main()
