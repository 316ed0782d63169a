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
    # Only bands with a cost to draw: an agent whose rounds are all unpriced has no bar, so no legend.
    priced = timeline[(timeline["band"] != UNPRICED_BAND) & (timeline["cost USD"].fillna(0) > 0)]
    bands = sorted(str(b) for b in priced["band"].unique())
    colors = [_TABLEAU[i % len(_TABLEAU)] for i in range(len(bands))]
    return _stacked_bars(priced, ("cost USD", "cost (USD)", "$.6f"), by, bands, colors)


def tokens_over_time(timeline: pd.DataFrame, by: str = "agent") -> alt.Chart:
    """Tokens per time bucket, stacked by `by` (agent or model), with unpriced tokens as their own grey
    band."""
    timeline = timeline[timeline["tokens"].fillna(0) > 0]  # a band without tokens has no bar, no legend
    bands = sorted(str(b) for b in timeline["band"].unique() if b != UNPRICED_BAND)
    colors = [_TABLEAU[i % len(_TABLEAU)] for i in range(len(bands))]
    if (timeline["band"] == UNPRICED_BAND).any():
        bands, colors = [*bands, UNPRICED_BAND], [*colors, UNPRICED_COLOR]
    return _stacked_bars(timeline, ("tokens", "tokens", ","), f"{by} / unpriced", bands, colors)


UTC_LABELS = (
    "utcFormat(datum.value, utchours(datum.value) == 0 && utcminutes(datum.value) == 0 "
    "? '%b %d' : '%H:%M')"
)
"""A time axis's labels in 24-hour UTC (`13:49`, never the browser's `01:49`), the date at midnight."""


def utc_time_x(field: str) -> alt.X:
    """A time axis read in UTC (the scale and its labels), 24-hour: every time on a page is UTC."""
    return alt.X(
        f"{field}:T", title="time (UTC)", scale=alt.Scale(type="utc"), axis=alt.Axis(labelExpr=UTC_LABELS)
    )


def utc_time_tooltip(field: str) -> alt.Tooltip:
    """A time in a tooltip, in UTC to the second (`2026-12-03 13:49:00`), as `formatting.utc` writes it."""
    return alt.Tooltip(f"{field}:T", title="time (UTC)", format="%Y-%m-%d %H:%M:%S", formatType="utc")


def _stacked_bars(
    frame: pd.DataFrame, value: tuple[str, str, str], legend: str, bands: list[str], colors: list[str]
) -> alt.Chart:
    """Bars per time bucket of `value` (column, axis title, number format), stacked by `band`."""
    column, title, number = value
    chart: alt.Chart = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=utc_time_x("time"),
            y=alt.Y(f"sum({column}):Q", title=title, stack="zero"),
            color=alt.Color("band:N", title=legend, scale=alt.Scale(domain=bands, range=colors)),
            tooltip=[
                utc_time_tooltip("time"),
                "band:N",
                alt.Tooltip(f"sum({column}):Q", format=number, title=column.split()[0]),
            ],
        )
        .properties(height=220)
    )
    return chart


_TABLEAU = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]


ICICLE_ROW_PX = 54
"""Height of one delegation depth in the icicle (room for two label lines)."""
CHARS_PER_SHARE = 110
"""Label characters that fit in a bar as wide as the whole icicle (about 7 px a character)."""


def icicle_labels(rects: pd.DataFrame) -> pd.DataFrame:
    """`rects` with the text drawn on each bar (`text`): the agent, and its amount in the first
    form that fits the bar's width (`amount`, else `short`), never cut: what does not fit is left
    to the tooltip (a bar too narrow for its agent's name is left blank)."""

    def fit(row: pd.Series) -> str:
        room = int((float(row["x1"]) - float(row["x0"])) * CHARS_PER_SHARE)
        name = str(row["agent"])
        if len(name) > room:
            return ""
        amount = next((str(row[c]) for c in ("amount", "short") if len(str(row[c])) <= room), None)
        return name if amount is None else f"{name}\n{amount}"

    return rects.assign(text=rects.apply(fit, axis=1) if len(rects) else pd.Series(dtype=str))


def icicle(rects: pd.DataFrame, value_title: str) -> alt.LayerChart:
    """An icicle: one row per delegation depth, each path's width its share of the inclusive value,
    each bar labelled with its agent and amount; coloured by agent (the legend lists those drawn)."""
    labelled = icicle_labels(rects)
    x = alt.X("x0:Q", axis=None, scale=alt.Scale(domain=[0, 1]))
    y = alt.Y("depth:O", title="delegation depth")
    bars = (
        alt.Chart(labelled)
        .mark_rect(stroke="white")
        .encode(
            x=x, x2="x1:Q", y=y, color=alt.Color("agent:N", title="agent"),
            tooltip=["path:N", alt.Tooltip("amount:N", title=value_title), "cost:N",
                     alt.Tooltip("tokens:Q", title="tokens in+out", format=",")],
        )
    )  # fmt: skip
    text = (
        alt.Chart(labelled)
        .transform_calculate(middle="(datum.x0 + datum.x1) / 2")
        .mark_text(color="white", fontSize=11, lineBreak="\n", baseline="middle")
        .encode(x=alt.X("middle:Q", axis=None, scale=alt.Scale(domain=[0, 1])), y=y, text="text:N")
    )
    rows = int(rects["depth"].max()) + 1 if len(rects) else 1
    return alt.LayerChart(layer=[bars, text], height=20 + ICICLE_ROW_PX * rows)


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
