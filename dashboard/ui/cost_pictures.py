"""Costs as pictures: cost and tokens over time by agent (unpriced tokens as their own band) and an
icicle of inclusive cost by delegation path, each with its table one click away and as CSV."""

from __future__ import annotations

import time

import altair as alt
import pandas as pd
import streamlit as st

from janux.dashboard.ui.map_data import bucket_for, cached_map
from janux.dashboard.ui.table import show_table
from janux.dashboard.views import charts
from janux.dashboard.views import map_tables as views
from janux.tracing.analysis import money_cells as cells
from janux.tracing.sources.protocol import TraceFilter, TraceSource


def chart_with_table(title: str, chart: alt.Chart, frame: pd.DataFrame, key: str) -> None:
    """A chart, and in a second tab the table it was drawn from, with its CSV."""
    st.subheader(title)
    picture, table = st.tabs(["Chart", "Table"])
    with picture:
        st.altair_chart(chart, width="stretch", key=f"chart_{key}")
    with table:
        show_table(frame, key=f"chart_table_{key}")
    st.download_button(
        f"Download {title.lower()} (CSV)", cells.csv_bytes(frame), file_name=f"janux-{key}.csv",
        mime="text/csv", key=f"chart_csv_{key}",
    )  # fmt: skip


def _oldest_ns(source: TraceSource, flt: TraceFilter) -> int | None:
    """Start of the oldest trace in an open range (None for a bounded range, or no trace)."""
    if flt.start_ns is not None:
        return None
    total = source.count_traces(flt)
    oldest = source.list_traces(flt, limit=1, offset=max(total - 1, 0)) if total else []
    return oldest[0].start_ns if oldest else None


def render(key: str, source: TraceSource, flt: TraceFilter) -> None:
    """Draw the cost pictures of the range (exact: the source's agent map)."""
    st.header("Cost over time and by delegation path")
    # Buckets from the range's real extent (minutes to days): hour buckets over a few minutes of
    # traces would draw the whole range as one thin bar.
    bucket = bucket_for(flt, time.time_ns(), _oldest_ns(source, flt))
    agent_map = cached_map(key, source, flt, bucket)
    if not agent_map.nodes:
        st.info("No agent loops in this range.")
        return
    st.caption(
        "Exact over every trace in the range. Each loop's own rounds, at the loop's start. Tokens "
        "without a price are their own grey band: their cost is unknown, not $0."
    )
    by = st.radio("Stack by", ["agent", "model"], horizontal=True, key="costs_stack_by")
    if by == "model":
        timeline = views.model_timeline_frame(source.model_timeline(flt, bucket))
        st.caption("By model: every model round, placed at its trace's start.")
    else:
        timeline = views.timeline_frame(agent_map)
    chart_with_table(f"Cost over time by {by}", charts.cost_over_time(timeline, by), timeline, "cost_time")
    tokens = charts.tokens_over_time(timeline, by)
    chart_with_table(f"Tokens over time by {by}", tokens, timeline, "tokens_time")
    rects = views.icicle_frame(agent_map)
    paths = views.paths_frame(agent_map)
    if rects.empty:
        st.info("Nothing priced in this range: the icicle of cost needs priced rounds.")
        return
    chart_with_table(
        "Inclusive cost by delegation path", charts.icicle(rects, "inclusive USD"), paths, "paths"
    )
