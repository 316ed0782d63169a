"""Trace: header, the tree, waterfall or graph beside the selected span, then attempts, costs,
budgets, checks.

Opened by a click on a list row (same tab), or by a link `trace?trace_id=<id or unique prefix>&span=`.
"""

from __future__ import annotations

import streamlit as st

from janux.dashboard.ui import nav
from janux.dashboard.ui import trace_sections as sections
from janux.dashboard.ui.state import active_source, get_views, prefetch_view
from janux.dashboard.ui.trace_explorer import VIEW_TAB, explorer
from janux.tracing.analysis import formatting as fmt
from janux.tracing.sources.protocol import TraceFilter, TraceSource

# The tab below the explorer that once held the graph; links to it open the explorer's Graph tab.
OLD_GRAPH_SECTION = "Handoff graph"
# Length of a whole trace id (hex); a shorter one is a prefix, resolved first.
TRACE_ID_CHARS = 32


def _resolve(source: TraceSource, wanted: str) -> tuple[str | None, str]:
    """(the full id of `wanted`, "") for a whole id or a unique prefix; (None, what is wrong) otherwise."""
    if len(wanted) >= TRACE_ID_CHARS:
        return wanted, ""
    found = source.list_traces(TraceFilter(trace_id=wanted), limit=2)
    if len(found) == 1:
        return found[0].trace_id, ""
    if not found:
        return None, f"No trace id starts with {wanted}."
    return None, f"More than one trace id starts with {wanted}: type more of it."


def _bar(trace_id: str | None) -> None:
    """The title beside ← back to the list and previous / next trace of that list (one line: the
    tree starts in the top half of the window)."""
    title, back, before, after, _ = st.columns([1.6, 1.4, 1, 1, 3], vertical_alignment="bottom")
    title.title("Trace")
    with back:
        nav.back_link()
    if trace_id is None:
        return
    previous, following = nav.neighbours(trace_id)
    if before.button("‹ Previous", disabled=previous is None, key="trace_prev") and previous:
        nav.open_trace(previous)
    if after.button("Next ›", disabled=following is None, key="trace_next") and following:
        nav.open_trace(following)


def main() -> None:
    """Draw the page."""
    wanted = str(st.query_params.get("trace_id", "")).strip().lower()
    if len(wanted) == TRACE_ID_CHARS:
        prefetch_view(wanted)  # read and rebuilt on a worker thread while the title and bar draw
    source = st.session_state.get("janux_active_source")
    trace_id, problem = _resolve(source, wanted) if source is not None and wanted else (None, "")
    _bar(trace_id)
    active = active_source()
    if active is None:
        return
    if not wanted:
        st.info("Open a trace from the Traces, Failures or Agent map page (one click on its row).")
        typed = st.text_input("…or go to a trace id (or a unique prefix of it)", key="trace_goto").strip()
        if typed:
            nav.open_trace(typed.lower())
        return
    if trace_id is None:
        st.warning(fmt.markdown_text(problem))
        return
    if trace_id != wanted:
        st.query_params["trace_id"] = trace_id
    if st.query_params.get("trace_section") == OLD_GRAPH_SECTION:  # a link from before the merge
        del st.query_params["trace_section"]
        st.query_params[VIEW_TAB] = "Graph"
    view = get_views([trace_id])[trace_id]
    if not view.index.spans:
        st.warning("No spans stored for this trace id.")
        return
    sections.headline(view)
    sections.linked_traces(view, trace_id)
    sections.issues(view)
    explorer(view)
    sections.more_figures(view)
    sections.chosen_section(view)


main()
