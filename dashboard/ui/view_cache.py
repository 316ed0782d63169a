"""A small thread-safe cache of rebuilt traces, so page reruns do not rebuild the same trace.

Entries expire after a few seconds (live traces keep growing) and the cache holds a bounded
number of spans in total (a 10,000-span trace is large). No Streamlit import: pages share one
module-level instance.
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


class ViewCache:
    """(source key, trace id) -> rebuilt trace, with expiry and a span budget."""

    def __init__(
        self,
        ttl_s: float = DEFAULT_TTL_S,
        max_spans: int = DEFAULT_MAX_SPANS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_spans = max_spans
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], tuple[float, TraceView]] = OrderedDict()
        self._spans = 0

    def _fresh(self, key: tuple[str, str], now: float) -> TraceView | None:
        entry = self._entries.get(key)
        if entry is None or now - entry[0] > self.ttl_s:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def _put(self, key: tuple[str, str], view: TraceView, now: float) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self._spans -= len(old[1].index.spans)
        self._entries[key] = (now, view)
        self._spans += len(view.index.spans)
        while self._spans > self.max_spans and len(self._entries) > 1:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._spans -= len(dropped.index.spans)

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
                with self._lock:
                    self._put((source_key, trace_id), view, now)
        return found

    def view(self, source: TraceSource, source_key: str, trace_id: str) -> TraceView:
        """One rebuilt trace."""
        return self.views(source, source_key, [trace_id])[trace_id]

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._spans = 0


SHARED = ViewCache()
"""The cache every page uses."""
