"""The handoff graph as a clickable Altair chart: the Trace page's one graph (beside the detail),
and Compare's two.

A row per agent loop in tree order (x: delegation depth), each handoff an elbow from its caller to
the attempt's loop, labelled as `handoff_labels` says (tool; attempt n/N, how it ended, its own
duration). Handoffs that started no loop are notes; loops beyond the drawing budget are collapsed
into "+N more loops". Every loop, note and handoff carries the span it stands for (`span_id`):
clicking a loop's dot or a handoff's diamond selects that span in the explorer (a retried
delegation's diamonds each select their attempt). Nothing here
imports Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import altair as alt
import pandas as pd

from janux.dashboard.views.chart_marks import haloed_text
from janux.dashboard.views.handoff_labels import (
    DEFAULT_MAX_NODES,
    children_of,
    drawn_parents,
    edge_lines,
    ghost_lines,
    hidden_below,
    node_lines,
    visible_loops,
)
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.trace_parts import Attempt, Delegation
from janux.tracing.analysis.trace_view import TraceView

ROW_PX = 58
"""Height of one row: a loop's label (up to three lines) and the two-line label of the handoff
arriving at the next row fit between two rows."""
EDGE_LINE_PX = 12
"""Line height of a handoff's label."""
MAX_LINE = 48
"""Longest label line drawn; the whole text is in the tooltip."""
STATE_COLORS = {"ok": "#2e7d32", "failed": "#c62828", "open": "#6a1b9a", "more": "#78909c"}
"""Colour of a mark: completed, failed in any way (failed, cut, timeout, error, denied), still
open, collapsed loops."""
SELECTED_COLOR = "#1565c0"
"""Outline of the marks of the span shown in the detail."""
ITEM_SHAPES = {
    "loop": "circle", "not run": "square", "shared run": "square", "handoff": "diamond",
    "more": "triangle-down",
}  # fmt: skip
"""Shape of each kind of clickable mark."""
_POINT_COLUMNS = ["row", "depth", "kind", "label", "detail", "state", "span_id"]
_EDGE_COLUMNS = ["depth", "row", "depth2", "row2", "state", "dashed"]


@dataclass
class HandoffFrames:
    """What the chart is drawn from: the marks one can click, and the lines between them."""

    points: pd.DataFrame
    """One row per loop, note, handoff (at its elbow) and "+N more" mark: `row`, `depth`, `kind`
    (`ITEM_SHAPES`), `label` (the drawn text), `detail` (the whole text), `state`, `span_id`,
    `selected` (the span shown in the detail)."""
    edges: pd.DataFrame
    """One row per line segment: from (`depth`, `row`) to (`depth2`, `row2`), `state`, `dashed`."""
    hidden: int = 0
    """Loops not drawn (collapsed into "+N more loops")."""


@dataclass
class _Layout:
    """What the depth-first walk reads (the trace, what is drawn, what hangs below each loop) and
    what it writes (marks, lines, the next free row)."""

    view: TraceView
    shown: set[int]
    children: dict[int, list[int]]
    attempt_of: dict[int, tuple[Delegation, Attempt]]
    not_run: dict[int, list[Delegation]]
    hidden: dict[int, int]
    points: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    rows: int = 0


def _cut(line: str) -> str:
    line = "".join(ch if ch.isprintable() else " " for ch in line)
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"


def _wrapped(line: str) -> list[str]:
    """A label line too long to draw, broken at its ` · ` separators so no figure is cut; only a
    single part longer than `MAX_LINE` (a name from the trace) is cut, whole in the tooltip."""
    lines: list[str] = []
    for part in line.split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= MAX_LINE:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return [_cut(x) for x in lines]


def _mark(kind: str, row: int, depth: float, lines: list[str], state: str, span_id: str) -> dict[str, Any]:
    return {
        "row": row, "depth": depth, "kind": kind, "label": "\n".join(y for x in lines for y in _wrapped(x)),
        "detail": " · ".join(lines), "state": state, "span_id": span_id,
    }  # fmt: skip


def _point(layout: _Layout, kind: str, depth: float, lines: list[str], state: str, span_id: str) -> int:
    """Add a mark on a row of its own (a loop, a note, "+N more"); its row."""
    row, layout.rows = layout.rows, layout.rows + 1
    layout.points.append(_mark(kind, row, depth, lines, state, span_id))
    return row


def _state(outcome: str) -> str:
    """`ok`, `open` or `failed`: the colour class of an outcome."""
    if outcome in (outcomes.STILL_OPEN, "open"):
        return "open"
    return "ok" if outcome in ("completed", "ok") else "failed"


def _handoff(layout: _Layout, parent: tuple[int, int], child_row: int, lines: list[str], state: str,
             span_id: str, dashed: bool) -> None:  # fmt: skip
    """The elbow from the caller's dot down to the child's row and right to it, and the diamond one
    clicks to select the handoff, half-way along the last stretch."""
    depth, row = parent
    layout.edges.append({"depth": depth, "row": row, "depth2": depth, "row2": child_row, "state": state,
                         "dashed": dashed})  # fmt: skip
    layout.edges.append({"depth": depth, "row": child_row, "depth2": depth + 1, "row2": child_row,
                         "state": state, "dashed": dashed})  # fmt: skip
    layout.points.append(_mark("handoff", child_row, depth + 0.5, lines, state, span_id))


def _diamond_span(delegation: Delegation | None, attempt: Attempt | None, loop_span: str) -> str:
    """What a click on a handoff's diamond selects: the attempt it is labelled with when the
    delegation ran several (a failed attempt 1/2 never opens a delegation that completed); with
    one attempt, the delegation's tool span (the attempt is the loop's dot beside it)."""
    if delegation is None:
        return loop_span
    if attempt is not None and delegation.attempt_count > 1:
        return attempt.span_id
    return delegation.tool_span_id or loop_span


def _loop(layout: _Layout, index: int, via: tuple[int, int] | None) -> None:
    """Draw loop `index` and, depth first, everything below it: the loops it delegated to, the
    handoffs that started none, and "+N more loops" for those not drawn."""
    node = layout.view.nodes[index]
    found = layout.attempt_of.get(index)
    outcome = outcomes.attempt_outcome(found[1]) if found else outcomes.loop_outcome(node)
    depth = node.depth if via is None else via[0] + 1
    row = _point(layout, "loop", depth, node_lines(node), _state(outcome), node.span_id)
    if via is not None:
        delegation, attempt = found if found else (None, None)
        lines = edge_lines(delegation, attempt) if delegation is not None else []
        span = _diamond_span(delegation, attempt, node.span_id)
        failed = attempt is not None and attempt.status != "ok"
        _handoff(layout, via, row, lines, _state(outcome), span, failed)
    for child in layout.children.get(index, []):
        if child in layout.shown:
            _loop(layout, child, (depth, row))
    for delegation in layout.not_run.get(index, []):
        state = _state(delegation.status)  # completed (a transfer that ran on), open, else failed
        span = delegation.tool_span_id or node.span_id
        owner = layout.attempt_of.get(delegation.attempts[0].node) if delegation.shares_run else None
        lines = ghost_lines(delegation, owner[0].caller if owner else None)
        note = _point(layout, "shared run" if owner else "not run", depth + 1, lines, state, span)
        _handoff(layout, (depth, row), note, edge_lines(delegation, None), state, span, False)
    if index in layout.hidden:
        more = _point(layout, "more", depth + 1, [f"+{layout.hidden[index]:,} more loops"], "more", "")
        layout.edges.append({"depth": depth, "row": row, "depth2": depth, "row2": more, "state": "more",
                             "dashed": True})  # fmt: skip
        layout.edges.append({"depth": depth, "row": more, "depth2": depth + 1, "row2": more, "state": "more",
                             "dashed": True})  # fmt: skip


def handoff_frames(
    view: TraceView, max_nodes: int = DEFAULT_MAX_NODES, selected: str | None = None
) -> HandoffFrames:
    """The chart's marks and lines; loops beyond `max_nodes` are collapsed (and counted); the marks
    of span `selected` are outlined."""
    shown = visible_loops(view, max_nodes)
    not_run: dict[int, list[Delegation]] = {}
    for delegation in view.delegations:  # a run several transfers share is drawn under its owner's
        if (not delegation.attempts or delegation.shares_run) and delegation.parent_node is not None:
            not_run.setdefault(delegation.parent_node, []).append(delegation)
    parents = drawn_parents(view)
    attempt_of = {a.node: (d, a) for d in view.delegations if not d.shares_run for a in d.attempts}
    layout = _Layout(
        view, shown, children_of(view, parents), attempt_of, not_run, hidden_below(view, shown)
    )
    for index, parent in enumerate(parents):
        if parent is None:
            _loop(layout, index, None)
    points = pd.DataFrame(layout.points, columns=_POINT_COLUMNS)
    points["selected"] = points["span_id"] == (selected or "\0")
    edges = pd.DataFrame(layout.edges, columns=_EDGE_COLUMNS)
    return HandoffFrames(points, edges, sum(layout.hidden.values()))


def _color() -> alt.Color:
    return alt.Color(
        "state:N", scale=alt.Scale(domain=list(STATE_COLORS), range=list(STATE_COLORS.values())), legend=None
    )


def handoff_chart(frames: HandoffFrames, pick: alt.Parameter) -> alt.LayerChart:
    """Lines under marks under labels, on shared scales; `pick` (a point selection on `span_id`)
    on the marks one can click (loops, notes, handoffs)."""
    points = frames.points
    rows = int((points["kind"] != "handoff").sum())
    depth = float(points["depth"].max()) if len(points) else 0.0
    xs = alt.Scale(domain=[-0.1, depth + 1.2])
    ys = alt.Scale(domain=[-0.6, max(rows, 1) - 0.4], reverse=True)
    x = alt.X("depth:Q", axis=None, scale=xs)
    y = alt.Y("row:Q", axis=None, scale=ys)
    lines = (
        alt.Chart(frames.edges)
        .mark_rule(strokeWidth=1.5)
        .encode(
            x=x, y=y, x2="depth2:Q", y2="row2:Q", color=_color(),
            strokeDash=alt.condition("datum.dashed", alt.value([4, 3]), alt.value([1, 0])),
        )
    )  # fmt: skip
    shapes = alt.Scale(domain=list(ITEM_SHAPES), range=list(ITEM_SHAPES.values()))
    marks = (
        alt.Chart(points)
        .mark_point(filled=True, size=150, opacity=1, strokeWidth=3)
        .encode(
            x=x, y=y, color=_color(), shape=alt.Shape("kind:N", scale=shapes, legend=None),
            stroke=alt.condition("datum.selected", alt.value(SELECTED_COLOR), alt.value("white")),
            tooltip=[alt.Tooltip("kind:N"), alt.Tooltip("detail:N", title="what"), alt.Tooltip("span_id:N")],
        )
        .add_params(pick)
    )  # fmt: skip
    loop_text = haloed_text(
        alt.Chart(points).transform_filter("datum.kind != 'handoff'"),
        {"align": "left", "baseline": "middle", "dx": 10, "lineBreak": "\n", "fontSize": 11},
        {"x": x, "y": y, "text": "label:N"},
    )
    # Two lines (tool; attempt, outcome, duration) above the line: their top is set, since Vega
    # aligns only the first line of a multi-line text to a baseline.
    handoff_text = haloed_text(
        alt.Chart(points).transform_filter("datum.kind == 'handoff'"),
        {"align": "center", "baseline": "top", "dy": -(2 * EDGE_LINE_PX) - 5, "lineBreak": "\n",
         "fontSize": 10, "lineHeight": EDGE_LINE_PX},
        {"x": x, "y": y, "text": "label:N", "color": _color()},
    )  # fmt: skip
    return alt.LayerChart(layer=[lines, marks, *loop_text, *handoff_text], height=ROW_PX * max(rows, 2))
