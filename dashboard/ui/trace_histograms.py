"""Small histograms of turn cost and duration above the trace list (newest traces of the filter)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from janux.dashboard.ui.table import show_table
from janux.dashboard.views import charts
from janux.tracing.analysis import money_cells as cells
from janux.tracing.sources.protocol import TraceFilter, TraceSource

MAX_TRACES = 5_000
"""Newest traces the histograms read (the trace list's own summaries: no span is read)."""


def render(source: TraceSource, flt: TraceFilter) -> pd.DataFrame | None:
    """Two histograms side by side; returns the table they were drawn from (None: no traces)."""
    summaries = source.list_traces(flt, limit=MAX_TRACES)
    if not summaries:
        return None
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
    return frame


def data(frame: pd.DataFrame | None) -> None:
    """The histograms' table (behind a toggle) and CSV, drawn below the trace list."""
    if frame is None:
        return
    # A toggle rather than an expander: a collapsed table would still be in the page.
    if st.toggle("Show the data of the histograms above", key="hist_show"):
        show_table(frame, key="hist_table")
    st.download_button(
        "Download the histograms' data (CSV)",
        cells.csv_bytes(frame),
        file_name="janux-turns.csv",
        key="hist_csv",
    )
