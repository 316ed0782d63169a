"""Fold the per-trace loops and delegations of many traces into an `AgentMap`, with the Trace page's rules.

A trace's link rows become its loops and delegations in one of two ways: a trace with Janux
accounting is walked from its recorded fields (`walk`), any other trace comes as the rows of its
structure as `janux.tracing.analysis.readers.structure` read it (`foreign_rows`), the reading the Trace page's
reconstruction uses. Either way these are the rules of `janux.tracing.analysis` (tree.py,
costs.py, failures.py), applied to link rows only, so the map is exact over a whole range without
rebuilding traces; tests hold the two equal.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from janux.tracing.analysis.agentmap.fleet_stats import AgentMap
from janux.tracing.analysis.agentmap.foreign_rows import resolved_trace
from janux.tracing.analysis.agentmap.loops import (
    MapFacts,
    TraceLinks,
    delegation_facts,
    fold_inclusive,
    loop_facts,
)
from janux.tracing.analysis.agentmap.sums import MapSums
from janux.tracing.analysis.agentmap.sums import percentile as percentile
from janux.tracing.analysis.agentmap.walk import JanuxTrace


def map_facts(links: TraceLinks) -> MapFacts:
    """The loops (own and inclusive usage filled) and delegations of one trace."""
    if links.resolved:
        return resolved_trace(links)
    trace = JanuxTrace(links)
    trace.build()
    loops = trace.all_loops()
    fold_inclusive(loops)
    return loop_facts(links.trace_id, loops), [delegation_facts(d) for d in trace.delegations.values()]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a map is read and built: hundreds of thousands of
    small tuples would otherwise trigger repeated full collections (about a third of the time),
    and the map's objects hold no reference cycles."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def aggregate(facts: Iterable[tuple[str, MapFacts]], bucket_ns: int | None = None) -> AgentMap:
    """The agent map over per-trace facts (trace id, facts)."""
    sums = MapSums(bucket_ns)
    for trace_id, (loops, delegations) in facts:
        sums.add_trace(trace_id, loops, delegations)
    return sums.finish()


def build_agent_map(traces: Iterable[TraceLinks], bucket_ns: int | None = None) -> AgentMap:
    """The agent map over `traces` (each trace's link rows, inference sums and parent links);
    `bucket_ns` also fills its timeline (own usage per agent per time bucket of loop starts)."""
    return aggregate(((links.trace_id, map_facts(links)) for links in traces), bucket_ns)
