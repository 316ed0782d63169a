"""Waterfall rows of one trace for an Altair chart, collapsed to the handoff level by default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import altair as alt
import pandas as pd

from janux.tracing import conventions as c
from janux.tracing.analysis import spanread as sr
from janux.tracing.analysis.trace_view import TraceView

DEFAULT_MAX_ROWS = 400
"""Rows drawn before the waterfall is cut (the rest are counted, not drawn)."""
ROW_STEP_PX = 22
"""Height of one waterfall row: enough for its label, so no label is dropped for overlapping."""
KIND_COLORS = {
    "agent": "#1565c0",
    "delegation": "#64b5f6",
    "tool": "#90a4ae",
    "model": "#8e7cc3",
    "other": "#cfd8dc",
}
"""Bar colour per span kind (red is kept for errors, drawn as the bar's outline)."""
ERROR_OUTLINE = "#d32f2f"
"""Outline of spans that ended with an error."""

Mode = Literal["handoffs", "all"]
"""`handoffs`: agent loops, delegation tools and error spans; `all`: every span."""


@dataclass(slots=True)
class Waterfall:
    """Rows of the chart and how many spans were left out."""

    rows: pd.DataFrame
    """Columns: row, start_ms, end_ms, duration_ms, kind, status, name, span_id, depth, open."""
    hidden: int
    """Spans not drawn (filtered by mode or beyond the row limit)."""


def _kind(op: str, is_delegation: bool) -> str:
    if op == c.OP_INVOKE_AGENT:
        return "agent"
    if op == c.OP_EXECUTE_TOOL:
        return "delegation" if is_delegation else "tool"
    return "model" if sr.is_inference(op) else "other"


def waterfall(view: TraceView, *, mode: Mode = "handoffs", max_rows: int = DEFAULT_MAX_ROWS) -> Waterfall:
    """Spans in tree order with start/end offsets (ms) from the trace start."""
    index = view.index
    if not index.spans:
        return Waterfall(pd.DataFrame(columns=_COLUMNS), 0)
    t0 = min(s.start_ns for s in index.spans)
    t_end = max((s.end_ns for s in index.spans if s.duration_ns >= 0), default=t0)
    delegation_spans = {d.tool_span_id for d in view.delegations if d.tool_span_id}
    depth = [0] * len(index.spans)
    rows: list[dict[str, object]] = []
    for pos in index.order:
        parent = index.parent[pos]
        depth[pos] = depth[parent] + 1 if parent >= 0 else 0
        span = index.spans[pos]
        kind = _kind(sr.operation(span), span.span_id in delegation_spans)
        if mode == "handoffs" and kind not in ("agent", "delegation") and not sr.is_error(span):
            continue
        if len(rows) >= max_rows:
            continue
        is_open = span.duration_ns < 0
        end = t_end if is_open else span.end_ns
        rows.append(
            {
                "row": f"{len(rows) + 1:>4} {'· ' * depth[pos]}{span.name}",
                "start_ms": (span.start_ns - t0) / 1e6,
                "end_ms": (end - t0) / 1e6,
                "duration_ms": None if is_open else span.duration_ns / 1e6,
                "kind": kind,
                "status": sr.span_status(span),
                "name": span.name,
                "span_id": span.span_id,
                "depth": depth[pos],
                "open": is_open,
            }
        )
    return Waterfall(pd.DataFrame(rows, columns=_COLUMNS), len(index.spans) - len(rows))


_COLUMNS = ["row", "start_ms", "end_ms", "duration_ms", "kind", "status", "name", "span_id", "depth", "open"]


def waterfall_chart(fall: Waterfall) -> alt.Chart:
    """The Altair chart of a waterfall: one labelled row per span, errors outlined in red,
    open spans (no end yet) drawn to the trace end and faded."""
    # The legend lists the kinds drawn, never one this trace has none of.
    present = [k for k in KIND_COLORS if k in set(fall.rows["kind"])]
    kinds = alt.Scale(domain=present, range=[KIND_COLORS[k] for k in present])
    chart: alt.Chart = (
        alt.Chart(fall.rows)
        .mark_bar(strokeWidth=2)
        .encode(
            x=alt.X("start_ms:Q", title="ms since trace start"),
            x2="end_ms:Q",
            y=alt.Y("row:N", sort=None, title=None, axis=alt.Axis(labelLimit=400, labelOverlap=False)),
            color=alt.Color("kind:N", scale=kinds, legend=alt.Legend(title="span")),
            stroke=alt.condition("datum.status == 'error'", alt.value(ERROR_OUTLINE), alt.value(None)),
            opacity=alt.condition("datum.open", alt.value(0.45), alt.value(1.0)),
            tooltip=[
                "name:N",
                alt.Tooltip("duration_ms:Q", format=",.1f", title="ms"),
                "status:N",
                "kind:N",
                "span_id:N",
            ],
        )
        .properties(height=alt.Step(ROW_STEP_PX))
    )
    return chart
