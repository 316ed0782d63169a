"""The Trace page's explorer: the tree (or the waterfall) on the left, the selected span on the right.

The selected span lives in the URL (`?span=`), so a link opens the trace on that span. A click on a
tree row, a waterfall bar or a loop or handoff of the graph selects it; in the tree, the arrow keys move the
selection.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from janux.dashboard.ui.nav import chart_pick
from janux.dashboard.ui.text_tables import TextTable, text_tables
from janux.dashboard.ui.trace_tree import trace_tree
from janux.dashboard.views.handoff_chart import handoff_chart, handoff_frames
from janux.dashboard.views.handoff_labels import DEFAULT_MAX_NODES
from janux.dashboard.views.span_detail import full_value, span_detail
from janux.dashboard.views.span_price import round_price_text
from janux.dashboard.views.timeline import DEFAULT_MAX_ROWS, waterfall, waterfall_chart
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import trace_outline as outline
from janux.tracing.analysis import trace_search as search
from janux.tracing.analysis.trace_outline import HANDOFF_KINDS, OutlineRow
from janux.tracing.analysis.trace_view import TraceView

VIEW_TAB = "trace_view_tab"
"""Key (and URL parameter) of the left side's tab: `?trace_view_tab=Graph` opens the graph."""
VIEW_TABS = ("Tree", "Waterfall", "Graph")
"""The left side's tabs."""
TREE_KEY = "trace_tree"
"""Widget key of the tree (`trace_tree`: a click there selects the span in the URL's `span`)."""
_WATERFALL_KEY = "trace_waterfall"
_GRAPH_KEY = "trace_handoff_graph"
_DETAIL_KEY = "trace_detail_tables"
DETAIL_FRAGMENT = "trace_detail"
"""Key of the detail pane's fragment: a click on a tree row reruns only it (`_picked_in_tree`)."""
FIRST_ROWS = 1_000
"""Tree rows sent with the page: 1,000, about eighty screens of the tree's box (rows are cheap to
draw: a fixed table layout and text cells); the next rows come when asked for (`MORE_ROWS` at a
time)."""
MORE_ROWS = 1_000
"""Tree rows added when the tree's last row is clicked or scrolled to."""
TREE_ROWS = 20_000
"""Most rows the tree holds (a search or a toggle narrows a bigger trace)."""
_SHOWN_KEY = "trace_tree_shown"
"""Session key of (what the tree shows, how many of its rows were asked for)."""
SEARCH_KEY = "trace_search"
"""Widget key of "Search this trace"."""
ERRORS_KEY = "trace_errors_only"
"""Widget key of the "Errors only" toggle: the failed spans and their ancestors."""
HANDOFFS_KEY = "trace_handoffs_only"
"""Widget key of the "Loops & delegations" toggle: the tree collapsed to its handoff tree."""
OUTLINES_KEPT = 4
"""Traces whose tree rows are kept between runs (a search types on the same trace)."""
NARROWED_KEPT = 8
"""Narrowed trees (a search, a toggle) kept between runs: a click in a narrowed tree reruns it."""

_outlines: OrderedDict[tuple[int, str, int], list[OutlineRow]] = OrderedDict()
_outlines_lock = threading.Lock()
_narrowed: OrderedDict[tuple[Any, ...], Narrowed] = OrderedDict()
_heads: OrderedDict[tuple[Any, ...], list[OutlineRow]] = OrderedDict()


@dataclass(frozen=True, slots=True)
class Narrowed:
    """The tree narrowed by a search or a toggle."""

    rows: list[OutlineRow]
    """The rows kept (the spans wanted and their ancestors), in tree order."""
    wanted: list[str]
    """Span ids of the spans wanted (found, failed, loops or delegations), in tree order."""
    hits: list[str]
    """Of those, the ones a search found (`wanted`, empty without a search): highlighted."""


def _view_key(view: TraceView) -> tuple[int, str, int]:
    """What a rebuilt trace's rows depend on (never the view itself: it is not held)."""
    spans = view.index.spans
    return id(view), spans[0].trace_id if spans else "", len(spans)


def outline_rows(view: TraceView) -> list[OutlineRow]:
    """`trace_outline.outline(view)` (all rows, for a search or a toggle), computed once per
    rebuilt trace (50-90 ms for 10,000 spans): the newest `OUTLINES_KEPT` are kept, keyed by the
    view and what its rows depend on (its trace and span count), never holding the view itself."""
    key = _view_key(view)
    with _outlines_lock:
        rows = _outlines.get(key)
        if rows is not None:
            _outlines.move_to_end(key)
            return rows
    rows = outline.outline(view)
    with _outlines_lock:
        _outlines[key] = rows
        while len(_outlines) > OUTLINES_KEPT:
            _outlines.popitem(last=False)
    return rows


def _head(view: TraceView, count: int) -> list[OutlineRow]:
    """`trace_outline.outline_head(view, count)`, kept between runs with the narrowed trees: a click
    on a span reruns the tree with the same rows (1,000 of them: 30-100 ms to build again)."""
    key = (*_view_key(view), "head", count)
    with _outlines_lock:
        held = _heads.get(key)
        if held is not None:
            _heads.move_to_end(key)
            return held
    rows = outline.outline_head(view, count)
    with _outlines_lock:
        _heads[key] = rows
        while len(_heads) > OUTLINES_KEPT:
            _heads.popitem(last=False)
    return rows


def narrowed(view: TraceView, needle: str, errors: bool, handoffs: bool) -> Narrowed | None:
    """The tree narrowed to the spans a search finds (`needle`), that failed (`errors`) and that are
    loops or delegations (`handoffs`), all that apply, each kept with its ancestors; None when
    nothing narrows it. Kept between runs (`NARROWED_KEPT`)."""
    needle = needle.strip()
    if not (needle or errors or handoffs):
        return None
    key = (*_view_key(view), needle.lower(), errors, handoffs)
    with _outlines_lock:
        held = _narrowed.get(key)
        if held is not None:
            _narrowed.move_to_end(key)
            return held
    rows = outline_rows(view)
    failed = search.failed_span_ids(view) if errors else None
    wanted = [
        r for r in rows
        if (failed is None or r.span_id in failed) and (not handoffs or r.kind in HANDOFF_KINDS)
        and search.matches(view, r, needle)
    ]  # fmt: skip
    ids = [r.span_id for r in wanted]
    found = Narrowed(search.with_ancestors(view, rows, set(ids)), ids, ids if needle else [])
    with _outlines_lock:
        _narrowed[key] = found
        while len(_narrowed) > NARROWED_KEPT:
            _narrowed.popitem(last=False)
    return found


def selected_span(view: TraceView) -> str | None:
    """The span the URL selects, else the trace's first span."""
    wanted = str(st.query_params.get("span", ""))
    if wanted and view.span(wanted) is not None:
        return wanted
    return view.index.spans[view.index.order[0]].span_id if view.index.spans else None


def _select(view: TraceView, span_id: str) -> None:
    """Select a span of this trace in the URL. A span of another trace is ignored: a chart or the
    tree may hand back what was picked on the trace shown before (the browser keeps a widget's
    last value by its key), and writing it would add a history entry that Back then lands on."""
    if view.span(span_id) is not None and st.query_params.get("span") != span_id:
        st.query_params["span"] = span_id


def _picked_in_tree(view: TraceView, span_id: str, detail_only: bool) -> None:
    """Select the span clicked (or reached with the arrow keys) in the tree; with `detail_only`,
    rerun only the detail pane's fragment instead of the whole explorer.

    The tree marks the clicked row itself in the browser: rerunning it only to send its 1,000 rows
    (250 kB) back with the mark moved made every click wait for them. Not while a search narrows
    the tree: its note ("Match 2 of 5 selected") follows the selection."""
    before = st.query_params.get("span")
    _select(view, span_id)
    if detail_only and st.query_params.get("span") != before:
        st.rerun(DETAIL_FRAGMENT)


def _clicked_in_chart(view: TraceView, key: str) -> None:
    """Apply a click on a bar of the waterfall or a mark of the graph."""
    picked = chart_pick(key, "span_id")
    if picked:
        _select(view, picked)


def _drawn_loops(view: TraceView) -> int:
    """How many loops the graph draws: all of a small trace; of a big one, as many as asked for."""
    count = len(view.nodes)
    if count <= DEFAULT_MAX_NODES:
        return DEFAULT_MAX_NODES
    return int(
        st.number_input(
            f"Agent loops drawn (of {count:,}; the rest are collapsed)", min_value=10,
            max_value=max(count, 10), value=DEFAULT_MAX_NODES, step=50, key="trace_tree_limit",
        )
    )  # fmt: skip


def _graph(view: TraceView) -> None:
    frames = handoff_frames(view, _drawn_loops(view), selected=selected_span(view))
    if frames.points.empty:
        st.info("No agent loops in this trace.")
        return
    pick = alt.selection_point(name="pick", fields=["span_id"], on="click")
    chart = handoff_chart(frames, pick)
    st.altair_chart(chart, width="stretch", on_select="rerun", key=_GRAPH_KEY, selection_mode="pick")
    note = (
        "Click a loop (dot), a handoff (diamond) or a handoff that never ran (square) to see its span. "
        "Green: completed; red: failed, cut, denied or timed out; purple: open. Dashed: a failed "
        "attempt. Labels: tool, attempt and how it ended, the attempt's own duration."
    )
    if frames.hidden:
        note += f' {frames.hidden:,} loop(s) collapsed into "+N more loops".'
    st.caption(note)
    if view.incomplete_roots:
        orphans = len(view.issues.orphans) + len(view.issues.cycles)
        st.caption(f"Incomplete trace: {orphans:,} span(s) with a missing parent (loops drawn as roots).")


def _filters() -> tuple[str, bool, bool]:
    """(search text, errors only, loops and delegations only) as the toolbar holds them."""
    state = st.session_state
    return str(state.get(SEARCH_KEY) or ""), bool(state.get(ERRORS_KEY)), bool(state.get(HANDOFFS_KEY))


def _select_first(view: TraceView) -> None:
    """Select the first span the filters want (a new search, errors only switched on): the detail
    shows what was looked for at once."""
    found = narrowed(view, *_filters())
    if found is not None and found.wanted:
        _select(view, found.wanted[0])


def _step(view: TraceView, step: int) -> None:
    """Select the next (`step` 1) or previous (-1) span the search found, after or before the
    selected one, round to the first or last."""
    found = narrowed(view, *_filters())
    if found is None or not found.hits:
        return
    order = {r.span_id: at for at, r in enumerate(found.rows)}
    here = order.get(selected_span(view) or "", -1)
    if step > 0:
        target = next((h for h in found.hits if order[h] > here), found.hits[0])
    else:
        target = next((h for h in reversed(found.hits) if order[h] < here), found.hits[-1])
    _select(view, target)


SEARCH_HINT = "Search this trace: names, agents, attributes, errors, events, captured content"
"""The search box's placeholder (its label, hidden, is "Search this trace")."""


def _toolbar(view: TraceView) -> tuple[str, bool, bool]:
    """The search box with previous / next match, and the two toggles; their values."""
    box, back, ahead, errors, handoffs = st.columns(
        [2.7, 0.55, 0.55, 1.5, 2.4], vertical_alignment="center", gap="xsmall"
    )
    needle = box.text_input(
        "Search this trace", key=SEARCH_KEY, placeholder=SEARCH_HINT, label_visibility="collapsed",
        on_change=_select_first, args=(view,),
    )  # fmt: skip
    searching = not needle.strip()
    back.button("‹", key="trace_search_prev", help="Previous match", disabled=searching, on_click=_step,
                args=(view, -1))  # fmt: skip
    ahead.button("›", key="trace_search_next", help="Next match", disabled=searching, on_click=_step,
                 args=(view, 1))  # fmt: skip
    # No help icons: the labels fit beside the search box (the tree's caption says what each shows).
    errors.toggle("Errors only", key=ERRORS_KEY, on_change=_select_first, args=(view,))
    handoffs.toggle("Loops & delegations", key=HANDOFFS_KEY)
    return _filters()


def _note(view: TraceView, needle: str, errors: bool, found: Narrowed | None, current: str | None) -> None:
    """One line under the toolbar: how many spans the search found and which one is selected, or
    that no span failed."""
    total = len(view.index.spans)
    if found is None:
        return
    if needle.strip():
        hits = found.hits
        which = f" Match {hits.index(current) + 1:,} of {len(hits):,} selected." if current in hits else ""
        st.caption(f"{len(hits):,} of {total:,} spans match.{which} Highlighted, with the spans above them.")
    elif errors:
        failed = len(found.wanted)
        st.caption(
            f"{failed:,} failed span(s) (failed, timed out, denied, cut, fallback) with the spans above."
            if failed else "No span failed."
        )  # fmt: skip


def _position(view: TraceView, found: Narrowed | None, span_id: str | None) -> int:
    """Position of `span_id`'s row among the rows shown (-1 when it is not one of them)."""
    if span_id is None:
        return -1
    if found is not None:
        return next((at for at, r in enumerate(found.rows) if r.span_id == span_id), -1)
    pos = view.index.by_id.get(span_id)
    return -1 if pos is None else view.index.order.index(pos)


def trace_ms(view: TraceView) -> float:
    """The trace's duration in ms, first start to last end (the time scale of the tree's bars)."""
    spans = view.index.spans
    ends = [s.end_ns for s in spans if s.duration_ns >= 0]
    return (max(ends) - spans[0].start_ns) / 1e6 if spans and ends else 0.0


def _tree(view: TraceView, current: str | None) -> None:
    needle, errors, handoffs = _toolbar(view)
    found = narrowed(view, needle, errors, handoffs)
    _note(view, needle, errors, found, current)
    matched = len(found.rows) if found is not None else len(view.index.spans)
    if matched > TREE_ROWS:
        st.caption(f"The tree holds the first {TREE_ROWS:,} of {matched:,} spans: search to find the others.")
    # How many rows: the first FIRST_ROWS, more as asked for, down to the selected span's row.
    what = (view.trace_id, needle.strip().lower(), errors, handoffs)
    held = st.session_state.get(_SHOWN_KEY)
    asked = held[1] if isinstance(held, tuple) and held[0] == what else FIRST_ROWS
    count = min(max(asked, _position(view, found, current) + 1), TREE_ROWS, matched)
    shown = found.rows[:count] if found is not None else _head(view, count)
    left_over = min(matched, TREE_ROWS) - count

    def more(drawn: int) -> None:
        st.session_state[_SHOWN_KEY] = (what, drawn + MORE_ROWS)

    trace_tree(
        shown, current, key=TREE_KEY,
        on_pick=lambda span_id: _picked_in_tree(view, span_id, detail_only=not needle.strip()),
        total_ms=trace_ms(view), hits=found.hits if found is not None else (),
        version=(*_view_key(view), *what, count),
        more=f"{min(MORE_ROWS, left_over):,} more of {left_over:,} not drawn yet: click or scroll here"
        if left_over > 0 else "",
        on_more=more,
    )  # fmt: skip


def _waterfall(view: TraceView) -> None:
    handoffs = st.toggle("Handoffs only", key="trace_tl_handoffs")
    fall = waterfall(view, mode="handoffs" if handoffs else "all", max_rows=DEFAULT_MAX_ROWS)
    if fall.rows.empty:
        st.info("No spans to draw.")
        return
    pick = alt.selection_point(name="pick", fields=["span_id"], on="click")
    chart = waterfall_chart(fall).add_params(pick)
    st.altair_chart(chart, width="stretch", on_select="rerun", key=_WATERFALL_KEY, selection_mode="pick")
    note = "Click a bar to see its span. Red outline: the span ended with an error; faded: no end yet."
    if fall.hidden:
        note += f" {fall.hidden:,} span(s) not drawn (the first {DEFAULT_MAX_ROWS:,} are)."
    st.caption(note)


def _detail(view: TraceView, current: str | None) -> None:
    span = view.span(current) if current else None
    if span is None:
        st.info("Pick a span in the tree or the waterfall.")
        return
    detail = span_detail(view, span, outline.outline_row(view, current or span.span_id))
    st.subheader(fmt.markdown_text(detail.title))
    if detail.error:
        st.error(fmt.markdown_text(detail.error))
    # Plain text tables in one element (no data grid, no Arrow script to load): the detail shows at once.
    tables = [TextTable("facts", "", pd.DataFrame(detail.facts + detail.usage, columns=["", "value"]))]
    price = round_price_text(view, span)
    if price is not None:
        tables.append(TextTable("price", price))
    if detail.budget is not None:
        tables.append(TextTable("budget", "Budget", detail.budget))
    tables.append(TextTable("attributes", "Attributes", detail.attributes))
    if not detail.events.empty:
        tables.append(TextTable("events", "Events", detail.events, grouped=True))
    text_tables(tables, key=_DETAIL_KEY)
    if detail.content:
        st.caption("Captured content")
        for key, value in detail.content.items():
            st.text(key)
            st.code(value, language=None)
    else:
        st.caption("Content not captured for this span.")
    for key in detail.cut:  # the whole of a value shown cut, built only when asked for
        st.download_button(
            f"Whole value of {key}",
            data=functools.partial(full_value, span, key),
            file_name=f"span-{span.span_id}-{key}.txt",
            mime="text/plain",
            key=f"trace_full_{span.span_id}_{key}",
            on_click="ignore",
        )


def _view_tabs(view: TraceView) -> Sequence[Any]:
    """The left side's tabs, the chosen one named in the URL (`?trace_view_tab=`).

    Not bound to the URL by Streamlit (`bind=`): the browser keeps a bound widget's value by its
    key and writes it into the next trace's URL as a history entry of its own, so Back landed there
    instead of on the list. The widget's key names the trace and the URL's tab instead: another
    trace, or a link naming a tab, draws a fresh widget opening on the tab the URL says."""
    named = str(st.query_params.get(VIEW_TAB, ""))
    opened = named if named in VIEW_TABS else VIEW_TABS[0]
    spans = view.index.spans
    key = f"{VIEW_TAB}:{spans[0].trace_id if spans else ''}:{opened}"

    def chosen() -> None:
        picked = st.session_state.get(key)
        if picked == VIEW_TABS[0]:
            st.query_params.pop(VIEW_TAB, None)
        elif picked in VIEW_TABS:
            st.query_params[VIEW_TAB] = picked

    return st.tabs(list(VIEW_TABS), default=opened, key=key, on_change=chosen)


@st.fragment
def explorer(view: TraceView) -> None:
    """The split view: tree or waterfall on the left, the selected span's detail on the right.

    A fragment: a click in the tree or the waterfall redraws only this view, not the whole page.
    """
    _clicked_in_chart(view, _WATERFALL_KEY)
    _clicked_in_chart(view, _GRAPH_KEY)
    current = selected_span(view)
    left, right = st.columns([5, 3], gap="small")
    with left:
        # Only the chosen tab is drawn: the waterfall (a tall chart) costs nothing until asked for;
        # the chosen tab is in the URL, so a link opens the graph.
        tabs = _view_tabs(view)
        if tabs[0].open is not False:
            with tabs[0]:
                _tree(view, current)
        for tab, draw in zip(tabs[1:], (_waterfall, _graph), strict=True):
            if tab.open:
                with tab:
                    draw(view)
    with right:
        _detail_pane(view)


@st.fragment(key=DETAIL_FRAGMENT)
def _detail_pane(view: TraceView) -> None:
    """The selected span's detail, a fragment of its own: a click in the tree reruns only this."""
    _detail(view, selected_span(view))
