"""Bodies that are small as sent and huge as decoded, against a real `janux collect` on loopback:
each is refused naming the limit, while `/health` keeps answering and memory stays low. How fast
(refusal time, /health latency) is measured by `bench/bench_hostile.py`, not asserted here."""

from __future__ import annotations

import gzip
import signal
import threading
import time
from pathlib import Path

import grpc
import httpx
from google.rpc.status_pb2 import Status

from janux.tracing.sources.store import open_store
from tests.support.hostile import empty_spans, gzip_bomb, json_empty_spans, valid_request
from tests.support.otlp_build import start_collect
from tests.support.receiver_process import grpc_export, peak_rss_mib, polling_health

PROTO = {"content-type": "application/x-protobuf"}
NO_HANG_S = 15.0
"""Only "no hang": refusals take 0.1-0.4 s (bench/bench_hostile.py), decoding these bodies whole
took 33-42 s each."""
HEALTH_NO_HANG_S = 10.0
"""Only "no hang": /health answers in milliseconds meanwhile (bench/bench_hostile.py)."""
PEAK_RSS_MIB = 300


def test_bombs_are_refused_fast_while_health_answers_and_memory_stays_low(tmp_path: Path) -> None:
    proc, http_port, grpc_port = start_collect(tmp_path / "data", "--workers", "1")
    url = f"http://127.0.0.1:{http_port}/v1/traces"
    bomb, json_bomb, raw = gzip_bomb(), json_empty_spans(), empty_spans()
    assert len(bomb) < 20_000 and len(raw) > 16_000_000
    answers: dict[str, tuple[int, str, float]] = {}

    def post(name: str, body: bytes, headers: dict[str, str]) -> None:
        started = time.monotonic()
        response = httpx.post(url, content=body, headers=headers, timeout=120)
        is_json = name == "json"
        message = response.json()["message"] if is_json else Status.FromString(response.content).message
        answers[name] = (response.status_code, message, time.monotonic() - started)

    def call_grpc() -> None:
        started = time.monotonic()
        error = grpc_export(grpc_port, raw, compression=grpc.Compression.Gzip)
        assert isinstance(error, grpc.RpcError)
        answers["grpc"] = (error.code().value[0], error.details() or "", time.monotonic() - started)

    senders = [threading.Thread(target=post, args=(f"gzip{n}", bomb, {**PROTO, "content-encoding": "gzip"}))
               for n in range(4)]  # fmt: skip
    json_headers = {"content-type": "application/json"}
    senders.append(threading.Thread(target=post, args=("json", json_bomb, json_headers)))
    senders.append(threading.Thread(target=call_grpc))
    try:
        with polling_health(http_port) as health:
            for sender in senders:
                sender.start()
            for sender in senders:
                sender.join(180)
        peak = peak_rss_mib(proc.pid)
        assert httpx.post(url, content=valid_request(10), headers=PROTO).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert sorted(answers) == ["grpc", "gzip0", "gzip1", "gzip2", "gzip3", "json"]
    for name, (status, message, elapsed) in answers.items():
        assert status in (413, 8), (name, status, message)  # 8: RESOURCE_EXHAUSTED
        assert "(max_spans)" in message or "(max_decoded_bytes)" in message, (name, message)
        assert elapsed < NO_HANG_S, (name, elapsed)
    assert health.errors == [] and len(health.latencies) >= 5
    assert max(health.latencies) < HEALTH_NO_HANG_S, sorted(health.latencies)
    assert peak < PEAK_RSS_MIB
    with open_store(tmp_path / "data") as store:
        stats = store.ingest_stats()
    assert (stats.spans, stats.rejected) == (10, 6)  # each refused request is counted once


def test_several_gzip_members_are_all_stored(tmp_path: Path) -> None:
    from janux.tracing.receiver import start_receiver

    first, second = valid_request(3), valid_request(5, first=4)
    with open_store(tmp_path / "data") as store, start_receiver(store, "127.0.0.1", 0, None) as receiver:
        url = f"http://127.0.0.1:{receiver.http_port}/v1/traces"
        body = gzip.compress(first) + gzip.compress(second)
        assert httpx.post(url, content=body, headers={**PROTO, "content-encoding": "gzip"}).status_code == 200
        assert store.ingest_stats().spans == 8


def test_trailing_garbage_after_gzip_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    from janux.tracing.receiver import start_receiver

    with open_store(tmp_path / "data") as store, start_receiver(store, "127.0.0.1", 0, None) as receiver:
        url = f"http://127.0.0.1:{receiver.http_port}/v1/traces"
        body = gzip.compress(valid_request(3)) + b"garbage"
        response = httpx.post(url, content=body, headers={**PROTO, "content-encoding": "gzip"})
        assert response.status_code == 400
        assert "7 byte(s) of trailing data" in Status.FromString(response.content).message
        assert store.ingest_stats().spans == 0
