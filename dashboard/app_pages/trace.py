"""Trace: handoff tree, waterfall, attempts, own vs inclusive cost, budgets, checks, span inspector."""

from __future__ import annotations

import streamlit as st

from janux.dashboard.ui import trace_sections as sections
from janux.dashboard.ui.state import active_source, get_views


def _trace_id() -> str:
    current = str(st.query_params.get("trace_id", ""))
    typed = st.text_input("Trace id", value=current, key="trace_id_input").strip().lower()
    if typed and typed != current:
        st.query_params["trace_id"] = typed
    return typed


def main() -> None:
    """Draw the page."""
    st.title("Trace")
    if active_source() is None:
        return
    trace_id = _trace_id()
    if not trace_id:
        st.info("Open a trace from the Traces page, or paste its id above.")
        return
    view = get_views([trace_id])[trace_id]
    if not view.index.spans:
        st.warning("No spans stored for this trace id.")
        return
    sections.headline(view)
    sections.issues(view)
    tabs = st.tabs(
        [
            "Handoff tree",
            "Timeline",
            "Delegations & attempts",
            "Cost per loop",
            "Budgets",
            "Checks",
            "Span inspector",
        ]
    )
    drawers = (
        sections.tree,
        sections.timeline,
        sections.delegations,
        sections.costs,
        sections.budgets,
        sections.checks,
        sections.inspector,
    )
    for tab, draw in zip(tabs, drawers, strict=True):
        with tab:
            draw(view)


main()
