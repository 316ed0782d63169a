"""A small thread-safe cache of rebuilt traces, so page reruns do not rebuild the same trace.

Entries expire after a few seconds (live traces keep growing) and the cache holds a bounded
number of spans and of bytes in total (a 10,000-span trace is large, and so is a 2-span trace
holding megabytes of text). A trace can be asked for ahead (`prefetch`): it is read and rebuilt
on the cache's worker thread while the page draws what comes before it, and whoever asks for it
meanwhile waits for that build instead of starting another. No Streamlit import: pages share one
module-level instance.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from janux.tracing.analysis.agentmap.build import gc_paused
from janux.tracing.analysis.trace_links import run_spans
from janux.tracing.analysis.trace_view import TraceView, reconstruct
from janux.tracing.sources.protocol import TraceSource

logger = logging.getLogger(__name__)

DEFAULT_TTL_S = 10.0
"""Seconds a rebuilt trace is reused before it is read again."""
DEFAULT_MAX_SPANS = 250_000
"""Spans held across all cached traces before the least recently used are dropped."""
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
"""Estimated bytes held across all cached traces before the least recently used are dropped."""
SPAN_OVERHEAD_BYTES = 1_500
"""Estimated memory of one rebuilt span without its attribute values (record, index, tree)."""
PREFETCH_THREAD = "janux-trace-prefetch"
"""Name of the thread that rebuilds traces asked for ahead (one per cache: one connection per source)."""

FREEZE_MIN_SPANS = 2_000
"""Rebuilt traces of at least this many spans are frozen out of the collector's scans; smaller
ones add too few objects for their scans to matter."""
SWEEP_EVERY = 16
"""Every this many freezes, everything is unfrozen and collected once (see `freeze_out_of_collector`)."""

_Key = tuple[str, str]


def _value_bytes(value: object) -> int:
    """Estimated memory of an attribute value (strings and bytes by length, arrays by their items)."""
    if isinstance(value, (str, bytes)):
        return 50 + len(value)
    if isinstance(value, (list, tuple)):
        return 56 + sum(50 + len(v) if isinstance(v, (str, bytes)) else 32 for v in value)
    return 32


def _values_bytes(values: Iterable[Any]) -> int:
    """`_value_bytes` summed over `values`, the common types (text, numbers) counted inline: a
    function call per value made a 10,000-span trace's estimate take 60-80 ms instead of 20-25."""
    total = 0
    for value in values:
        kind = type(value)
        if kind is str or kind is bytes:
            total += 50 + len(value)
        elif kind is int or kind is float or kind is bool:
            total += 32
        else:
            total += _value_bytes(value)
    return total


def view_bytes(view: TraceView) -> int:
    """Estimated memory of a rebuilt trace: its spans, their attribute and event values.

    Taken on the cache's worker thread while the page that waited for the trace draws it (sharing
    the interpreter with it): kept cheap, as `_values_bytes` says."""
    total = 0
    for span in view.index.spans:
        total += SPAN_OVERHEAD_BYTES + _values_bytes(span.attributes.values())
        for event in span.events:
            total += 200 + _values_bytes(event.attributes.values())
    return total


def rebuild(source: TraceSource, trace_ids: list[str]) -> dict[str, TraceView]:
    """Read and rebuild `trace_ids` (unknown ids give empty views) with the cyclic collector paused;
    a big result is then taken out of its scans (`freeze_out_of_collector`).

    A 10,000-span trace allocates about 80,000 objects: with the collector running, a full
    collection starts midway (walking all of them), and Streamlit runs another after every script
    run (`runner.postScriptGC`): together 0.1-0.3 s of the page that shows the trace, and of every
    click on it. A rebuilt trace holds no reference cycles (tested), so reference counting alone
    frees it when the cache drops it: freezing it only spares those walks.
    """
    with gc_paused():
        # each trace with the traces of its run (joined by span links), read as one (`trace_links`)
        spans = run_spans(trace_ids, source.trace_links, source.get_traces)
        views = {trace_id: reconstruct(spans.get(trace_id.strip().lower(), [])) for trace_id in trace_ids}
    if sum(len(view.index.spans) for view in views.values()) >= FREEZE_MIN_SPANS:
        freeze_out_of_collector()
    return views


_freezes = 0
_freeze_lock = threading.Lock()


def freeze_out_of_collector() -> None:
    """`gc.freeze()`, and on every `SWEEP_EVERY`-th call, first `gc.unfreeze()` and a full collection.

    A freeze takes every object alive at that moment out of the collector's scans, the garbage of
    the script runs going on meanwhile too (Streamlit's runs leave some hundreds of objects in
    reference cycles, which only the collector frees): without the sweep, each freeze would keep
    those for good. The sweep (a full collection over everything, the modules frozen at start too:
    0.1-0.3 s) bounds them to `SWEEP_EVERY` freezes' worth, on one big rebuild in `SWEEP_EVERY`.
    """
    global _freezes
    with _freeze_lock:
        _freezes += 1
        if _freezes % SWEEP_EVERY == 0:
            gc.unfreeze()
            gc.collect()
        gc.freeze()


class ViewCache:
    """(source key, trace id) -> rebuilt trace, with expiry, a span budget and a byte budget (the
    latest trace is kept even alone over a budget: the page showing it holds it anyway)."""

    def __init__(
        self,
        ttl_s: float = DEFAULT_TTL_S,
        max_spans: int = DEFAULT_MAX_SPANS,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_spans = max_spans
        self.max_bytes = max_bytes
        self.rebuilt = 0
        """Traces read and rebuilt so far (each build counts its traces once, however many waited)."""
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[_Key, tuple[float, TraceView, int]] = OrderedDict()
        self._building: dict[_Key, Future[TraceView]] = {}
        self._worker: ThreadPoolExecutor | None = None
        self._spans = 0
        self._bytes = 0

    @property
    def held_bytes(self) -> int:
        """Estimated bytes of the cached traces."""
        with self._lock:
            return self._bytes

    def _fresh(self, key: _Key, now: float) -> TraceView | None:
        entry = self._entries.get(key)
        if entry is None or now - entry[0] > self.ttl_s:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def _put(self, key: _Key, view: TraceView, now: float, size: int) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._spans -= len(old[1].index.spans)
            self._bytes -= old[2]
        self._entries[key] = (now, view, size)
        self._spans += len(view.index.spans)
        self._bytes += size
        while (self._spans > self.max_spans or self._bytes > self.max_bytes) and len(self._entries) > 1:
            _, (_, dropped, dropped_size) = self._entries.popitem(last=False)
            self._spans -= len(dropped.index.spans)
            self._bytes -= dropped_size

    def _claim(
        self, source_key: str, trace_ids: list[str], now: float
    ) -> tuple[dict[str, TraceView], dict[str, Future[TraceView]], dict[str, Future[TraceView]]]:
        """Split `trace_ids` into (cached views, builds under way, builds this caller must run)."""
        found: dict[str, TraceView] = {}
        pending: dict[str, Future[TraceView]] = {}
        mine: dict[str, Future[TraceView]] = {}
        with self._lock:
            for trace_id in dict.fromkeys(trace_ids):
                key = (source_key, trace_id)
                view = self._fresh(key, now)
                if view is not None:
                    found[trace_id] = view
                elif key in self._building:
                    pending[trace_id] = self._building[key]
                else:
                    mine[trace_id] = self._building[key] = Future()
        return found, pending, mine

    def _build(
        self, source: TraceSource, source_key: str, claimed: dict[str, Future[TraceView]], now: float
    ) -> None:
        """Rebuild the claimed traces, hand each to whoever waits for it (or the error), then keep
        them: their memory estimate (20-25 ms for 10,000 spans) is taken after the hand-over, so the
        page waiting for the trace does not wait for it too. Until kept, a trace is still "being
        built": whoever asks for it meanwhile gets the finished build."""
        try:
            views = rebuild(source, list(claimed))
        except BaseException as exc:
            with self._lock:
                for trace_id, future in claimed.items():
                    if self._building.get((source_key, trace_id)) is future:
                        del self._building[(source_key, trace_id)]
            for future in claimed.values():
                future.set_exception(exc)
            raise
        with self._lock:
            self.rebuilt += len(views)
        for trace_id, future in claimed.items():
            future.set_result(views[trace_id])
        sizes: dict[str, int] = {}
        try:
            for trace_id, view in views.items():
                sizes[trace_id] = view_bytes(view)
        finally:  # never left "being built": kept if estimated, else read again when next asked for
            with self._lock:
                for trace_id, future in claimed.items():
                    key = (source_key, trace_id)
                    if self._building.get(key) is future:  # not cleared meanwhile
                        del self._building[key]
                        if trace_id in sizes:
                            self._put(key, views[trace_id], now, sizes[trace_id])

    def views(self, source: TraceSource, source_key: str, trace_ids: list[str]) -> dict[str, TraceView]:
        """Rebuilt traces for `trace_ids` (reading only those neither cached nor being rebuilt);
        unknown ids map to empty views."""
        found, pending, mine = self._claim(source_key, trace_ids, self._clock())
        if mine:
            self._build(source, source_key, mine, self._clock())
        for trace_id, future in {**pending, **mine}.items():
            found[trace_id] = future.result()
        return {trace_id: found[trace_id] for trace_id in trace_ids}

    def view(self, source: TraceSource, source_key: str, trace_id: str) -> TraceView:
        """One rebuilt trace."""
        return self.views(source, source_key, [trace_id])[trace_id]

    def prefetch(self, source: TraceSource, source_key: str, trace_id: str) -> None:
        """Start rebuilding `trace_id` on the worker thread unless it is cached or under way; a later
        `views` waits for it. A failed build is logged here and raised to whoever waits for it."""
        _, _, mine = self._claim(source_key, [trace_id], self._clock())
        if not mine:
            return
        with self._lock:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=PREFETCH_THREAD)
            worker = self._worker
        done = worker.submit(self._build, source, source_key, mine, self._clock())
        done.add_done_callback(_log_failure)

    def clear(self) -> None:
        """Drop every entry (builds under way finish, but what they rebuilt is not kept)."""
        with self._lock:
            self._entries.clear()
            self._building.clear()
            self._spans = self._bytes = 0


def _log_failure(done: Future[None]) -> None:
    error = done.exception()
    if error is not None:
        logger.warning("rebuilding a trace ahead failed: %s", error, exc_info=error)


SHARED = ViewCache()
"""The cache every page uses."""
