"""Costs as pictures: cost and tokens over time by agent (unpriced tokens as their own band) and an
icicle of inclusive tokens or cost by delegation path, each with its table one click away and as CSV."""

from __future__ import annotations

import time
from typing import Literal

import altair as alt
import pandas as pd
import streamlit as st

from janux.dashboard.ui.map_data import bucket_for, cached_map
from janux.dashboard.ui.table import show_table
from janux.dashboard.views import charts
from janux.dashboard.views import map_tables as views
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap
from janux.tracing.sources.protocol import TraceFilter, TraceSource


def chart_with_table(
    title: str, chart: alt.Chart | alt.LayerChart, frame: pd.DataFrame, key: str, csv_name: str | None = None
) -> None:
    """A chart, and in a second tab the table it was drawn from, with its CSV (named `csv_name`, else
    as the chart)."""
    st.subheader(title)
    picture, table = st.tabs(["Chart", "Table"])
    with picture:
        st.altair_chart(chart, width="stretch", key=f"chart_{key}")
    with table:
        show_table(frame, key=f"chart_table_{key}")
    st.download_button(
        f"Download {(csv_name or title).lower()} (CSV)", cells.csv_bytes(frame), file_name=f"janux-{key}.csv",
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
    _icicle(agent_map)


def _icicle(agent_map: AgentMap) -> None:
    """The icicle of delegation paths, bars as wide as their tokens (every path that ran) or their
    recorded cost (priced paths only), each labelled with its agent and amount."""
    width_by = st.radio(
        "Icicle bar width by", ["tokens", "cost"], horizontal=True, key="costs_icicle_by",
        help="Tokens: every delegation path that ran. Cost: paths with a recorded cost only.",
    )  # fmt: skip
    by: Literal["cost", "tokens"] = "cost" if width_by == "cost" else "tokens"
    rects = views.icicle_frame(agent_map, by)
    paths = views.paths_frame(agent_map)
    if rects.empty:
        st.info(f"Nothing to draw in this range: no delegation path with {by}.")
        return
    title = "Inclusive cost by delegation path" if by == "cost" else "Inclusive tokens by delegation path"
    icicle = charts.icicle(rects, f"inclusive {by}")
    chart_with_table(title, icicle, paths, "paths", csv_name="Inclusive cost and tokens by delegation path")
    missing = len(paths) - len(rects)
    if missing:
        st.caption(
            f"{missing:,} path(s) without a recorded cost have no width here: size by tokens to see them."
        )
