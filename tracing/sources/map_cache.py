"""Per-trace facts of the agent map, kept by one reading process between calls.

Stored spans never change (a span is stored once), so a trace's facts stay right while its span
count does; a call re-reads only the traces that are new or grew since the last one, then adds
up the facts of every trace in the range. A cache given a `KeptFacts` (the embedded store's
`facts_file.FactsFile`) first takes what another process computed, so only the first process
ever to see a trace reads it.
"""

from __future__ import annotations

import gc
import hashlib
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from janux.tracing.analysis.agentmap.build import aggregate, gc_paused, map_facts
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, MapKey, MapRefs
from janux.tracing.analysis.agentmap.loops import MapFacts, TraceLinks
from janux.tracing.analysis.agentmap.sums import newest_refs

MAX_TRACES = 300_000
"""Traces whose facts are kept; beyond this the oldest entries are dropped (and re-read if needed)."""

LoadAll = Callable[[], list[TraceLinks]]
"""Reads the links of every trace in the range (one scan)."""
LoadSome = Callable[[list[str]], list[TraceLinks]]
"""Reads the links of the named traces."""


def map_digest(bucket_ns: int | None, versions: dict[str, int]) -> str:
    """The key of a whole map: its timeline bucket and every trace in it at its span count."""
    # One update of the joined text hashes exactly what one update per trace would, in a third of
    # the time (50,000 traces: a fresh dashboard's first map computes this before anything else).
    joined = "".join([f"{trace_id}:{count};" for trace_id, count in sorted(versions.items())])
    return hashlib.sha256(repr(bucket_ns).encode() + joined.encode()).hexdigest()


class KeptFacts(Protocol):
    """Facts kept outside the process, by trace id and span count."""

    def load(self, versions: dict[str, int]) -> dict[str, MapFacts]:
        """The kept facts of the traces in `versions` whose span count matches."""
        ...

    def save(self, facts: dict[str, tuple[int, MapFacts]]) -> None:
        """Keep these facts (trace id -> (span count, facts))."""
        ...

    def load_map(self, digest: str) -> AgentMap | None:
        """A whole map kept under `digest`, None when none is."""
        ...

    def save_map(self, digest: str, agent_map: AgentMap) -> None:
        """Keep a whole map under `digest`."""
        ...


class MapCache:
    """Facts per trace id with the span count they were computed at."""

    def __init__(self, max_traces: int = MAX_TRACES, kept: KeptFacts | None = None) -> None:
        self._kept = kept
        self.computed = 0
        """Traces whose facts this cache computed from their links (not found kept anywhere)."""
        self._facts: dict[str, tuple[int, MapFacts]] = {}
        self._lock = threading.Lock()
        self._reading = threading.Lock()
        self._last: tuple[tuple[int | None, frozenset[tuple[str, int]]], AgentMap] | None = None
        self._max = max_traces

    @property
    def known(self) -> int:
        """Traces whose facts are kept."""
        return len(self._facts)

    def _compute(self, versions: dict[str, int], loaded: Iterable[TraceLinks]) -> dict[str, MapFacts]:
        fresh = {links.trace_id: map_facts(links) for links in loaded}
        self.computed += len(fresh)
        if self._kept is not None:
            self._kept.save({t: (versions[t], f) for t, f in fresh.items() if t in versions})
        return self._store(versions, fresh)

    def _store(self, versions: dict[str, int], fresh: dict[str, MapFacts]) -> dict[str, MapFacts]:
        with self._lock:
            for trace_id, facts in fresh.items():
                self._facts.pop(trace_id, None)
                self._facts[trace_id] = (versions.get(trace_id, -1), facts)
            while len(self._facts) > self._max:
                self._facts.pop(next(iter(self._facts)))
        # The kept facts are long-lived and hold no reference cycles (refcounting frees what is
        # dropped): take them out of the cyclic collector's scans, which would otherwise walk
        # millions of them on every full collection of the dashboard process.
        gc.freeze()
        return fresh

    def kept_map(self, versions: dict[str, int], bucket_ns: int | None, digest: str = "") -> AgentMap | None:
        """The map of exactly these traces at these span counts when this process or another (through
        `KeptFacts`) built it before; None otherwise."""
        key = (bucket_ns, frozenset(versions.items()))
        with self._lock:
            if self._last is not None and self._last[0] == key:
                return self._last[1]
        if self._kept is None:
            return None
        kept = self._kept.load_map(digest or map_digest(bucket_ns, versions))
        if kept is not None:  # another process built this very map: the same traces, the same counts
            with self._lock:
                self._last = (key, kept)
        return kept

    def _known(self, versions: dict[str, int], load_all: LoadAll, load_some: LoadSome) -> dict[str, MapFacts]:
        """The facts of the traces in `versions`, reading only those not kept here or in `KeptFacts`."""
        # One reader at a time: a second caller (another session, the warm-up) waits for the
        # first one's facts instead of reading the same traces again.
        with self._reading:
            with self._lock:
                known = {t: entry[1] for t, entry in self._facts.items() if versions.get(t) == entry[0]}
            stale = [t for t in versions if t not in known]
            if stale and self._kept is not None:
                found = self._store(versions, self._kept.load({t: versions[t] for t in stale}))
                known.update(found)
                stale = [t for t in stale if t not in found]
            if stale:
                loaded = load_all() if len(stale) > len(versions) // 2 else load_some(stale)
                fresh = self._compute(versions, loaded)
                known.update((t, f) for t, f in fresh.items() if t in versions)
        return known

    def map_refs(
        self, versions: dict[str, int], load_all: LoadAll, load_some: LoadSome, key: MapKey
    ) -> MapRefs:
        """The newest references of one node or edge over the traces in `versions` (their facts
        read as `agent_map` reads them)."""
        with gc_paused():
            known = self._known(versions, load_all, load_some)
            return newest_refs(((t, known[t]) for t in versions if t in known), key)

    def agent_map(
        self, versions: dict[str, int], load_all: LoadAll, load_some: LoadSome, bucket_ns: int | None
    ) -> AgentMap:
        """The map of the traces in `versions` (trace id -> span count), reading only what changed:
        everything through `load_all` when most traces are unknown, else the changed ones."""
        key = (bucket_ns, frozenset(versions.items()))
        digest = map_digest(bucket_ns, versions) if self._kept is not None else ""
        kept = self.kept_map(versions, bucket_ns, digest)  # this process's last map, or a kept one
        if kept is not None:
            return kept
        with gc_paused():
            known = self._known(versions, load_all, load_some)
            # A trace in the range with no agent or tool span adds nothing but still counts as read.
            empty: MapFacts = ([], [])
            built = aggregate(((t, known.get(t, empty)) for t in versions), bucket_ns)
        with self._lock:
            self._last = (key, built)  # the same traces at the same span counts: the same map
        if self._kept is not None:
            self._kept.save_map(digest, built)
        return built
