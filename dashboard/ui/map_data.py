"""The agent map of the active source for a filter, cached per session so clicks do not recompute it."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import replace
from pathlib import Path

import streamlit as st

from janux.tracing.alerts import Report, RuleFile, RulesError, evaluate, load_rules
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap
from janux.tracing.sources.protocol import TraceFilter, TraceSource

RULES_ENV = "JANUX_RULES"
"""Environment variable naming the alert rules file the agent map shows as badges."""
ROUND_NS = 60 * 1_000_000_000
"""A relative range's start is rounded down to the minute, so reruns within it reuse the map."""
logger = logging.getLogger(__name__)
_CACHE = "janux_map_cache"
_KEPT = 4


def bucket_for(flt: TraceFilter, now_ns: int, oldest_ns: int | None = None) -> int:
    """Timeline bucket: about 48 buckets over the range, a minute at least; an open range ("All
    time") spans from `oldest_ns` (its oldest trace) when given, else it gets hour buckets."""
    start = flt.start_ns if flt.start_ns is not None else oldest_ns
    if start is None:
        return 3_600 * 1_000_000_000
    span = max(now_ns - start, 1)
    return max(ROUND_NS, span // 48 // ROUND_NS * ROUND_NS)


def cached_map(key: str, source: TraceSource, flt: TraceFilter, bucket_ns: int) -> AgentMap:
    """`source.agent_map(flt)`, reused while the source holds the same number of spans."""
    if flt.start_ns is not None:
        flt = replace(flt, start_ns=flt.start_ns // ROUND_NS * ROUND_NS)
    try:
        spans = source.ingest_stats().spans
    except Exception:  # no stats: never reuse
        spans = -1
    cache_key = (key, repr(flt), bucket_ns, spans)
    cache: dict[object, AgentMap] = st.session_state.setdefault(_CACHE, {})
    found = cache.get(cache_key) if spans >= 0 else None
    if found is None:
        found = source.agent_map(flt, bucket_ns)
        while len(cache) >= _KEPT:
            cache.pop(next(iter(cache)))
        cache[cache_key] = found
    return found


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
