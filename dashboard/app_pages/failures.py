"""Failures: every denied, failed, fallback, cut, timed-out or unfinished handoff, grouped by reason."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from dashboard.reconstruct.model import Failure
from dashboard.ui.filters import trace_filter, trace_link
from dashboard.ui.state import active_source, get_views
from dashboard.ui.table import OPEN_LINK, show_table
from dashboard.views.tables import failures_frame
from tracing.source import TraceFilter, TraceSource

DEFAULT_MAX_TRACES = 200
KINDS = ("denied", "failed", "fallback", "cut", "timeout", "open", "error")


def _trace_ids(source: TraceSource, flt: TraceFilter, limit: int) -> list[str]:
    """Traces with failing handoffs, plus traces with ERROR spans (timeouts, failed turns)."""
    ids = [s.trace_id for s in source.list_traces(replace(flt, has_failed_handoffs=True), limit=limit)]
    ids += [s.trace_id for s in source.list_traces(replace(flt, status="error"), limit=limit)]
    ids += [s.trace_id for s in source.failed_handoff_spans(flt, limit=limit)]
    return list(dict.fromkeys(ids))[:limit]


def _collect(source: TraceSource, flt: TraceFilter, limit: int) -> list[Failure]:
    views = get_views(_trace_ids(source, flt, limit))
    found = [f for view in views.values() for f in view.failures]
    found.sort(key=lambda f: -f.start_ns)
    return found


def main() -> None:
    """Draw the page."""
    st.title("Failures")
    active = active_source()
    if active is None:
        return
    _, source = active
    flt = trace_filter("failures", source, full=False)
    limit = int(st.number_input("Newest traces to scan", 1, 10_000, DEFAULT_MAX_TRACES, key="failures_limit"))
    kinds = st.multiselect("Kinds", KINDS, default=list(KINDS), key="failures_kinds")
    failures = [f for f in _collect(source, flt, limit) if f.kind in kinds]
    cols = st.columns(len(KINDS))
    for col, kind in zip(cols, KINDS, strict=True):
        col.metric(kind, sum(1 for f in failures if f.kind == kind))
    if not failures:
        st.success("No failed handoffs in this range.")
        return
    frame = failures_frame(failures)
    grouped = frame.groupby(["kind", "reason"]).size().reset_index(name="handoffs")
    st.subheader("By reason")
    show_table(grouped.sort_values("handoffs", ascending=False), key="failures_groups")
    st.subheader("Every failed handoff")
    frame = frame.assign(open=[trace_link(t) for t in frame["trace"]]).sort_values(["kind", "reason"])
    show_table(frame, key="failures_table", visible_rows=25, column_config={"open": OPEN_LINK})


main()
