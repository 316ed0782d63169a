"""The agent map as a clickable Altair chart: a dot per agent, a line per (caller, target, kind).

Agents are laid out in columns by the longest chain of delegations reaching them, a row each, and
each edge is an elbow from its caller down to its target's row and across; an edge's width
follows its count or the cost it carried, its colour the failure rate, and a transfer is thicker,
an edge whose caller is missing dashed. Every agent's dot and every edge's diamond (half-way along
it) carries the inspector's entry for it (`choice`, `map_tables.choices`), so a click inspects what
the selector would. Names from traces are data, drawn as text, never markup. Nothing here imports
Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import altair as alt
import pandas as pd

from janux.dashboard.views.chart_marks import haloed_text
from janux.dashboard.views.map_tables import (
    MAX_PEN,
    MIN_PEN,
    WidthBy,
    agent_names,
    caller_name,
    edge_label,
    failure_color,
    ms,
    rate_label,
    usd_label,
)
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, AgentStats, EdgeStats

ROW_PX = 96
"""Height of one agent's row: its label (four lines, more with badges) and an edge's label above
the next row's line fit between two rows."""
LINE_PX = 12
"""Line height of an edge's label."""
SELECTED_COLOR = "#1565c0"
"""Outline of the inspected agent or edge."""
_POINT_COLUMNS = ["x", "y", "kind", "label", "detail", "choice", "color", "selected"]
_LINE_COLUMNS = ["x", "y", "x2", "y2", "color", "width", "dashed", "choice"]


@dataclass
class MapFrames:
    """What the map is drawn from."""

    points: pd.DataFrame
    """A row per agent (`kind` agent) and per edge (`kind` edge, at its middle): position, `label`
    (drawn), `detail` (the whole text), `choice` (the inspector's entry), `color`, `selected`."""
    lines: pd.DataFrame
    """A row per edge: from (`x`, `y`) to (`x2`, `y2`), `color`, `width`, `dashed`, `choice`."""


def agent_lines(node: AgentStats, badges: list[str]) -> list[str]:
    """An agent's label: name, runs and error rate, own and inclusive cost, p50/p95, crossed rules."""
    return [
        node.agent,
        f"{node.runs:,} runs · {rate_label(node.error_rate)} errors",
        f"own {usd_label(node.own)} · incl {usd_label(node.inclusive)}",
        f"p50 {ms(node.p50_ms)} · p95 {ms(node.p95_ms)}",
        *(f"⚠ {name}" for name in badges),
    ]


def edge_lines(edge: EdgeStats, badges: list[str]) -> list[str]:
    """An edge's label: delegations and failure rate, attempts (counted, never a ratio) and cost."""
    return [
        f"{edge.count:,}× · {rate_label(edge.failure_rate)} failed",
        f"{edge.attempts:,} attempts · {usd_label(edge.cost)}",
        *(f"⚠ {name}" for name in badges),
    ]


def _columns(names: list[str], edges: list[EdgeStats]) -> dict[str, int]:
    """Column of each agent: one right of its furthest caller (the longest chain of delegations from
    a top-level agent), so a delegation of a delegation sits one column further; a cycle stops
    growing after as many rounds as there are agents."""
    column = dict.fromkeys(names, 0)
    links = [(caller_name(e), e.target) for e in edges if caller_name(e) != e.target]
    for _ in range(len(names)):
        moved = False
        for caller, target in links:
            if column[target] < column[caller] + 1 < len(names):
                column[target], moved = column[caller] + 1, True
        if not moved:
            break
    return column


def _widths(edges: list[EdgeStats], width_by: WidthBy) -> list[float]:
    values = [float(e.count) if width_by == "count" else float(e.cost.cost or 0.0) for e in edges]
    top = max(values, default=0.0)
    if top <= 0:
        return [MIN_PEN for _ in edges]
    return [MIN_PEN + (MAX_PEN - MIN_PEN) * v / top for v in values]


def _rows(names: list[str], column: dict[str, int], edges: list[EdgeStats]) -> dict[str, int]:
    """A row of its own for each agent, depth first from the agents in column 0, so each agent sits
    below its first caller and no line between two agents runs through a third."""
    targets: dict[str, list[str]] = {}
    for edge in edges:
        targets.setdefault(caller_name(edge), []).append(edge.target)
    row: dict[str, int] = {}
    stack = [name for name in reversed(names) if column[name] == 0]
    while stack:
        name = stack.pop()
        if name in row:
            continue
        row[name] = len(row)
        stack.extend(t for t in reversed(targets.get(name, [])) if t not in row)
    for name in names:  # in a cycle no top-level agent reaches
        row.setdefault(name, len(row))
    return row


def map_frames(
    agent_map: AgentMap,
    *,
    width_by: WidthBy = "count",
    node_badges: Mapping[str, list[str]] | None = None,
    edge_badges: Mapping[tuple[str, str, str], list[str]] | None = None,
    selected: str | None = None,
) -> MapFrames:
    """The map's dots, diamonds and lines; `selected` (an inspector entry) is outlined."""
    names = agent_names(agent_map)
    column = _columns(names, agent_map.edges)
    row = _rows(names, column, agent_map.edges)
    by_name = {n.agent: n for n in agent_map.nodes}
    points, lines = [], []
    for name in names:
        choice = f"agent: {name}"
        text = agent_lines(by_name.get(name) or AgentStats(name), list((node_badges or {}).get(name, [])))
        color = "#c62828" if (node_badges or {}).get(name) else "#455a64"
        points.append(_point(column[name], row[name], "agent", text, choice, color, selected == choice))
    arrived: dict[str, int] = {}
    for edge, width in zip(agent_map.edges, _widths(agent_map.edges, width_by), strict=True):
        start, end = caller_name(edge), edge.target
        x, y, x2, y2 = column[start], row[start], column[end], row[end]
        # An elbow: down (or up) from the caller to the target's row, then across to it; a second
        # edge into the same agent runs a little below the first, so the two stay apart.
        lane = y2 + 0.1 * arrived.get(end, 0)
        arrived[end] = arrived.get(end, 0) + 1
        choice, color = f"edge: {edge_label(edge)}", failure_color(edge.failure_rate)
        style = {"color": color, "width": width * (1.6 if edge.kind == "transfer" else 1.0),
                 "dashed": not edge.caller, "choice": choice}  # fmt: skip
        lines.append({"x": x, "y": y, "x2": x, "y2": lane, **style})
        lines.append({"x": x, "y": lane, "x2": x2, "y2": lane, **style})
        # Half-way across; an edge into its own agent has no stretch across: its diamond sits beside.
        middle = ((x + x2) / 2, lane) if x != x2 else (x + 0.3, lane - 0.35)
        text = edge_lines(edge, list((edge_badges or {}).get(edge.key, [])))
        points.append(_point(*middle, "edge", text, choice, color, selected == choice))
    return MapFrames(pd.DataFrame(points, columns=_POINT_COLUMNS), pd.DataFrame(lines, columns=_LINE_COLUMNS))


def _point(
    x: float, y: float, kind: str, lines: list[str], choice: str, color: str, selected: bool
) -> dict[str, object]:
    clean = [" ".join(line.split()) for line in lines]  # one line each: a name's newlines flattened
    return {"x": x, "y": y, "kind": kind, "label": "\n".join(clean), "detail": " · ".join(clean),
            "choice": choice, "color": color, "selected": selected}  # fmt: skip


def map_chart(frames: MapFrames, pick: alt.Parameter) -> alt.LayerChart:
    """Lines under dots and diamonds under labels; `pick` (a point selection on `choice`) on the
    dots and diamonds."""
    points = frames.points
    agents = points[points["kind"] == "agent"]
    columns = float(points["x"].max()) if len(points) else 0.0
    rows = int(agents["y"].max()) + 1 if len(agents) else 1
    x = alt.X("x:Q", axis=None, scale=alt.Scale(domain=[-0.15, columns + 0.85]))
    y = alt.Y("y:Q", axis=None, scale=alt.Scale(domain=[-0.5, rows - 0.3], reverse=True))
    color = alt.Color("color:N", scale=None)
    lines = (
        alt.Chart(frames.lines)
        .mark_rule(opacity=0.8)
        .encode(
            x=x, y=y, x2="x2:Q", y2="y2:Q", color=color, strokeWidth=alt.StrokeWidth("width:Q", scale=None),
            strokeDash=alt.condition("datum.dashed", alt.value([5, 4]), alt.value([1, 0])),
        )
    )  # fmt: skip
    shapes = alt.Scale(domain=["agent", "edge"], range=["circle", "diamond"])
    marks = (
        alt.Chart(points)
        .mark_point(filled=True, size=220, opacity=1, strokeWidth=3)
        .encode(
            x=x, y=y, color=color, shape=alt.Shape("kind:N", scale=shapes, legend=None),
            stroke=alt.condition("datum.selected", alt.value(SELECTED_COLOR), alt.value("white")),
            tooltip=[alt.Tooltip("choice:N", title="inspect"), alt.Tooltip("detail:N", title="what")],
        )
        .add_params(pick)
    )  # fmt: skip
    # Agents: to the right of the dot (lines arrive from the left and leave downwards); edges: two
    # lines above their stretch across (Vega aligns only a text's first line to a baseline).
    agent_text = haloed_text(
        alt.Chart(points).transform_filter("datum.kind == 'agent'"),
        {"align": "left", "baseline": "middle", "dx": 10, "lineBreak": "\n", "fontSize": 11},
        {"x": x, "y": y, "text": "label:N",
         "color": alt.condition("datum.selected", alt.value(SELECTED_COLOR), alt.value("#263238"))},
    )  # fmt: skip
    edge_text = haloed_text(
        alt.Chart(points).transform_filter("datum.kind == 'edge'"),
        {"align": "center", "baseline": "top", "dy": -(2 * LINE_PX) - 6, "lineBreak": "\n", "fontSize": 10,
         "lineHeight": LINE_PX},
        {"x": x, "y": y, "text": "label:N",
         "color": alt.condition("datum.selected", alt.value(SELECTED_COLOR), alt.value("#37474f"))},
    )  # fmt: skip
    return alt.LayerChart(layer=[lines, marks, *agent_text, *edge_text], height=ROW_PX * max(rows, 2))
