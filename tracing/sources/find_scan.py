"""Find over a source that has no find index: its filtered traces walked newest first, in chunks.

Each chunk is narrowed by what the trace list already knows (`trace_find.may_have_reason`), then by
the source's attribute test over the chunk's ids, then by the traces' kept find facts
(`find_cache.FindFactsCache`, rebuilt once per span count). Memory stays bounded by the chunk, and
every trace of the range is looked at, so the count is the whole range's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice

from janux.tracing.analysis.facts import TraceFilter, TraceSummary
from janux.tracing.analysis.trace_find import FoundTraces, TraceQuery, facts_match, may_have_reason
from janux.tracing.sources.find_cache import FindFactsCache, ReadSpans

SCAN_CHUNK = 1_000
"""Traces looked at per step."""

AttributeIds = Callable[[list[str], str], set[str]]
"""The ids, among those given, of the traces with a span carrying a `key=value` (or `key`) field."""


def chunked_list(
    list_traces: Callable[[TraceFilter, int, int], list[TraceSummary]], flt: TraceFilter
) -> Iterator[TraceSummary]:
    """Every summary of `flt`, newest first, read `SCAN_CHUNK` at a time (a source's `list_traces`)."""
    offset = 0
    while True:
        chunk = list_traces(flt, SCAN_CHUNK, offset)
        yield from chunk
        if len(chunk) < SCAN_CHUNK:
            return
        offset += SCAN_CHUNK


def _kept(
    chunk: list[TraceSummary], query: TraceQuery, cache: FindFactsCache, read: ReadSpans, has: AttributeIds
) -> list[TraceSummary]:
    """The summaries of `chunk` that match `query` (a `checked` one), in order."""
    if query.reason:
        chunk = [s for s in chunk if may_have_reason(s)]
    if query.attribute and chunk:
        with_attribute = has([s.trace_id for s in chunk], query.attribute)
        chunk = [s for s in chunk if s.trace_id in with_attribute]
    if (query.reason or query.agent or query.error) and chunk:
        facts = cache.facts({s.trace_id: s.span_count for s in chunk}, read)
        chunk = [s for s in chunk if s.trace_id in facts and facts_match(facts[s.trace_id], query)]
    return chunk


def scan_find(
    summaries: Iterable[TraceSummary],
    query: TraceQuery,
    limit: int,
    offset: int,
    *,
    cache: FindFactsCache,
    read: ReadSpans,
    has_attribute: AttributeIds,
) -> FoundTraces:
    """The page [`offset`, `offset + limit`) of the matches among `summaries` (newest first) and how
    many match in all; raises `trace_find.FindError` on bad input before reading anything."""
    query = query.checked()
    found = FoundTraces(total=0, summaries=[])
    items = iter(summaries)
    while chunk := list(islice(items, SCAN_CHUNK)):
        for summary in _kept(chunk, query, cache, read, has_attribute):
            if offset <= found.total < offset + limit:
                found.summaries.append(summary)
            found.total += 1
    return found
