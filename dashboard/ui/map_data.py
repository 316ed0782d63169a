"""The agent map of the active source for a filter, cached per session so clicks do not recompute it."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import streamlit as st

from janux.tracing.alerts import Report, RuleFile, RulesError, evaluate, load_rules
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, MapKey, MapRefs
from janux.tracing.sources.protocol import TraceFilter, TraceSource

RULES_ENV = "JANUX_RULES"
"""Environment variable naming the alert rules file the agent map shows as badges."""
ROUND_NS = 60 * 1_000_000_000
"""A relative range's start is rounded down to the minute, so reruns within it reuse the map."""
HOUR_NS = 3_600 * 1_000_000_000
logger = logging.getLogger(__name__)
T = TypeVar("T")
_CACHE = "janux_map_cache"
_REFS_CACHE = "janux_map_refs_cache"
_KEPT = 4


def bucket_for(flt: TraceFilter, now_ns: int, oldest_ns: int | None = None) -> int:
    """Timeline bucket: about 48 buckets over the range, a minute at least, whole hours from a day
    up; an open range ("All time") spans from `oldest_ns` (its oldest trace) when given, else it
    gets hour buckets."""
    start = flt.start_ns if flt.start_ns is not None else oldest_ns
    if start is None:
        return HOUR_NS
    bucket = max(now_ns - start, 1) // 48
    if bucket >= HOUR_NS // 2:
        # A day or more: whole hours (24 bars for a day), which the hourly rollups of a ClickHouse
        # source answer without reading every loop of the range.
        return max(HOUR_NS, bucket // HOUR_NS * HOUR_NS)
    return max(ROUND_NS, bucket // ROUND_NS * ROUND_NS)


def _rounded(flt: TraceFilter) -> TraceFilter:
    return flt if flt.start_ns is None else replace(flt, start_ns=flt.start_ns // ROUND_NS * ROUND_NS)


def _spans(source: TraceSource) -> int:
    try:
        return source.ingest_stats().spans
    except Exception:  # no stats: never reuse
        return -1


def _cached(name: str, cache_key: tuple[object, ...], read: Callable[[], T]) -> T:
    """`read()`, kept in this session's cache `name` (the newest `_KEPT`) under `cache_key`; never
    reused when the key's span count (its last part) is unknown (-1)."""
    cache: dict[object, T] = st.session_state.setdefault(name, {})
    found = cache.get(cache_key) if cache_key[-1] != -1 else None
    if found is None:
        found = read()
        while len(cache) >= _KEPT:
            cache.pop(next(iter(cache)))
        cache[cache_key] = found
    return found


def cached_map(key: str, source: TraceSource, flt: TraceFilter, bucket_ns: int) -> AgentMap:
    """`source.agent_map(flt)`, reused while the source holds the same number of spans."""
    flt = _rounded(flt)
    cache_key = (key, repr(flt), bucket_ns, _spans(source))
    return _cached(_CACHE, cache_key, lambda: source.agent_map(flt, bucket_ns))


def cached_refs(key: str, source: TraceSource, flt: TraceFilter, group: MapKey) -> MapRefs:
    """`source.map_refs` of one node or edge of `cached_map`'s map (the same rounded range), read
    when it is inspected and reused like the map."""
    flt = _rounded(flt)
    cache_key = (key, repr(flt), group, _spans(source))
    return _cached(_REFS_CACHE, cache_key, lambda: source.map_refs(flt, group))


_warming: set[str] = set()
_warming_lock = threading.Lock()


def warm(key: str, source: TraceSource) -> None:
    """Start reading the source's agent map facts in the background, once per source per process,
    so the Agent map (and the cost pictures) open fast after the dashboard's first page. Sources
    that keep no facts between calls gain nothing and are left alone."""
    if not getattr(source, "keeps_map_facts", False):
        return
    with _warming_lock:
        if key in _warming:
            return
        _warming.add(key)

    def run() -> None:
        try:  # the Agent map page's first map: all time, its timeline buckets (then kept)
            source.agent_map(TraceFilter(), bucket_for(TraceFilter(), time.time_ns()))
        except Exception:  # a failed warm-up only means the first map is read on demand
            logger.debug("agent map warm-up failed", exc_info=True)

    threading.Thread(target=run, name="janux-map-warmup", daemon=True).start()


def rules_report(source: TraceSource, flt: TraceFilter, agent_map: AgentMap) -> tuple[Report | None, str]:
    """The rules file of `$JANUX_RULES` evaluated over the range, and a note (why none, or which file)."""
    configured = os.environ.get(RULES_ENV, "").strip()
    if not configured:
        return None, f"No alert rules: set {RULES_ENV} to a rules file (see docs/alerts.md)."
    path = Path(configured).expanduser()
    try:
        rules: RuleFile = load_rules(path)
    except RulesError as exc:
        return None, str(exc)
    return evaluate(rules, source, flt, agent_map), f"Rules from {path}"
