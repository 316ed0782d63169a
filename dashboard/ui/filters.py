"""Filter widgets shared by the list pages, producing a `janux.tracing.sources.protocol.TraceFilter`."""

from __future__ import annotations

import time
from typing import Any, Literal
from urllib.parse import urlencode

import streamlit as st

from janux.dashboard.ui import url_state as url
from janux.dashboard.ui.state import active_source, link_params
from janux.tracing.analysis.trace_find import TraceQuery
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
    key = f"{prefix}_range"
    url.seed(key, "range", url.one_of(list(TIME_RANGES)))
    label = where.selectbox("Time range", list(TIME_RANGES), key=key)
    url.publish("range", label, next(iter(TIME_RANGES)))
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
    key = f"{prefix}_limit"
    url.seed(key, "scan", lambda raw: min(max(int(raw), 1), max_limit))
    st.session_state.setdefault(key, default)
    limit = int(st.number_input(limit_label, 1, max_limit, key=key))
    url.publish("scan", limit, default)
    return source, flt, limit


def _choice(where: Any, label: str, options: list[str], key: str, param: str) -> str | None:
    """A drop-down kept in the URL as `param`; None for "(any)"."""
    options = [ANY, *options]
    url.seed(key, param, url.one_of(options))
    value = str(where.selectbox(label, options, key=key))
    url.publish(param, value, ANY)
    return None if value == ANY else value


def trace_filter(prefix: str, source: TraceSource, *, full: bool = True) -> TraceFilter:
    """Filter widgets in a row of columns, kept in the URL; `full` adds status, failed-handoff,
    cost and id filters."""
    cols = st.columns(4)
    flt = TraceFilter(start_ns=time_range(prefix, cols[0]))
    flt.service = _choice(cols[1], "Service", _distinct(source, "service"), f"{prefix}_service", "service")
    agents = _distinct(source, "root_agent")
    flt.root_agent = _choice(cols[2], "Root agent", agents, f"{prefix}_agent", "agent")
    flt.conversation_id = _choice(
        cols[3], "Conversation", _distinct(source, "conversation"), f"{prefix}_conversation", "conversation"
    )
    if not full:
        return flt
    more = st.columns(4)
    status = _choice(more[0], "Status", ["ok", "error"], f"{prefix}_status", "status")
    flt.status = None if status is None else ("ok" if status == "ok" else "error")
    url.seed(f"{prefix}_cost", "min_cost", lambda raw: max(float(raw), 0.0))
    min_cost = more[1].number_input("Min cost (USD)", min_value=0.0, step=0.01, key=f"{prefix}_cost")
    url.publish("min_cost", min_cost, 0.0)
    flt.min_cost = float(min_cost) if min_cost > 0 else None
    url.seed(f"{prefix}_id", "id", str)
    trace_id = more[2].text_input("Trace id starts with", key=f"{prefix}_id").strip().lower()
    url.publish("id", trace_id, "")
    flt.trace_id = trace_id or None
    more[3].write("")  # aligns the checkbox with the inputs beside it
    url.seed(f"{prefix}_failed", "failed", url.flag)
    flt.has_failed_handoffs = more[3].checkbox("Has failed handoffs", key=f"{prefix}_failed")
    url.publish("failed", flt.has_failed_handoffs, False)
    return flt


FIND_FIELDS = (
    ("reason", "Failure reason", "rate_limited, max_turns, model_error"),
    ("agent", "Agent anywhere", "an agent that ran at any depth"),
    ("error", "Error text", "words of an error message"),
    ("attribute", "Span attribute", "key=value, or key"),
)
"""(field of `TraceQuery` and URL parameter, label, placeholder) of the find-inside inputs."""


def find_inside() -> TraceQuery:
    """ "Find inside traces": failure reason, agent anywhere, error text, span attribute; kept in
    the URL (`?reason=&agent_any=&error=&attribute=`)."""
    params = {"reason": "reason", "agent": "agent_any", "error": "error", "attribute": "attribute"}
    query = TraceQuery()
    with st.expander("Find inside traces", expanded=any(p in st.query_params for p in params.values())):
        cols = st.columns(len(FIND_FIELDS))
        for col, (name, label, hint) in zip(cols, FIND_FIELDS, strict=True):
            key = f"traces_find_{name}"
            url.seed(key, params[name], str)
            value = col.text_input(label, key=key, placeholder=hint).strip()
            url.publish(params[name], value, "")
            setattr(query, name, value)
    return query
