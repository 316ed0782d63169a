"""Traces: a filterable, paged list with summary columns and a reconciliation badge per trace.

A click on a row opens its trace in this tab; filters and page live in the URL, so Back returns here
as it was left.
"""

from __future__ import annotations

import streamlit as st

from janux.dashboard.ui import nav, trace_histograms
from janux.dashboard.ui import url_state as url
from janux.dashboard.ui.filters import find_inside, trace_filter, trace_link
from janux.dashboard.ui.state import active_source, get_views
from janux.dashboard.ui.table import show_table
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis.trace_find import FindError, FoundTraces, TraceQuery
from janux.tracing.analysis.trace_list import CHECKS_HELP, needs_rebuild, traces_frame
from janux.tracing.sources.protocol import TraceFilter, TraceSource

PAGE_SIZES = (25, 50, 100)
LIVE_EVERY_S = 5


def _pending(source: TraceSource) -> int:
    """Traces a source has received but not derived yet (the ClickHouse scale path); 0 elsewhere."""
    pending = getattr(source, "pending_traces", None)
    return int(pending()) if callable(pending) else 0


def _table(source: TraceSource, flt: TraceFilter, page_size: int, query: TraceQuery) -> None:
    nav.follow_click("traces_table")
    found: FoundTraces | None = None
    if query.active:
        try:  # the count is the whole range's (the source's find index); the first page comes with it
            found = source.find_traces(flt, query, limit=page_size, offset=0)
        except FindError as error:
            st.error(fmt.markdown_text(f"Find inside traces: {error}"))  # the input shown as typed
            return
    total = source.count_traces(flt) if found is None else found.total
    pages = max(1, -(-total // page_size))
    url.seed("traces_page", "page", lambda raw: min(max(int(raw), 1), pages))
    if int(st.session_state.get("traces_page", 1)) > pages:  # fewer traces match than before
        st.session_state["traces_page"] = pages
    page = int(st.columns(4)[0].number_input(f"Page (of {pages})", 1, pages, key="traces_page"))
    url.publish("page", page, 1)
    offset = (page - 1) * page_size
    if found is None:
        summaries = source.list_traces(flt, limit=page_size, offset=offset)
    elif offset:
        summaries = source.find_traces(flt, query, limit=page_size, offset=offset).summaries
    else:
        summaries = found.summaries
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
    trace_ids = list(frame["trace"])
    nav.remember_list(nav.TRACES, trace_ids)
    nav.shown_rows("traces_table", trace_ids)
    picked = show_table(
        cells.without_empty_estimates(frame.drop(columns="open")),
        key="traces_table",
        visible_rows=25,
        column_config={
            "checks": st.column_config.TextColumn("checks", width="medium", help=CHECKS_HELP),
            "trace": st.column_config.TextColumn("trace", width="large"),
            "linked traces": st.column_config.NumberColumn(
                "linked traces", help="Other traces of this run, joined to it by span links (read as one run)"
            ),
        },
        selectable=True,
    )
    if picked is not None:
        nav.open_trace(trace_ids[picked])


def main() -> None:
    """Draw the page."""
    nav.restore_list(nav.TRACES)
    st.title("Traces")
    active = active_source()
    if active is None:
        return
    _, source = active
    flt = trace_filter("traces", source)
    histograms = trace_histograms.render(source, flt)
    left, right = st.columns([1, 3])
    url.seed("traces_size", "size", lambda raw: PAGE_SIZES[PAGE_SIZES.index(int(raw))])
    st.session_state.setdefault("traces_size", PAGE_SIZES[1])
    page_size = left.selectbox("Rows per page", PAGE_SIZES, key="traces_size")
    url.publish("size", page_size, PAGE_SIZES[1])
    live = right.toggle(f"Live tail (refresh every {LIVE_EVERY_S} s)", key="traces_live")

    query = find_inside()

    @st.fragment(run_every=LIVE_EVERY_S if live else None)
    def table() -> None:
        _table(source, flt, int(page_size), query)

    table()
    trace_histograms.data(histograms)


main()
