"""Find facts (`analysis.trace_find.FindFacts`) per trace, kept by one reading process between calls.

A trace's find facts come from its handoff tree, so they are computed once per (trace, span count),
in bounded chunks of traces, and kept (the oldest dropped past `MAX_TRACES`); a source that answers
error text from an index of its own keeps them without their error texts (`errors=False`). Given a
`KeptFindFacts` (the embedded store's `facts_file.FactsFile`), a cache first takes what another
process computed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from janux.tracing.analysis.trace_find import FindFacts, find_facts_of
from janux.tracing.records import SpanRecord

MAX_TRACES = 200_000
"""Traces whose find facts one process keeps."""
READ_CHUNK = 200
"""Traces read (and rebuilt) per step, so memory stays bounded whatever the range."""

ReadSpans = Callable[[list[str]], dict[str, list[SpanRecord]]]
"""Reads the spans of the named traces (a source's `get_traces`)."""


class KeptFindFacts(Protocol):
    """Find facts kept outside the process, by trace id and span count."""

    def load_find(self, versions: dict[str, int]) -> dict[str, FindFacts]:
        """The kept facts of the traces in `versions` whose span count matches."""
        ...

    def save_find(self, facts: dict[str, tuple[int, FindFacts]]) -> None:
        """Keep these facts (trace id -> (span count, facts))."""
        ...


class FindFactsCache:
    """Find facts per trace id, with the span count they were computed at."""

    def __init__(
        self, kept: KeptFindFacts | None = None, max_traces: int = MAX_TRACES, *, errors: bool = True
    ) -> None:
        self._kept = kept
        self._max = max_traces
        self._errors = errors
        self._facts: dict[str, tuple[int, FindFacts]] = {}
        self._lock = threading.Lock()
        self.computed = 0
        """Traces this cache rebuilt (found neither here nor kept)."""

    def facts(self, versions: dict[str, int], read: ReadSpans) -> dict[str, FindFacts]:
        """The find facts of the traces in `versions` (trace id -> span count), rebuilding only the
        traces not known at that span count, `READ_CHUNK` at a time."""
        with self._lock:
            entries = {t: self._facts.get(t) for t in versions}
        known = {t: e[1] for t, e in entries.items() if e is not None and e[0] == versions[t]}
        stale = {t: n for t, n in versions.items() if t not in known}
        if stale and self._kept is not None:
            found = self._kept.load_find(stale)
            self._keep({t: (stale[t], f) for t, f in found.items()})
            known.update(found)
            stale = {t: n for t, n in stale.items() if t not in found}
        ids = list(stale)
        for start in range(0, len(ids), READ_CHUNK):
            spans = read(ids[start : start + READ_CHUNK])
            fresh = {t: (stale[t], self._found(s)) for t, s in spans.items() if t in stale}
            self.computed += len(fresh)
            self._keep(fresh)
            if self._kept is not None:
                self._kept.save_find(fresh)
            known.update((t, f) for t, (_, f) in fresh.items())
        return known

    def _found(self, spans: list[SpanRecord]) -> FindFacts:
        found = find_facts_of(spans)
        return found if self._errors else replace(found, errors=())

    def _keep(self, fresh: dict[str, tuple[int, FindFacts]]) -> None:
        with self._lock:
            for trace_id, entry in fresh.items():
                self._facts.pop(trace_id, None)
                self._facts[trace_id] = entry
            while len(self._facts) > self._max:
                self._facts.pop(next(iter(self._facts)))
