"""Extra OTLP/HTTP worker processes sharing one listening socket (to use more than one core).

Each worker is a whole receiver (uvicorn + decode + its own store writer) on the same data
directory; the kernel spreads connections over the processes, and the store's inter-process
write lock orders their commits. A worker exits when its parent dies (PR_SET_PDEATHSIG on Linux
where possible, and a parent-pid watchdog everywhere), so a killed receiver leaves no orphans.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.process import BaseProcess
from pathlib import Path

import uvicorn

from janux.tracing.receiver.budget import ProcessBudget
from janux.tracing.receiver.connections import rate_limit_accept_errors, uvicorn_config
from janux.tracing.receiver.http_app import DECODER_THREADS, HttpSettings, build_http_app
from janux.tracing.receiver.process import settle_heap, trim_heap_soon, tune_malloc
from janux.tracing.sources.store import open_store

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_WATCHDOG_INTERVAL_S = 0.5


def start_http_workers(
    count: int, sock: socket.socket, data_dir: Path, settings: HttpSettings
) -> list[BaseProcess]:
    """Spawn `count` worker processes serving OTLP/HTTP from `sock` into the store at `data_dir`."""
    context = multiprocessing.get_context("spawn")
    processes: list[BaseProcess] = []
    for index in range(count):
        process = context.Process(
            target=_worker_main,
            args=(sock, str(data_dir), settings, os.getpid()),
            name=f"janux-otlp-http-{index + 1}",
            daemon=True,
        )
        process.start()
        processes.append(process)
    return processes


def stop_http_workers(processes: list[BaseProcess], timeout_s: float = 10.0) -> None:
    """SIGTERM each worker (graceful: in-flight exports finish and commit), then reap them."""
    for process in processes:
        if process.is_alive() and process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
    for process in processes:
        process.join(timeout_s)
        if process.is_alive():
            process.kill()
            process.join(timeout_s)


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    def watchdog() -> None:
        """Kill this process once its parent is gone (orphans are re-parented)."""
        while os.getppid() == parent_pid:
            threading.Event().wait(_WATCHDOG_INTERVAL_S)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watchdog, name="janux-parent-watchdog", daemon=True).start()


def _worker_main(sock: socket.socket, data_dir: str, settings: HttpSettings, parent_pid: int) -> None:
    """Body of a worker process: serve until SIGTERM, then commit what is queued."""
    tune_malloc()  # before any thread of this process
    _die_with_parent(parent_pid)
    rate_limit_accept_errors()
    store = open_store(data_dir)
    limits = settings.limits
    decoder = ThreadPoolExecutor(DECODER_THREADS, thread_name_prefix="janux-otlp-decode")
    try:
        budget = ProcessBudget.split(
            limits.memory_budget_bytes, limits.budget_wait_s, limits.max_body_bytes, trim_heap_soon
        )
        config = uvicorn_config(build_http_app(store, settings, budget, decoder), limits)
        settle_heap()
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        decoder.shutdown(wait=False, cancel_futures=True)
        store.close()
