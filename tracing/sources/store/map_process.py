"""Agent maps of an embedded store computed by a helper process, so the asking process stays free.

`TraceStore.agent_map` keeps per-trace facts between calls (`agentmap.cache`); the first call of a
process reads every trace in the range, about 2 s of Python per million stored spans, all of it
holding the interpreter lock. In the dashboard's server the lock is also what every page's script
needs: a map read in the background slows the pages shown meanwhile, and they slow the read
(`python -m bench.bench_agent_map`: 2.4 s alone, 4.7 s next to two loads of the Traces page). A
store opened with `map_process=True` hands such a read, and every map after it, to a helper
process: its own interpreter on the other core, its own facts. The maps are the same (the helper
runs the same `TraceStore.agent_map` on the same files); the server only waits for each finished
`AgentMap`.

The helper is `python -m janux.tracing.sources.store.map_process_server DATA_DIR`. It reads requests (a
filter and a bucket size) as pickles on its stdin, answers each with a pickle on its stdout, and
exits when its stdin closes: when the store is closed, or when the process that started it ends.
"""

from __future__ import annotations

import contextlib
import pickle
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

from janux.errors import JanuxError
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap
from janux.tracing.sources.protocol import TraceFilter

HELPER_MODULE = "janux.tracing.sources.store.map_process_server"
"""The helper's module (run with `python -m`)."""
STOP_WAIT_S = 5.0
"""How long `close` waits for the helper to exit before killing it (it exits as soon as its
current map, if any, is done)."""


class MapProcessError(JanuxError, RuntimeError):
    """The helper could not answer (it failed to start, died, or its read failed)."""


class MapProcess:
    """One helper process reading the agent maps of one data directory; thread-safe (one request
    at a time: a second caller waits for the first one's map, which the helper then keeps)."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._on_exit: weakref.finalize[Any, MapProcess] | None = None

    def agent_map(self, flt: TraceFilter, bucket_ns: int | None) -> AgentMap:
        """`TraceStore.agent_map(flt, bucket_ns)` of the helper's store (started on first use)."""
        with self._lock:
            process = self._process or self._start()
            assert process.stdin is not None and process.stdout is not None
            try:
                pickle.dump((flt, bucket_ns), process.stdin)
                process.stdin.flush()
                ok, answer = pickle.load(process.stdout)  # our own helper's answer
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                self._stop()
                raise MapProcessError(f"the agent map helper stopped: {exc!r}") from exc
        if not ok:
            raise MapProcessError(str(answer))
        if not isinstance(answer, AgentMap):
            raise MapProcessError(f"the agent map helper answered {type(answer).__name__}")
        return answer

    @property
    def pid(self) -> int | None:
        """The helper's process id while it runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def close(self) -> None:
        """Stop the helper (it finishes the map it is reading first)."""
        with self._lock:
            self._stop()

    def _start(self) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", HELPER_MODULE, str(self._data_dir)]
        try:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        except OSError as exc:
            raise MapProcessError(f"cannot start the agent map helper: {exc}") from exc
        # A process that ends without closing its store (a server stopped) ends its helper too,
        # at once: nobody waits for the map it may be reading.
        self._on_exit = weakref.finalize(self, process.kill)
        self._process = process
        return process

    def _stop(self) -> None:
        process, self._process = self._process, None
        if self._on_exit is not None:
            self._on_exit.detach()
            self._on_exit = None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        try:
            process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
