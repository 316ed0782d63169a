"""Compare: two traces side by side (tree diff and cost diff), e.g. before and after a prompt change."""

from __future__ import annotations

import streamlit as st

from dashboard.ui.state import active_source, get_views
from dashboard.ui.table import show_table
from dashboard.views import fmt
from dashboard.views.compare import cost_diff, tree_diff
from dashboard.views.graph import handoff_dot

MAX_NODES = 60


def _pick(label: str, param: str) -> str:
    current = str(st.query_params.get(param, ""))
    typed = st.text_input(label, value=current, key=f"compare_{param}").strip().lower()
    if typed and typed != current:
        st.query_params[param] = typed
    return typed


def main() -> None:
    """Draw the page."""
    st.title("Compare")
    if active_source() is None:
        return
    left, right = st.columns(2)
    with left:
        a_id = _pick("Trace A", "a")
    with right:
        b_id = _pick("Trace B", "b")
    if not a_id or not b_id:
        st.info("Enter two trace ids (or open `compare?a=<id>&b=<id>`).")
        return
    views = get_views([a_id, b_id])
    a, b = views[a_id], views[b_id]
    for trace_id, view in ((a_id, a), (b_id, b)):
        if not view.index.spans:
            st.warning(fmt.markdown_text(f"No spans stored for trace {trace_id}."))
            return
    st.subheader("Cost and shape")
    show_table(cost_diff(a, b), key="compare_costs")
    st.subheader("Agent loops")
    show_table(tree_diff(a, b), key="compare_tree")
    st.caption(
        "A loop is named by its path from the root: `planner/delegate.researcher[2]#1` is attempt 1 "
        "of the planner's second call of delegate.researcher."
    )
    # One above the other: side by side, each tree would be shrunk to half the page width.
    for label, view in (("A", a), ("B", b)):
        st.subheader(f"Handoff tree {label}")
        st.graphviz_chart(handoff_dot(view, max_nodes=MAX_NODES))


main()
