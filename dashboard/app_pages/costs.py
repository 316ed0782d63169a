"""Costs: an audit over a time range by agent, delegation tool, model and conversation.

The headline and the four own-cost tables are the source's exact aggregates over every trace in
the range (`usage_by`, one query each); inclusive cost and the costliest delegations need handoff
trees, so they are rebuilt from the newest traces only, and say how many. The what-if reprices
the range's agent groups as if one agent ran at another price (`janux.dashboard.ui.repricing_panel`).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from janux.dashboard.ui import cost_pictures, headline, nav, repricing_panel
from janux.dashboard.ui.filters import trace_filter
from janux.dashboard.ui.state import active_source, get_views
from janux.dashboard.ui.table import show_table
from janux.dashboard.views.audit import audit
from janux.dashboard.views.usage_tables import RangeUsage, range_usage
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.prices import price_source
from janux.tracing.sources.protocol import TraceFilter, TraceSource

# The page's sections (tabs): the exact own-cost tables; cost and tokens over time and the icicle
# of delegation paths; inclusive cost and the costliest delegations, rebuilt from the newest traces;
# the range repriced as if one agent ran at another price.
SECTIONS = (
    "By agent, tool, model, conversation",
    "Over time & by path",
    "Inclusive & costliest delegations",
    "What if: another price",
)
DEFAULT_MAX_TRACES = 500
MAX_TRACES = 100_000
EAGER_CSV_ROWS = 5_000
# Captions under the exact tables: what each row counts (a bare string would be drawn by magic).
NOTES = {
    "agent": "Each agent's own model rounds (`janux.turn.*`), never its delegations. Agents of "
    "other runtimes: the sum of their own model calls (usage they report for themselves is never "
    "added). `unread`: loops with calls whose usage could not be read.",
    "tool": "What the delegated loops themselves used (the delegation's attempts); a delegation "
    "made inside an attempt counts under its own tool. Other runtimes: a tool span with an agent "
    "below it, or the agent's name when it is nested directly in another. A transfer or a denied "
    "call runs no loop: —.",
    "model": "Every model round, by requested model; rounds without a recorded cost are unpriced; "
    "`unread`: rounds whose usage could not be read (unknown, not 0).",
    "conversation": "The bill of each trace; traces without one add their model rounds.",
}
FAILED_HELP = (
    "Traces holding at least one failed handoff (final status failed, fallback, denied or cut), as "
    "the Traces list's `failed handoffs` column counts them. A handoff that completed after a "
    "failed attempt did not fail: see docs/glossary.md."
)
UNPRICED_HELP = (
    "Tokens of rounds without a recorded price: agents without a price, and other runtimes' "
    "rounds. Where a price table knows the model, the rebuilt traces below price them as an "
    "estimate (recorded by an integration, or made from the price table)."
)


def _csv_button(title: str, frame: pd.DataFrame, key: str) -> None:
    # A long table's file is only written when asked for (a callable runs on the click).
    data = cells.csv_bytes(frame) if len(frame) <= EAGER_CSV_ROWS else lambda: cells.csv_bytes(frame)
    st.download_button(
        f"Download {title.lower()} (CSV)",
        data,
        file_name=f"janux-costs-{key}.csv",
        mime="text/csv",
        key=f"costs_dl_{key}",
    )


def _table(title: str, frame: pd.DataFrame, key: str, note: str | None = None) -> None:
    st.subheader(title)
    if frame.empty:
        st.info("Nothing in this range.")
        return
    # Estimate columns empty everywhere are left out of the view; the CSV keeps every column.
    show_table(cells.without_empty_estimates(frame), key=f"costs_{key}")
    if note:
        st.caption(note)
    _csv_button(title, frame, key)


def _headline(usage: RangeUsage) -> None:
    total = usage.total
    cols = st.columns(5)
    headline.cost(cols[0], "Recorded cost", replace(total, unpriced_tokens=0))
    headline.count(cols[1], "Unpriced tokens", total.unpriced_tokens, UNPRICED_HELP)
    headline.tokens(cols[2], "Tokens", total.input_tokens, total.output_tokens)
    headline.count(cols[3], "Traces", usage.traces)
    headline.count(cols[4], "Traces with failed handoffs", usage.failed_traces, FAILED_HELP)
    if usage.unread_traces:
        st.warning(
            f"{usage.unread_traces:,} of {usage.traces:,} traces in this range are partly unread "
            f"({usage.unread_calls:,} model call(s) whose usage Janux could not read): their tokens and "
            "cost are unknown and are not in these totals as 0. Open a trace for what was not read."
        )
    if not usage.complete:
        st.warning(
            f"This range holds more conversations than the {len(usage.tables['conversation']):,} "
            "read: the totals leave the cheapest out. Narrow the range."
        )


def _exact(usage: RangeUsage) -> None:
    st.caption("Exact over every trace in the range (the store's aggregates).")
    _table("By agent (own)", usage.tables["agent"], "agent", NOTES["agent"])
    _table("By delegation tool", usage.tables["tool"], "tool", NOTES["tool"])
    _table("By model", usage.tables["model"], "model", NOTES["model"])
    _table("By conversation", usage.tables["conversation"], "conversation", NOTES["conversation"])


def _rebuilt(source: TraceSource, flt: TraceFilter, in_range: int) -> None:
    left, right = st.columns([1, 3])
    limit = int(
        left.number_input("Newest traces to rebuild", 1, MAX_TRACES, DEFAULT_MAX_TRACES, key="costs_limit")
    )
    summaries = source.list_traces(flt, limit=limit)
    views = get_views([s.trace_id for s in summaries])
    result = audit(views[s.trace_id] for s in summaries)
    sources = fmt.markdown_text("; ".join(result.price_sources) or price_source())
    note = f"Rounds of the rebuilt traces without a recorded cost, priced from {sources}."
    label = "Estimated cost (rounds without a recorded price)"
    headline.amount(right, label, result.total.estimated_cost, estimated=True, note=note)
    note = (
        f"Rebuilt from the newest {result.traces:,} of {in_range:,} traces in the range: "
        "inclusive cost and single delegations need each trace's handoff tree."
    )
    if result.traces < in_range:
        st.info(note)  # older traces are left out of what follows: say so plainly
    else:
        st.caption(note)
    _table("Inclusive cost by agent", result.inclusive_by_agent, "inclusive")
    top = result.top_delegations
    st.subheader("Most expensive delegations")
    if top.empty:
        st.info("No priced delegation in these traces.")
        return
    st.caption("Click a row to open its trace at that delegation.")
    picked = show_table(cells.without_empty_estimates(top), key="costs_top", selectable=True)
    if picked is not None:
        nav.remember_list(nav.COSTS, list(dict.fromkeys(top["trace"])))
        nav.open_trace(str(top["trace"].iloc[picked]), str(top["span"].iloc[picked]) or None)
    _csv_button("Most expensive delegations", top, "top")


def main() -> None:
    """Draw the page."""
    nav.restore_list(nav.COSTS)
    st.title("Costs")
    active = active_source()
    if active is None:
        return
    key, source = active
    flt = trace_filter("costs", source, full=False)
    usage = range_usage(source, flt)
    st.header("Exact totals of the range")
    _headline(usage)
    # Sections one can jump to (`?costs_section=` names one); each is drawn, only the chosen shown.
    tabs = st.tabs(list(SECTIONS), key="costs_section", bind="query-params")
    with tabs[0]:
        _exact(usage)
    with tabs[1]:
        cost_pictures.render(key, source, flt)
    with tabs[2]:
        _rebuilt(source, flt, usage.traces if usage.complete else source.count_traces(flt))
    with tabs[3]:
        repricing_panel.render(usage.agents)


main()
