"""Several OTLP/HTTP processes on one socket: clients are told to reconnect now and then, so a
burst of connections accepted by one process spreads over the others."""

from __future__ import annotations

import gc
from pathlib import Path

import httpx

from janux.tracing.receiver import process, start_receiver
from janux.tracing.receiver.process import YOUNG_COLLECTION_THRESHOLD, settle_heap
from janux.tracing.receiver.server import RECONNECT_EVERY
from janux.tracing.sources.store import open_store
from tests.support.otlp_build import numbered_spans, pb_request

PROTO = {"content-type": "application/x-protobuf"}


def _closes(http_workers: int, data_dir: Path, requests: int) -> int:
    with open_store(data_dir) as store:
        running = start_receiver(store, "127.0.0.1", 0, None, http_workers=http_workers)
        try:
            url = f"http://127.0.0.1:{running.http_port}/v1/traces"
            closes = 0
            with httpx.Client(headers=PROTO, timeout=60) as client:
                for n in range(requests):
                    body = pb_request(numbered_spans(10, trace_no=n + 1)).SerializeToString()
                    response = client.post(url, content=body)
                    assert response.status_code == 200
                    closes += response.headers.get("connection") == "close"
        finally:
            running.stop()
        assert store.ingest_stats().spans == 10 * requests
    return closes


def test_several_processes_end_every_few_connections_one_process_never(tmp_path: Path) -> None:
    # Each process ends every RECONNECT_EVERY-th of its own answers: however 2 * RECONNECT_EVERY
    # requests are shared between two processes, at least one connection is ended.
    assert _closes(2, tmp_path / "two", 2 * RECONNECT_EVERY) >= 1
    assert _closes(1, tmp_path / "one", 2 * RECONNECT_EVERY) == 0


def test_settle_heap_freezes_start_up_objects_and_collects_young_objects_less_often() -> None:
    before = gc.get_threshold()
    try:
        process._settled.clear()
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] >= YOUNG_COLLECTION_THRESHOLD
        gc.unfreeze()
        settle_heap()  # once per process
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
