"""A `janux collect` child process to attack, and measurements taken from outside it.

The health poller runs in its own process, so what it measures is the receiver's answer time,
not the test process's own threads competing for the GIL.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import grpc

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
"""The OTLP/gRPC method, called with raw bytes."""

_POLLER = """
import http.client, json, sys, threading, time
host, port = sys.argv[1], int(sys.argv[2])
latencies, errors, stop = [], [], threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
conn = http.client.HTTPConnection(host, port, timeout=30)
print("ready", flush=True)
while not stop.is_set():
    started = time.perf_counter()
    try:
        conn.request("GET", "/health")
        ok = conn.getresponse().read() == b'{"status":"ok"}'
    except OSError as err:
        errors.append(repr(err)); conn.close(); conn = http.client.HTTPConnection(host, port, timeout=30)
        continue
    latencies.append(time.perf_counter() - started)
    if not ok:
        errors.append("unexpected answer")
    time.sleep(0.005)
print(json.dumps({"latencies": latencies, "errors": errors}), flush=True)
"""


@dataclass
class HealthLog:
    """What the poller saw: one latency per answered `GET /health`, and any failure."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def median_s(self) -> float:
        """Median answer time."""
        ordered = sorted(self.latencies)
        return ordered[len(ordered) // 2]


@contextmanager
def polling_health(port: int) -> Iterator[HealthLog]:
    """Poll `GET /health` on 127.0.0.1:`port` from a child process while the block runs."""
    log = HealthLog()
    poller = subprocess.Popen(
        [sys.executable, "-c", _POLLER, "127.0.0.1", str(port)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert poller.stdin is not None and poller.stdout is not None
    try:
        assert poller.stdout.readline().strip() == "ready"
        yield log
    finally:
        out, _ = poller.communicate("", timeout=120)
        result = json.loads(out.strip().splitlines()[-1])
        log.latencies.extend(result["latencies"])
        log.errors.extend(result["errors"])


def peak_rss_mib(pid: int) -> float:
    """The highest resident memory the process ever had (VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM"))
    return int(line.split()[1]) / 1024


def rss_mib(pid: int) -> float:
    """The process's resident memory right now (VmRSS), in MiB."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


def grpc_export(port: int, body: bytes, timeout_s: float = 60.0, **kwargs: object) -> grpc.RpcError | bytes:
    """One raw OTLP/gRPC Export call; its answer, or the error it ended with."""
    options = [("grpc.max_send_message_length", 64 << 20)]
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        call = channel.unary_unary(EXPORT_METHOD, request_serializer=None, response_deserializer=None)
        try:
            answer: bytes = call(body, timeout=timeout_s, **kwargs)
        except grpc.RpcError as error:
            return error
        return answer
