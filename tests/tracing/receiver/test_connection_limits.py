"""Connection floods on loopback: silent, stalled and slow connections are closed, a flood that
exhausts file descriptors neither locks clients out nor fills the log, and many large bodies at
once stay within the memory budget."""

from __future__ import annotations

import resource
import selectors
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest

from janux.tracing.receiver import ReceiverLimits, RunningReceiver, start_receiver
from janux.tracing.sources.store import TraceStore
from tests.support.hostile import valid_request
from tests.support.otlp_build import pb_request, pb_span, start_collect
from tests.support.receiver_process import grpc_export, peak_rss_mib
from tests.support.wait import wait_until

PROTO = {"content-type": "application/x-protobuf"}
SHORT = ReceiverLimits(header_timeout_s=1.0, body_timeout_s=1.0, keep_alive_s=1.0)


@pytest.fixture
def short_receiver(store: TraceStore) -> Iterator[RunningReceiver]:
    """A receiver that waits one second for a request head, a body, or the next request."""
    running = start_receiver(store, "127.0.0.1", 0, 0, limits=SHORT)
    yield running
    running.stop()


def _open(port: int, count: int, first_bytes: bytes = b"") -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if first_bytes:
            sock.sendall(first_bytes)
        sockets.append(sock)
    return sockets


def _closed_by_server(sockets: list[socket.socket], timeout_s: float) -> list[bytes]:
    """Wait until the server closed every socket; return what each received before the close."""
    selector = selectors.DefaultSelector()
    received = {sock: b"" for sock in sockets}
    for sock in sockets:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    while selector.get_map() and time.monotonic() < deadline:
        for key, _ in selector.select(0.1):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                data = sock.recv(65536)
            except (ConnectionResetError, BlockingIOError):
                data = b""
            received[sock] += data
            if not data:
                selector.unregister(sock)
    still_open = len(selector.get_map())
    selector.close()
    for sock in sockets:
        sock.close()
    assert still_open == 0, f"{still_open} of {len(sockets)} connections still open after {timeout_s} s"
    return list(received.values())


def test_silent_stalled_and_slow_connections_are_closed(short_receiver: RunningReceiver) -> None:
    port = short_receiver.http_port
    assert port is not None
    head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
    silent = _open(port, 100)
    stalled_head = _open(port, 100, head)
    slow_body = _open(port, 100, head + b"Content-Length: 1000\r\n\r\n" + b"\x0a" * 10)
    kept_alive = _open(port, 1, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    answers = _closed_by_server(silent + stalled_head + slow_body + kept_alive, timeout_s=20)
    assert not any(answers[:200])  # nothing to answer: just closed
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in answers[200:300])
    assert answers[300].startswith(b"HTTP/1.1 200 ")
    ok = httpx.post(f"http://127.0.0.1:{port}/v1/traces", content=valid_request(3), headers=PROTO)
    assert ok.status_code == 200


def test_a_silent_flood_cannot_lock_a_client_out(store: TraceStore) -> None:
    limits = ReceiverLimits(max_connections=8, header_timeout_s=60)
    with start_receiver(store, "127.0.0.1", 0, None, limits=limits) as running:
        flood = _open(running.http_port or 0, 40)
        # Each new connection pushes out the longest-silent one; the client's own is never idle long.
        with httpx.Client(headers=PROTO, timeout=30) as client:
            for n in range(5):
                response = client.post(f"http://127.0.0.1:{running.http_port}/v1/traces",
                                       content=valid_request(2, first=1 + 2 * n))  # fmt: skip
                assert response.status_code == 200
        for sock in flood:
            sock.close()
    assert store.ingest_stats().spans == 10


def _keep_file_limit(at_least: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < at_least:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, at_least), hard))


def test_exhausted_descriptors_neither_lock_clients_out_nor_fill_the_log(tmp_path: Path) -> None:
    _keep_file_limit(4096)
    stderr = tmp_path / "collect.err"

    def limit_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    proc, http_port, grpc_port = start_collect(
        tmp_path / "data", "--workers", "1", "--header-timeout", "2",
        preexec_fn=limit_files, stderr_path=stderr,
    )  # fmt: skip
    try:
        flood = _open(http_port, 1050) + _open(grpc_port, 1050)  # four times the descriptors it has
        served = _retry_until_served(http_port, grpc_port, timeout_s=60)
        _closed_by_server(flood, timeout_s=30)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    log = stderr.read_text()
    assert served == {"http": 200, "grpc": "ok"}
    assert len(log) < 32_000, f"{len(log)} bytes of log: {log[:2000]}"
    assert log.count("out of system resource") <= 2 and "Traceback" not in log


def _retry_until_served(http_port: int, grpc_port: int, timeout_s: float) -> dict[str, object]:
    """Send like an OTLP client: retry refused, reset, 503 and UNAVAILABLE until it gets through."""
    served: dict[str, object] = {}

    def http_served() -> bool:
        try:
            response = httpx.post(f"http://127.0.0.1:{http_port}/v1/traces", content=valid_request(4),
                                  headers=PROTO, timeout=5)  # fmt: skip
        except httpx.HTTPError:
            return False
        served["http"] = response.status_code
        return response.status_code != 503

    def grpc_served() -> bool:
        answer = grpc_export(grpc_port, valid_request(4, first=10), timeout_s=5)
        if isinstance(answer, grpc.RpcError):
            return False
        served["grpc"] = "ok"
        return True

    wait_until(http_served, timeout_s=timeout_s, interval_s=0.2, what="an HTTP export to get through")
    wait_until(grpc_served, timeout_s=timeout_s, interval_s=0.2, what="a gRPC export to get through")
    return served


def test_many_large_bodies_at_once_stay_within_the_memory_budget(tmp_path: Path) -> None:
    proc, http_port, _ = start_collect(tmp_path / "data", "--workers", "1", "--memory-budget-mb", "64",
                                       "--grpc-port", "0")  # fmt: skip
    big = "x" * (12 * 1024 * 1024)
    statuses: list[int] = []
    lock = threading.Lock()

    def send(n: int) -> None:
        span = pb_span(f"{n + 1:032x}", f"{n + 1:016x}", attrs={"blob": big})
        body = pb_request([span]).SerializeToString()
        with httpx.Client(timeout=120) as client:
            for _ in range(20):  # an OTLP client retries 503 with backoff
                status = client.post(f"http://127.0.0.1:{http_port}/v1/traces", content=body,
                                     headers=PROTO).status_code  # fmt: skip
                if status != 503:
                    break
                time.sleep(0.5)
        with lock:
            statuses.append(status)

    try:
        # The process's own size (imports, store, one large body's peak) varies with the code and
        # the machine; what the budget bounds is what concurrency adds on top of it.
        send(100)
        alone = peak_rss_mib(proc.pid)
        senders = [threading.Thread(target=send, args=(n,)) for n in range(12)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join(300)
        together = peak_rss_mib(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert statuses == [200] * 13
    # Unbounded, 12 bodies at once add ~150 MiB over one alone (measured); bounded, under 10 MiB:
    # what concurrency adds stays within the budget.
    added = together - alone
    assert added < 64, f"12 bodies at once added {added:.0f} MiB ({alone:.0f} -> {together:.0f})"


def test_the_open_file_limit_lowers_the_connection_cap() -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    fitted = ReceiverLimits(max_connections=10**6).fitted_to_open_files()
    assert fitted.max_connections <= soft // 2
