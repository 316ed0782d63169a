"""A small thread-safe cache of rebuilt traces, so page reruns do not rebuild the same trace.

Entries expire after a few seconds (live traces keep growing) and the cache holds a bounded
number of spans and of bytes in total (a 10,000-span trace is large, and so is a 2-span trace
holding megabytes of text). No Streamlit import: pages share one module-level instance.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from janux.tracing.analysis.trace_view import TraceView, reconstruct
from janux.tracing.sources.protocol import TraceSource

DEFAULT_TTL_S = 10.0
"""Seconds a rebuilt trace is reused before it is read again."""
DEFAULT_MAX_SPANS = 250_000
"""Spans held across all cached traces before the least recently used are dropped."""
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
"""Estimated bytes held across all cached traces before the least recently used are dropped."""
SPAN_OVERHEAD_BYTES = 1_500
"""Estimated memory of one rebuilt span without its attribute values (record, index, tree)."""


def _value_bytes(value: object) -> int:
    """Estimated memory of an attribute value (strings and bytes by length, arrays by their items)."""
    if isinstance(value, (str, bytes)):
        return 50 + len(value)
    if isinstance(value, (list, tuple)):
        return 56 + sum(50 + len(v) if isinstance(v, (str, bytes)) else 32 for v in value)
    return 32


def view_bytes(view: TraceView) -> int:
    """Estimated memory of a rebuilt trace: its spans, their attribute and event values."""
    total = 0
    for span in view.index.spans:
        total += SPAN_OVERHEAD_BYTES + sum(_value_bytes(v) for v in span.attributes.values())
        for event in span.events:
            total += 200 + sum(_value_bytes(v) for v in event.attributes.values())
    return total


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
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], tuple[float, TraceView, int]] = OrderedDict()
        self._spans = 0
        self._bytes = 0

    @property
    def held_bytes(self) -> int:
        """Estimated bytes of the cached traces."""
        with self._lock:
            return self._bytes

    def _fresh(self, key: tuple[str, str], now: float) -> TraceView | None:
        entry = self._entries.get(key)
        if entry is None or now - entry[0] > self.ttl_s:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def _put(self, key: tuple[str, str], view: TraceView, now: float, size: int) -> None:
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

    def views(self, source: TraceSource, source_key: str, trace_ids: list[str]) -> dict[str, TraceView]:
        """Rebuilt traces for `trace_ids` (reading only those not cached); unknown ids map to empty views."""
        now = self._clock()
        found: dict[str, TraceView] = {}
        with self._lock:
            for trace_id in trace_ids:
                view = self._fresh((source_key, trace_id), now)
                if view is not None:
                    found[trace_id] = view
        missing = [t for t in dict.fromkeys(trace_ids) if t not in found]
        if missing:
            spans = source.get_traces(missing)
            for trace_id in missing:
                view = reconstruct(spans.get(trace_id, []))
                found[trace_id] = view
                size = view_bytes(view)
                with self._lock:
                    self._put((source_key, trace_id), view, now, size)
        return found

    def view(self, source: TraceSource, source_key: str, trace_id: str) -> TraceView:
        """One rebuilt trace."""
        return self.views(source, source_key, [trace_id])[trace_id]

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._spans = self._bytes = 0


SHARED = ViewCache()
"""The cache every page uses."""
