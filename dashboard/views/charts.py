"""Altair charts of the cost pictures and the trace histograms, each drawn from one plain table.

The page shows the table next to each chart (and offers it as CSV), so every chart returns the
exact frame it was drawn from. Nothing here imports Streamlit.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from janux.tracing.sources.protocol import TraceSummary

UNPRICED_BAND = "unpriced"
"""Name of the band holding tokens without a price (their cost is unknown, not 0)."""
UNPRICED_COLOR = "#9e9e9e"
"""Grey for the unpriced band."""


def cost_over_time(timeline: pd.DataFrame, by: str = "agent") -> alt.Chart:
    """Own cost per time bucket, stacked by `by` (agent or model; unpriced rows carry no cost and are
    left out)."""
    priced = timeline[timeline["band"] != UNPRICED_BAND]
    bands = sorted(str(b) for b in priced["band"].unique())
    colors = [_TABLEAU[i % len(_TABLEAU)] for i in range(len(bands))]
    return _stacked_bars(priced, ("cost USD", "cost (USD)", "$.6f"), by, bands, colors)


def tokens_over_time(timeline: pd.DataFrame, by: str = "agent") -> alt.Chart:
    """Tokens per time bucket, stacked by `by` (agent or model), with unpriced tokens as their own grey
    band."""
    bands = sorted(str(b) for b in timeline["band"].unique() if b != UNPRICED_BAND)
    colors = [_TABLEAU[i % len(_TABLEAU)] for i in range(len(bands))]
    if (timeline["band"] == UNPRICED_BAND).any():
        bands, colors = [*bands, UNPRICED_BAND], [*colors, UNPRICED_COLOR]
    return _stacked_bars(timeline, ("tokens", "tokens", ","), f"{by} / unpriced", bands, colors)


def _stacked_bars(
    frame: pd.DataFrame, value: tuple[str, str, str], legend: str, bands: list[str], colors: list[str]
) -> alt.Chart:
    """Bars per time bucket of `value` (column, axis title, number format), stacked by `band`."""
    column, title, number = value
    chart: alt.Chart = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("time:T", title="time (UTC)"),
            y=alt.Y(f"sum({column}):Q", title=title, stack="zero"),
            color=alt.Color("band:N", title=legend, scale=alt.Scale(domain=bands, range=colors)),
            tooltip=[
                "time:T", "band:N", alt.Tooltip(f"sum({column}):Q", format=number, title=column.split()[0])
            ],
        )
        .properties(height=220)
    )
    return chart


_TABLEAU = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]


def icicle(rects: pd.DataFrame, value_title: str) -> alt.Chart:
    """An icicle: one row per delegation depth, each path's width its share of the inclusive value."""
    chart: alt.Chart = (
        alt.Chart(rects)
        .mark_rect(stroke="white")
        .encode(
            x=alt.X("x0:Q", axis=None, scale=alt.Scale(domain=[0, 1])),
            x2="x1:Q",
            y=alt.Y("depth:O", title="delegation depth"),
            color=alt.Color("agent:N", title="agent"),
            tooltip=["path:N", alt.Tooltip("value:Q", title=value_title, format=",.6f")],
        )
        .properties(height=60 + 50 * max(1, int(rects["depth"].max()) + 1 if len(rects) else 1))
    )
    return chart


def turns_frame(summaries: list[TraceSummary]) -> pd.DataFrame:
    """One row per trace: its bill (None when unpriced or absent) and duration, for the histograms."""
    rows = [
        {"trace": s.trace_id, "cost USD": s.bill_cost, "duration ms": s.duration_ns / 1e6} for s in summaries
    ]
    return pd.DataFrame(rows, columns=["trace", "cost USD", "duration ms"])


def histogram(frame: pd.DataFrame, column: str, title: str) -> alt.Chart:
    """A small histogram of one column (missing values left out)."""
    chart: alt.Chart = (
        alt.Chart(frame.dropna(subset=[column]))
        .mark_bar()
        .encode(
            x=alt.X(f"{column}:Q", bin=alt.Bin(maxbins=30), title=title),
            y=alt.Y("count():Q", title="traces"),
        )
        .properties(height=120)
    )
    return chart
