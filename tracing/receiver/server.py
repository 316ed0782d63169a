"""Start and stop both OTLP endpoints in-process (`start_receiver` -> `RunningReceiver`)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from multiprocessing.process import BaseProcess

import grpc
import uvicorn

from janux.tracing.receiver.budget import ProcessBudget
from janux.tracing.receiver.connections import rate_limit_accept_errors, uvicorn_config
from janux.tracing.receiver.grpc_server import start_grpc_server
from janux.tracing.receiver.http_app import DECODER_THREADS, HttpSettings, build_http_app
from janux.tracing.receiver.limits import ReceiverLimits, raise_open_file_limit
from janux.tracing.receiver.process import settle_heap, trim_heap_soon, tune_malloc
from janux.tracing.receiver.workers import start_http_workers, stop_http_workers
from janux.tracing.sources.store import TraceStore

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
"""Loopback only unless told otherwise."""
DEFAULT_HTTP_PORT = 4318
"""OTLP/HTTP's registered port."""
DEFAULT_GRPC_PORT = 4317
"""OTLP/gRPC's registered port."""
_STARTUP_TIMEOUT_S = 15.0
RECONNECT_EVERY = 8
"""With several OTLP/HTTP processes, every 8th answer of a process ends its connection
(see `HttpSettings.reconnect_every`)."""


class RunningReceiver:
    """Both endpoints, running in background threads until `stop()`."""

    def __init__(
        self,
        http_server: uvicorn.Server | None,
        http_thread: threading.Thread | None,
        http_port: int | None,
        grpc_server: grpc.Server | None,
        grpc_port: int | None,
        workers: list[BaseProcess] | None = None,
        decoder: ThreadPoolExecutor | None = None,
    ) -> None:
        self._workers = workers or []
        self._decoder = decoder
        self._http_server = http_server
        self._http_thread = http_thread
        self._grpc_server = grpc_server
        self.http_port = http_port
        """Port OTLP/HTTP listens on (the real one when 0 was asked), or None if disabled."""
        self.grpc_port = grpc_port
        """Port OTLP/gRPC listens on (the real one when 0 was asked), or None if disabled."""

    def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let in-flight exports finish (up to `grace_s`), then return."""
        if self._grpc_server is not None:
            self._grpc_server.stop(grace_s).wait(grace_s + 1)
            self._grpc_server = None
        if self._workers:
            stop_http_workers(self._workers, grace_s + 5)
            self._workers = []
        if self._http_server is not None and self._http_thread is not None:
            self._http_server.should_exit = True
            self._http_thread.join(grace_s + 5)
            self._http_server = None
        if self._decoder is not None:
            self._decoder.shutdown(wait=False, cancel_futures=True)
            self._decoder = None

    def __enter__(self) -> RunningReceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
    # without it every answer on a kept-alive connection waits 40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def _start_http(
    app: object, sock: socket.socket, limits: ReceiverLimits
) -> tuple[uvicorn.Server, threading.Thread, int]:
    host, actual = sock.getsockname()[:2]
    server = uvicorn.Server(uvicorn_config(app, limits))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="janux-otlp-http", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + _STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise OSError(f"OTLP/HTTP server did not start on {host}:{actual}")
        time.sleep(0.01)
    return server, thread, actual


def start_receiver(
    store: TraceStore,
    host: str = DEFAULT_HOST,
    http_port: int | None = DEFAULT_HTTP_PORT,
    grpc_port: int | None = DEFAULT_GRPC_PORT,
    token: str | None = None,
    max_body_bytes: int | None = None,
    http_workers: int = 1,
    limits: ReceiverLimits | None = None,
) -> RunningReceiver:
    """Serve OTLP/HTTP and OTLP/gRPC into `store` from background threads.

    A port of 0 picks a free one (read it back from the result); None disables that endpoint.
    With `token`, every request must carry `Authorization: Bearer <token>`. `limits` bounds request
    sizes and contents, memory, time and connections (`max_body_bytes`, if given, overrides its
    body limit). `http_workers` > 1 adds that many minus one OTLP/HTTP worker processes on the
    same socket and data directory (more cores for decoding; each still acknowledges only after
    its own commit, and each has its own memory budget).
    """
    tune_malloc()  # in time when nothing started threads yet (`janux collect` calls it earlier too)
    raise_open_file_limit()
    rate_limit_accept_errors()
    limits = (limits or ReceiverLimits()).fitted_to_open_files()
    if max_body_bytes is not None:
        limits = replace(limits, max_body_bytes=max_body_bytes)
    # Several processes share the socket: make clients reconnect now and then to spread the load.
    settings = HttpSettings(token, limits, RECONNECT_EVERY if http_workers > 1 else 0)
    budget = ProcessBudget.split(
        limits.memory_budget_bytes, limits.budget_wait_s, limits.max_body_bytes, trim_heap_soon
    )
    decoder = ThreadPoolExecutor(DECODER_THREADS, thread_name_prefix="janux-otlp-decode")
    http: tuple[uvicorn.Server, threading.Thread, int] | None = None
    workers: list[BaseProcess] = []
    grpc_result: tuple[grpc.Server, int] | None = None
    try:
        if http_port is not None:
            sock = _bind(host, http_port)
            http = _start_http(build_http_app(store, settings, budget, decoder), sock, limits)
            if http_workers > 1:
                workers = start_http_workers(http_workers - 1, sock, store.data_dir, settings)
        if grpc_port is not None:
            grpc_result = start_grpc_server(store, host, grpc_port, token, limits, budget)
    except BaseException:
        stop_http_workers(workers)
        if http is not None:
            http[0].should_exit = True
            http[1].join(10)
        decoder.shutdown(wait=False)
        raise
    settle_heap()
    receiver = RunningReceiver(
        http[0] if http else None,
        http[1] if http else None,
        http[2] if http else None,
        grpc_result[0] if grpc_result else None,
        grpc_result[1] if grpc_result else None,
        workers,
        decoder,
    )
    logger.info(
        "OTLP receiver listening: http=%s (%d process(es)) grpc=%s (token %s)",
        f"{host}:{receiver.http_port}" if receiver.http_port else "off",
        1 + len(workers),
        f"{host}:{receiver.grpc_port}" if receiver.grpc_port else "off",
        "required" if token else "not required",
    )
    return receiver
