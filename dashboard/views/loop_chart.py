"""The handoff tree as a clickable Altair chart: one point per agent loop (x: depth, y: tree order),
a line from each caller to each attempt, coloured by how the attempt ended. Clicking a point selects
that loop's span on the Trace page (the Graphviz picture in the tabs below cannot be clicked)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.trace_view import TraceView

MAX_LOOPS = 300
"""Loops drawn (the first in tree order); the tree table lists every span."""
ROW_PX = 36
"""Height of one loop's row."""
STATE_COLORS = {"ok": "#2e7d32", "failed": "#c62828", "open": "#6a1b9a"}
"""Colour of a loop (and the line to it): completed, failed in any way (failed, cut, timeout,
error), still open."""


def loop_frames(view: TraceView) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(points, lines): a point per loop with its label, outcome and cost; a line per attempt."""
    nodes = view.nodes[:MAX_LOOPS]
    shown = {n.index for n in nodes}
    attempt_of = {a.node: (d, a) for d in view.delegations for a in d.attempts}
    points = []
    for row, node in enumerate(nodes):
        via = attempt_of.get(node.index)
        outcome = outcomes.attempt_outcome(via[1]) if via else outcomes.loop_outcome(node)
        label = node.agent + (f" #{via[1].number}" if via and via[0].attempt_count > 1 else "")
        points.append(
            {"row": row, "depth": node.depth, "label": label, "outcome": outcome, "state": _state(outcome),
             "cost": fmt.usage_cost(node.inclusive), "span_id": node.span_id}
        )  # fmt: skip
    rows = {p["span_id"]: p for p in points}
    lines = []
    for node in nodes:
        if node.parent is None or node.parent not in shown:
            continue
        parent, child = rows[view.nodes[node.parent].span_id], rows[node.span_id]
        lines.append(
            {"depth": parent["depth"], "row": parent["row"], "depth2": child["depth"],
             "row2": child["row"], "state": child["state"]}
        )  # fmt: skip
    return pd.DataFrame(points), pd.DataFrame(lines, columns=["depth", "row", "depth2", "row2", "state"])


def _state(outcome: str) -> str:
    """`ok`, `open` or `failed`: the colour class of an outcome."""
    if outcome in ("completed", "ok"):
        return "ok"
    return "open" if outcome == outcomes.STILL_OPEN else "failed"


def _color() -> alt.Color:
    states = list(STATE_COLORS)
    return alt.Color(
        "state:N", scale=alt.Scale(domain=states, range=list(STATE_COLORS.values())), legend=None
    )


def loop_chart(points: pd.DataFrame, lines: pd.DataFrame, pick: alt.Parameter) -> alt.LayerChart:
    """Lines under points under labels, on shared scales; `pick` (a point selection on `span_id`)
    on the points."""
    xs = alt.Scale(domain=[-0.2, int(points["depth"].max()) + 1.5])
    ys = alt.Scale(domain=[-0.5, max(len(points), 1) - 0.5], reverse=True)
    x = alt.X("depth:Q", axis=None, scale=xs)
    y = alt.Y("row:Q", axis=None, scale=ys)
    edges = (
        alt.Chart(lines)
        .mark_rule(strokeWidth=1.5)
        .encode(x=x, y=y, x2="depth2:Q", y2="row2:Q", color=_color())
    )
    dots = (
        alt.Chart(points)
        .mark_circle(size=160)
        .encode(x=x, y=y, color=_color(), tooltip=["label:N", "outcome:N", "cost:N", "span_id:N"])
        .add_params(pick)
    )
    labels = alt.Chart(points).mark_text(align="left", dx=10).encode(x=x, y=y, text="label:N")
    return alt.LayerChart(layer=[edges, dots, labels], height=ROW_PX * max(len(points), 2))
