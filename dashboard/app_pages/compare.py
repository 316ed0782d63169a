"""Compare: two traces side by side (tree diff and cost diff), e.g. before and after a prompt change.

Each side is picked from the newest traces (labelled with start time, root agent, conversation and
cost) or
typed as a trace id; both stay in step with `?a=<id>&b=<id>`, so a comparison can be linked.
"""

from __future__ import annotations

import altair as alt
import streamlit as st

from janux.dashboard.ui import nav
from janux.dashboard.ui.state import active_source, get_views
from janux.dashboard.ui.table import show_table
from janux.dashboard.views.compare import cost_diff, failure_diff, trace_label, tree_diff
from janux.dashboard.views.handoff_chart import handoff_chart, handoff_frames
from janux.tracing.analysis import formatting as fmt
from janux.tracing.sources.protocol import TraceFilter, TraceSource

MAX_NODES = 60
RECENT = 100
NOTHING = ""


def _keys(param: str) -> tuple[str, str]:
    """Session-state keys of one side's picker and typed id."""
    return f"compare_{param}_pick", f"compare_{param}"


def _show_in_url(param: str, trace_id: str) -> None:
    if trace_id:
        st.query_params[param] = trace_id
    elif param in st.query_params:
        del st.query_params[param]


def _picked(param: str) -> None:
    """A trace was chosen in the picker: the id field and the URL follow."""
    pick_key, typed_key = _keys(param)
    st.session_state[typed_key] = st.session_state[pick_key]
    _show_in_url(param, st.session_state[pick_key])


def _typed(param: str) -> None:
    """An id was typed: the picker and the URL follow (the picker offers it on the next run)."""
    pick_key, typed_key = _keys(param)
    trace_id = str(st.session_state[typed_key]).strip().lower()
    st.session_state[pick_key] = trace_id
    _show_in_url(param, trace_id)


def _labels(source: TraceSource, wanted: list[str]) -> dict[str, str]:
    """Picker labels of the newest traces, plus those of the wanted ids that are older."""
    labels = {s.trace_id: trace_label(s) for s in source.list_traces(TraceFilter(), limit=RECENT)}
    for trace_id in wanted:
        if trace_id and trace_id not in labels:
            found = source.list_traces(TraceFilter(trace_id=trace_id), limit=1)
            known = found and found[0].trace_id == trace_id
            labels[trace_id] = trace_label(found[0]) if known else f"{trace_id} (not in this source)"
    return labels


def _side(label: str, param: str, labels: dict[str, str]) -> str:
    """One side's picker and id field; returns the chosen trace id ("" when none)."""
    pick_key, typed_key = _keys(param)
    trace_id = str(st.session_state[typed_key]).strip().lower()
    if st.session_state.get(pick_key) != trace_id:
        st.session_state[pick_key] = trace_id  # the URL or the id field changed it
    st.selectbox(
        label,
        [NOTHING, *labels],
        format_func=lambda t: labels.get(t, "(choose a trace)"),
        key=pick_key,
        on_change=_picked,
        args=(param,),
    )
    st.text_input("or its trace id", key=typed_key, on_change=_typed, args=(param,))
    return trace_id


def _chosen(source: TraceSource) -> tuple[str, str]:
    """Both sides' trace ids, starting from `?a=&b=` on the first run of the page."""
    for param in ("a", "b"):
        typed_key = _keys(param)[1]
        if typed_key not in st.session_state:
            st.session_state[typed_key] = str(st.query_params.get(param, "")).strip().lower()
    wanted = [str(st.session_state[_keys(p)[1]]).strip().lower() for p in ("a", "b")]
    labels = _labels(source, wanted)
    left, right = st.columns(2)
    with left:
        a_id = _side("Trace A", "a", labels)
    with right:
        b_id = _side("Trace B", "b", labels)
    return a_id, b_id


def main() -> None:
    """Draw the page."""
    st.title("Compare")
    active = active_source()
    if active is None:
        return
    a_id, b_id = _chosen(active[1])
    if not a_id or not b_id:
        st.info("Pick two traces (or type their ids, or open `compare?a=<id>&b=<id>`).")
        return
    views = get_views([a_id, b_id])
    a, b = views[a_id], views[b_id]
    for trace_id, view in ((a_id, a), (b_id, b)):
        if not view.index.spans:
            st.warning(fmt.markdown_text(f"No spans stored for trace {trace_id}."))
            return
    st.subheader("Cost and shape")
    show_table(cost_diff(a, b), key="compare_costs")
    failures = failure_diff(a, b)
    if not failures.empty:
        st.subheader("Failures that differ")
        show_table(failures, key="compare_failures")
    st.subheader("Agent loops")
    show_table(tree_diff(a, b), key="compare_tree")
    st.caption(
        "A loop is named by its path from the root: `planner/delegate.researcher[2]#1` is attempt 1 "
        "of the planner's second call of delegate.researcher."
    )
    # One above the other: side by side, each tree would be shrunk to half the page width. The
    # Trace page's graph, drawn the same way; a click opens that trace at the span clicked.
    for label, view in (("A", a), ("B", b)):
        st.subheader(f"Handoff tree {label}")
        key = f"compare_graph_{label}"
        picked = nav.chart_pick(key, "span_id")
        if picked:
            nav.open_trace(view.trace_id, picked)
        pick = alt.selection_point(name="pick", fields=["span_id"], on="click")
        chart = handoff_chart(handoff_frames(view, MAX_NODES), pick)
        st.altair_chart(chart, width="stretch", on_select="rerun", key=key, selection_mode="pick")
    st.caption("Click a loop or a handoff to open its trace there.")


main()
