"""Small histograms of turn cost and duration above the trace list (newest traces of the filter)."""

from __future__ import annotations

import streamlit as st

from janux.dashboard.ui.table import show_table
from janux.dashboard.views import cells, charts
from janux.tracing.sources.protocol import TraceFilter, TraceSource

MAX_TRACES = 5_000
"""Newest traces the histograms read (the trace list's own summaries: no span is read)."""


def render(source: TraceSource, flt: TraceFilter) -> None:
    """Two histograms side by side, and the table they were drawn from in an expander."""
    summaries = source.list_traces(flt, limit=MAX_TRACES)
    if not summaries:
        return
    frame = charts.turns_frame(summaries)
    left, right = st.columns(2)
    left.altair_chart(
        charts.histogram(frame, "cost USD", "turn cost (USD)"), width="stretch", key="hist_cost"
    )
    right.altair_chart(
        charts.histogram(frame, "duration ms", "duration (ms)"), width="stretch", key="hist_ms"
    )
    unpriced = int(frame["cost USD"].isna().sum())
    st.caption(
        f"The newest {len(frame):,} traces of the filter; {unpriced:,} without a priced bill are left out of "
        "the cost histogram (unknown, not $0)."
    )
    with st.expander("Data of the histograms"):
        show_table(frame, key="hist_table")
        st.download_button(
            "Download (CSV)", cells.csv_bytes(frame), file_name="janux-turns.csv", key="hist_csv"
        )
