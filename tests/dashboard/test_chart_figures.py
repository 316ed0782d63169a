"""Charts say what the pages say: labels never cut, times in 24-hour UTC, the icicle counting the
tokens the Costs header counts, a retried delegation's diamonds selecting their attempts."""

from __future__ import annotations

from typing import Any

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from janux.dashboard.views import charts
from janux.dashboard.views import map_tables as views
from janux.dashboard.views.handoff_chart import handoff_frames
from janux.dashboard.views.usage_tables import range_usage
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter

Demo = tuple[list[Any], dict[str, str]]


@given(st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=1.0))
def test_an_icicle_label_is_never_cut(start: float, end: float) -> None:
    # From the issue: "bil… 1,4…". A label is a whole name and a whole amount, or left to the tooltip.
    x0, x1 = sorted((start, end))
    rect = {"path": "billing", "agent": "billing", "depth": 0, "x0": x0, "x1": x1, "value": 1.0,
            "amount": "1,390 in · 66 out", "short": "1,456 in+out", "cost": "$0.002442",
            "tokens": 1456}  # fmt: skip
    (text,) = charts.icicle_labels(pd.DataFrame([rect]))["text"]
    assert "…" not in text
    assert text in ("", "billing", "billing\n1,390 in · 66 out", "billing\n1,456 in+out")


def test_the_icicle_counts_the_tokens_the_costs_header_counts(demo: Demo) -> None:
    # From the issue: the icicle's "triage 31.4K tokens" (in + out) beside the header's "31.5K in".
    source = MemoryTraceSource(demo[0])
    header = range_usage(source, TraceFilter()).total
    agent_map = source.agent_map(TraceFilter())
    rects = views.icicle_frame(agent_map, "tokens")
    roots = [p.inclusive for p in agent_map.paths if len(p.path) == 1]
    assert sum(u.input_tokens for u in roots) == header.input_tokens
    assert sum(u.output_tokens for u in roots) == header.output_tokens
    for usage, amount in zip(roots, rects[rects["depth"] == 0]["amount"], strict=True):
        tokens_in, tokens_out = fmt.compact_count(usage.input_tokens), fmt.compact_count(usage.output_tokens)
        assert amount == f"{tokens_in} in · {tokens_out} out"


def test_time_axes_read_24_hour_utc(demo: Demo) -> None:
    # From the issue: the axis read "01:49" for traces started at 13:49 UTC (the browser's 12-hour
    # local format). The axis is a UTC scale labelled %H:%M in UTC; the tooltip is UTC too.
    agent_map = MemoryTraceSource(demo[0]).agent_map(TraceFilter())
    timeline = views.timeline_frame(agent_map)
    for chart in (charts.cost_over_time(timeline), charts.tokens_over_time(timeline)):
        x = chart.to_dict()["encoding"]["x"]
        assert x["scale"]["type"] == "utc" and "utcFormat" in x["axis"]["labelExpr"]
        assert "%H:%M" in x["axis"]["labelExpr"] and "%I" not in x["axis"]["labelExpr"]
        (when,) = [t for t in chart.to_dict()["encoding"]["tooltip"] if t["field"] == "time"]
        assert when["formatType"] == "utc" and when["format"] == "%Y-%m-%d %H:%M:%S"


def test_a_click_on_a_retried_attempt_s_diamond_selects_that_attempt(demo: Demo) -> None:
    # From the issue: the red "attempt 1/2: failed" diamond opened the delegation ("outcome completed").
    trace_id = demo[1]["retry_then_success"]
    view = reconstruct([s for s in demo[0] if s.trace_id == trace_id])
    (delegation,) = view.delegations
    diamonds = handoff_frames(view).points
    diamonds = diamonds[diamonds["kind"] == "handoff"]
    assert list(diamonds["span_id"]) == [a.span_id for a in delegation.attempts]
    assert delegation.tool_span_id not in set(diamonds["span_id"])


def test_the_handoff_graph_carries_unpriced_tokens_and_never_cuts_a_figure(demo: Demo) -> None:
    # From the issue: "own $0.003685 = inclusive $0.003685" while the tokens below went unpriced.
    trace_id = demo[1]["nested_delegation"]
    view = reconstruct([s for s in demo[0] if s.trace_id == trace_id])
    loops = handoff_frames(view).points
    loops = loops[loops["kind"] == "loop"].set_index("span_id")
    researcher = next(n for n in view.nodes if n.agent == "researcher")
    label = loops.loc[researcher.span_id, "label"]
    assert "own $0.00368 · incl $0.00368 + 221 unpriced" in label, label
    for text in handoff_frames(view).points["label"]:
        assert "…" not in text, text  # long lines break at their separators, never mid-figure
