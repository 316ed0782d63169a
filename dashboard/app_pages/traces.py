"""Traces: a filterable, paged list with summary columns and a reconciliation badge per trace."""

from __future__ import annotations

import streamlit as st

from janux.dashboard.ui import trace_histograms
from janux.dashboard.ui.filters import trace_filter, trace_link
from janux.dashboard.ui.state import active_source, get_views
from janux.dashboard.ui.table import OPEN_LINK, show_table
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis.trace_list import CHECKS_HELP, needs_rebuild, traces_frame
from janux.tracing.sources.protocol import TraceFilter, TraceSource

PAGE_SIZES = (25, 50, 100)
LIVE_EVERY_S = 5


def _pending(source: TraceSource) -> int:
    """Traces a source has received but not derived yet (the ClickHouse scale path); 0 elsewhere."""
    pending = getattr(source, "pending_traces", None)
    return int(pending()) if callable(pending) else 0


def _table(source: TraceSource, flt: TraceFilter, page_size: int) -> None:
    total = source.count_traces(flt)
    pages = max(1, -(-total // page_size))
    page = int(st.columns(4)[0].number_input(f"Page (of {pages})", 1, pages, 1, key="traces_page"))
    summaries = source.list_traces(flt, limit=page_size, offset=(page - 1) * page_size)
    st.caption(f"{total:,} traces match; showing {len(summaries)} (page {page} of {pages}).")
    pending = _pending(source)
    if pending:
        st.caption(
            f"{pending:,} {'trace' if pending == 1 else 'traces'} still being derived: received, "
            "not in this list and its totals yet (the ClickHouse deriver adds them once quiet)."
        )
    # Rows whose source already says whether the bill reconciles are not rebuilt.
    views = get_views([s.trace_id for s in summaries if needs_rebuild(s)])
    frame = traces_frame(summaries, views, trace_link)
    if frame.empty:
        st.info("No traces match these filters.")
        return
    show_table(
        cells.without_empty_estimates(frame),
        key="traces_table",
        visible_rows=25,
        column_config={
            "open": OPEN_LINK,
            "checks": st.column_config.TextColumn("checks", width="medium", help=CHECKS_HELP),
            "trace": st.column_config.TextColumn("trace", width="large"),
        },
    )


def main() -> None:
    """Draw the page."""
    st.title("Traces")
    active = active_source()
    if active is None:
        return
    _, source = active
    flt = trace_filter("traces", source)
    histograms = trace_histograms.render(source, flt)
    left, right = st.columns([1, 3])
    page_size = left.selectbox("Rows per page", PAGE_SIZES, index=1, key="traces_size")
    live = right.toggle(f"Live tail (refresh every {LIVE_EVERY_S} s)", key="traces_live")

    @st.fragment(run_every=LIVE_EVERY_S if live else None)
    def table() -> None:
        _table(source, flt, int(page_size))

    table()
    trace_histograms.data(histograms)


main()
