"""Process-wide settings of a process that ingests spans: the receiver's (the collect process and its
workers) and `janux import`'s."""

from __future__ import annotations

import ctypes
import gc
import threading
import time
from collections.abc import Callable

YOUNG_COLLECTION_THRESHOLD = 10_000
"""Allocations between two young-generation collections (CPython's default is 700). One export
request (or one import batch) allocates tens of thousands of short-lived objects; collecting every
700 of them walks the same in-flight batch again and again."""

_settled = threading.Event()


def settle_heap() -> None:
    """Collect once, then freeze what start-up left (modules, protobuf descriptors, the app), so the
    collector never walks it again while serving, and collect the young generation less often.

    Only the first call in a process does it (a process that starts receivers again and again, as
    a test run does, would otherwise freeze objects it later drops)."""
    if _settled.is_set():
        return
    _settled.set()
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(YOUNG_COLLECTION_THRESHOLD, young), middle, old)


ARENA_MAX = 2
"""malloc arenas of an ingesting process. glibc's default (8 per core) lets each of grpcio's and
uvicorn's threads keep its own heap: memory a burst freed on one thread stays with it (gzip-compressed
gRPC bursts left 130 MiB more after each of three bursts; with two arenas, none)."""
MMAP_THRESHOLD_BYTES = 4 * 1024 * 1024
"""Allocations at least this large get their own pages and give them back when freed (glibc raises
its threshold up to 32 MiB after the first large free, so request bodies would land in the heap)."""
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


def tune_malloc() -> None:
    """Set `ARENA_MAX` and `MMAP_THRESHOLD_BYTES` (glibc only; call before the process starts its
    threads: arenas already made stay)."""
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None) if libc is not None else None
    if mallopt is not None:
        mallopt(_M_ARENA_MAX, ARENA_MAX)
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


TRIM_INTERVAL_S = 1.0
"""Shortest time between two heap trims (a trim walks the whole heap: a few milliseconds)."""


class _HeapTrimmer:
    """Gives freed memory back to the system once a burst of requests is over.

    glibc keeps what a burst freed (per-thread arenas, fragments between live objects) for reuse, so
    a process that once served a burst would stay at its peak size for good. `malloc_trim` returns
    the free pages; it runs on one background thread, at most once per `TRIM_INTERVAL_S`. Without
    glibc (musl, macOS), nothing is done."""

    def __init__(self) -> None:
        self._wanted = threading.Event()
        self._lock = threading.Lock()
        self._started = False

    def request(self) -> None:
        """Ask for a trim soon (cheap; callable from any thread, while holding locks)."""
        self._wanted.set()
        if not self._started:
            with self._lock:
                trim = _malloc_trim()
                if not self._started and trim is not None:
                    self._started = True
                    threading.Thread(
                        target=self._run, args=(trim,), name="janux-heap-trim", daemon=True
                    ).start()

    def _run(self, trim: Callable[[int], int]) -> None:
        while True:
            self._wanted.wait()
            time.sleep(TRIM_INTERVAL_S)  # let the rest of the burst end first; also the rate limit
            self._wanted.clear()
            trim(0)


_TRIMMER = _HeapTrimmer()


def trim_heap_soon() -> None:
    """Give the memory a burst freed back to the system, soon, on a background thread (see
    `_HeapTrimmer`); the memory budget calls it when it empties after a burst."""
    _TRIMMER.request()


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where there is none."""
    libc = _libc()
    trim: Callable[[int], int] | None = getattr(libc, "malloc_trim", None) if libc is not None else None
    return trim
