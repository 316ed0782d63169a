"""`janux collect` as a subprocess, killed with SIGKILL: every acknowledged span survives."""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from tests.support.otlp_build import numbered_spans, pb_request, record, start_collect
from tests.support.wait import wait_until

SPANS_PER_REQUEST = 50


@pytest.mark.parametrize("workers", [1, 2])
def test_sigkill_right_after_acks_loses_nothing(tmp_path: Path, workers: int) -> None:
    proc, http_port, _ = start_collect(tmp_path / "data", "--workers", str(workers))
    url = f"http://127.0.0.1:{http_port}/v1/traces"
    acknowledged: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()

    def sender(first_trace: int) -> None:
        with httpx.Client(timeout=30, headers={"content-type": "application/x-protobuf"}) as client:
            trace_no = first_trace
            while not stop.is_set():
                body = pb_request(numbered_spans(SPANS_PER_REQUEST, trace_no)).SerializeToString()
                try:
                    response = client.post(url, content=body)
                except httpx.HTTPError:
                    return
                if response.status_code == 200:
                    with lock:
                        acknowledged.append(trace_no)
                trace_no += SPANS_PER_REQUEST // 10 * 2  # two senders interleave their trace numbers

    threads = [threading.Thread(target=sender, args=(1 + 5 * i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(acknowledged) >= 30, interval_s=0.005, what="30 acknowledged requests")
    proc.send_signal(signal.SIGKILL)  # while both senders are mid-request
    stop.set()
    for thread in threads:
        thread.join(30)
    proc.wait(30)
    assert _port_closed(http_port), "a worker process outlived its killed receiver"
    with open_store(tmp_path / "data") as store:
        stored = {s.trace_id for s in store.list_traces(TraceFilter(), limit=100_000)}
        for trace_no in acknowledged:
            for offset in range(SPANS_PER_REQUEST // 10):
                trace_id = f"{trace_no + offset:032x}"
                assert trace_id in stored, f"acknowledged trace {trace_id} lost"
                assert len(store.get_trace(trace_id)) == 10
        assert store.ingest_stats().spans % SPANS_PER_REQUEST == 0


def _port_closed(port: int) -> bool:
    """Worker processes share the listening socket: the port closes only when all of them died."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_collect_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    proc, http_port, grpc_port = start_collect(tmp_path / "data", "--token", "t0k")
    body = pb_request(numbered_spans(10)).SerializeToString()
    headers = {"content-type": "application/x-protobuf", "authorization": "Bearer t0k"}
    assert (
        httpx.post(f"http://127.0.0.1:{http_port}/v1/traces", content=body, headers=headers).status_code
        == 200
    )
    assert grpc_port > 0
    with open_store(tmp_path / "data") as reader:  # another process reads them as soon as acknowledged
        assert reader.ingest_stats().spans == 10 and reader.count_traces(TraceFilter()) == 1
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "stopped" in out
    with open_store(tmp_path / "data") as store:
        assert store.ingest_stats().spans == 10


def test_retention_setting_prunes_old_traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "data"
    with open_store(data_dir) as store:
        store.write([record("1" * 16, trace_id="1" * 32, start=1_700_000_000_000_000_000)])  # Nov 2023
        store.write([record("2" * 16, trace_id="2" * 32, start=time.time_ns())])
    monkeypatch.setenv("JANUX_RETENTION_DAYS", "30")
    proc, _, _ = start_collect(data_dir, "--workers", "1")
    try:
        with open_store(data_dir) as reader:
            deadline = time.monotonic() + 60
            while reader.count_traces(TraceFilter()) > 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert [s.trace_id for s in reader.list_traces(TraceFilter())] == ["2" * 32]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
