"""Filter widgets shared by the list pages, producing a `janux.tracing.sources.protocol.TraceFilter`."""

from __future__ import annotations

import time
from typing import Literal
from urllib.parse import urlencode

import streamlit as st

from janux.dashboard.ui.state import active_source, link_params
from janux.tracing.sources.protocol import TraceFilter, TraceSource

TIME_RANGES: dict[str, float | None] = {
    "All time": None,
    "Last 15 minutes": 15 * 60,
    "Last hour": 3600,
    "Last 24 hours": 86_400,
    "Last 7 days": 7 * 86_400,
    "Last 30 days": 30 * 86_400,
}
"""Offered time ranges (seconds back from now; None = no bound)."""
ANY = "(any)"
"""Drop-down entry meaning "no filter"."""
TRACE_PAGE = "trace"
"""URL path of the Trace page (links carry `?trace_id=`)."""


def trace_link(trace_id: str) -> str:
    """Relative URL of the Trace page for one trace (with what a new tab needs to find its source)."""
    return f"{TRACE_PAGE}?{urlencode({'trace_id': trace_id, **link_params()})}"


def _distinct(source: TraceSource, what: Literal["service", "root_agent", "conversation"]) -> list[str]:
    try:
        return source.distinct_values(what)
    except Exception:  # a drop-down must never take the page down
        return []


def time_range(prefix: str, container: st.delta_generator.DeltaGenerator | None = None) -> int | None:
    """A time-range selector; returns the start bound in Unix ns (None = all time)."""
    where = container or st
    label = where.selectbox("Time range", list(TIME_RANGES), key=f"{prefix}_range")
    seconds = TIME_RANGES[label]
    return None if seconds is None else time.time_ns() - int(seconds * 1e9)


def scan_inputs(
    prefix: str, limit_label: str, max_limit: int, default: int
) -> tuple[TraceSource, TraceFilter, int] | None:
    """The active source, the range filters and how many of the newest traces to read, for the
    pages that aggregate over traces (Costs, Failures); None when no source is open."""
    active = active_source()
    if active is None:
        return None
    _, source = active
    flt = trace_filter(prefix, source, full=False)
    limit = int(st.number_input(limit_label, 1, max_limit, default, key=f"{prefix}_limit"))
    return source, flt, limit


def trace_filter(prefix: str, source: TraceSource, *, full: bool = True) -> TraceFilter:
    """Filter widgets in a row of columns; `full` adds status, failed-handoff, cost and id filters."""
    cols = st.columns(4)
    flt = TraceFilter(start_ns=time_range(prefix, cols[0]))
    service = cols[1].selectbox("Service", [ANY, *_distinct(source, "service")], key=f"{prefix}_service")
    agent = cols[2].selectbox("Root agent", [ANY, *_distinct(source, "root_agent")], key=f"{prefix}_agent")
    conversation = cols[3].selectbox(
        "Conversation", [ANY, *_distinct(source, "conversation")], key=f"{prefix}_conversation"
    )
    flt.service = None if service == ANY else service
    flt.root_agent = None if agent == ANY else agent
    flt.conversation_id = None if conversation == ANY else conversation
    if not full:
        return flt
    more = st.columns(4)
    status = more[0].selectbox("Status", [ANY, "ok", "error"], key=f"{prefix}_status")
    flt.status = None if status == ANY else ("ok" if status == "ok" else "error")
    min_cost = more[1].number_input(
        "Min cost (USD)", min_value=0.0, value=0.0, step=0.01, key=f"{prefix}_cost"
    )
    flt.min_cost = float(min_cost) if min_cost > 0 else None
    trace_id = more[2].text_input("Trace id starts with", key=f"{prefix}_id").strip().lower()
    flt.trace_id = trace_id or None
    more[3].write("")  # aligns the checkbox with the inputs beside it
    flt.has_failed_handoffs = more[3].checkbox("Has failed handoffs", key=f"{prefix}_failed")
    return flt
