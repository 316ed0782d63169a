"""Failures: every denied, failed, fallback, cut, timed-out or unfinished handoff, grouped by reason."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import streamlit as st

from janux.dashboard.ui import nav
from janux.dashboard.ui.edge_filter import edge_only
from janux.dashboard.ui.filters import scan_inputs
from janux.dashboard.ui.state import get_views
from janux.dashboard.ui.table import show_table
from janux.dashboard.views.tables import failures_frame
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_parts import Failure
from janux.tracing.sources.protocol import TraceFilter, TraceSource

DEFAULT_MAX_TRACES = 200
KINDS = ("denied", "failed", "fallback", "cut", "timeout", "retried", "open", "error")
# Help text of the kind metrics that need one. (A bare string here would be drawn on the page:
# Streamlit's "magic" writes every top-level expression of a page script.)
KIND_HELP = {
    "timeout": "Handoffs with at least one timed-out attempt, whatever their final status "
    "(a timeout followed by a fallback also counts under fallback).",
    "retried": "Handoffs that completed after a failed attempt: the attempt's error is listed, the "
    "handoff did not fail.",
    "open": "Handoffs with a HANDOFF_START and no HANDOFF_END yet.",
    "error": "Failed agent loops of other runtimes.",
}


FULL_TEXT_HELP = "The whole message; a click on the row shows it in full on the failed-handoff screen."
ERROR_COLUMNS = {
    "error": st.column_config.TextColumn(
        "error", width="large", help="Double-click a cell for its full text."
    ),
    "task": st.column_config.TextColumn("task", width="medium"),
}  # the error column is wide; the failed-handoff screen shows the whole text


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


def _timeout_note(failures: list[Failure]) -> str:
    """One line on timed-out attempts: how many, in how many handoffs, and how those ended."""
    timed_out = [f for f in failures if f.timeouts]
    if not timed_out:
        return "No attempt timed out."
    endings = Counter(f.status for f in timed_out)
    ends = ", ".join(f"{status} {n}" for status, n in sorted(endings.items()))
    attempts = sum(f.timeouts for f in timed_out)
    return (
        f"Timed out: {attempts} attempt{'s' if attempts != 1 else ''} in {len(timed_out)} "
        f"handoff{'s' if len(timed_out) != 1 else ''}; final status: {ends}."
    )


def _counts(failures: list[Failure]) -> None:
    """A metric per kind; `timeout` counts every handoff with a timed-out attempt."""
    for col, kind in zip(st.columns(len(KINDS)), KINDS, strict=True):
        col.metric(kind, sum(1 for f in failures if f.has_kind(kind)), help=KIND_HELP.get(kind))
    st.caption(fmt.markdown_text(_timeout_note(failures)))


def main() -> None:
    """Draw the page."""
    nav.restore_list(nav.FAILURES)
    st.title("Failures")
    inputs = scan_inputs("failures", "Newest traces to scan", 10_000, DEFAULT_MAX_TRACES)
    if inputs is None:
        return
    source, flt, limit = inputs
    kinds = st.multiselect("Kinds", KINDS, default=list(KINDS), key="failures_kinds")
    failures = [f for f in _collect(source, flt, limit) if any(f.has_kind(k) for k in kinds)]
    failures = edge_only(failures)
    _counts(failures)
    if not failures:
        st.success("No failed handoffs in this range.")
        return
    frame = failures_frame(failures)
    grouped = frame.groupby(["kind", "final status", "reason"]).size().reset_index(name="handoffs")
    st.subheader("By reason")
    show_table(grouped.sort_values("handoffs", ascending=False), key="failures_groups")
    st.subheader("Every failed handoff")
    st.caption("Click a row to see why it failed (a failed loop opens its trace at that span).")
    order = sorted(range(len(failures)), key=lambda i: (failures[i].kind, failures[i].reason))
    frame = frame.iloc[order].reset_index(drop=True)
    nav.remember_list(nav.FAILURES, list(dict.fromkeys(frame["trace"])))
    picked = show_table(
        frame, key="failures_table", visible_rows=25, column_config=ERROR_COLUMNS, selectable=True
    )
    if picked is not None:
        chosen = failures[order[picked]]
        if chosen.delegation is None:
            nav.open_trace(chosen.trace_id, chosen.span_id)
        nav.open_handoff(chosen.trace_id, chosen.span_id)


main()
