"""Costs: an audit over a time range by agent, delegation tool, model and conversation."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard.ui.filters import scan_inputs, trace_link
from dashboard.ui.state import get_views
from dashboard.ui.table import OPEN_LINK, show_table
from dashboard.views import cells
from dashboard.views.audit import CostAudit, audit

DEFAULT_MAX_TRACES = 500


def _table(title: str, frame: pd.DataFrame, key: str) -> None:
    st.subheader(title)
    if frame.empty:
        st.info("Nothing in this range.")
        return
    # Estimate columns empty everywhere are left out of the view; the CSV keeps every column.
    show_table(cells.without_empty_estimates(frame), key=f"costs_{key}")
    st.download_button(
        f"Download {title.lower()} (CSV)",
        cells.csv_bytes(frame),
        file_name=f"janux-costs-{key}.csv",
        mime="text/csv",
        key=f"costs_dl_{key}",
    )


def _headline(result: CostAudit) -> None:
    total = result.total
    money = st.columns(2)
    money[0].metric("Recorded cost", cells.money_metric(cells.cost_cell(total.cost, total.unpriced_tokens)))
    money[1].metric(
        "Estimated cost (other runtimes)",
        cells.money_metric(total.estimated_cost, estimated=True),
        help="Rounds without a recorded cost, priced from the genai-prices table.",
    )
    counts = st.columns(3)
    counts[0].metric("Unpriced tokens", f"{total.unpriced_tokens:,}")
    counts[1].metric("Tokens in / out", f"{total.input_tokens:,} / {total.output_tokens:,}")
    counts[2].metric("Traces", f"{result.traces:,}")


def main() -> None:
    """Draw the page."""
    st.title("Costs")
    inputs = scan_inputs("costs", "Newest traces to audit", 100_000, DEFAULT_MAX_TRACES)
    if inputs is None:
        return
    source, flt, limit = inputs
    matching = source.count_traces(flt)
    summaries = source.list_traces(flt, limit=limit)
    if matching > len(summaries):
        st.warning(
            f"Auditing the newest {len(summaries):,} of {matching:,} traces: "
            "narrow the range or raise the limit."
        )
    views = get_views([s.trace_id for s in summaries])
    result = audit(views[s.trace_id] for s in summaries)
    _headline(result)
    _table("By agent (own vs inclusive)", result.by_agent, "agent")
    _table("By delegation tool", result.by_tool, "tool")
    _table("By model", result.by_model, "model")
    _table("By conversation", result.by_conversation, "conversation")
    top = result.top_delegations
    st.subheader("Most expensive delegations")
    if top.empty:
        st.info("No priced delegation in this range.")
    else:
        top.insert(0, "open", [trace_link(t) for t in top["trace"]])
        show_table(cells.without_empty_estimates(top), key="costs_top", column_config={"open": OPEN_LINK})


main()
