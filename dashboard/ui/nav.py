"""Moving between pages in this tab and session: one click on a row opens what the row names.

Every destination is a page plus query parameters, so the address bar always holds a link that
opens the same view elsewhere (deep links keep working), and the browser's Back button returns to
the list: list pages keep their filters in the URL (`url_state`) and are restored from it. A list
page also remembers, in the session, its address and the traces it showed, for the Trace page's
"← back" link and its previous/next buttons.
"""

from __future__ import annotations

from typing import Any, NoReturn

import streamlit as st

from janux.dashboard.ui.state import source_params

TRACES = "app_pages/traces.py"
"""The Traces list (the app's default page, served at `/`)."""
TRACE = "app_pages/trace.py"
"""The Trace page (`?trace_id=&span=`)."""
FAILURES = "app_pages/failures.py"
"""The Failures page (`?caller=&target=` narrows it to one edge)."""
HANDOFF = "app_pages/handoff.py"
"""The failed-handoff screen (`?trace_id=&span_id=`)."""
CONVERSATIONS = "app_pages/conversations.py"
"""The Conversations page (`?conversation=` names the one whose turns are listed)."""
COSTS = "app_pages/costs.py"
"""The Costs page."""
AGENT_MAP = "app_pages/agent_map.py"
"""The agent map (`?select=` names the inspected node or edge)."""

_TITLES = {
    TRACES: "Traces",
    FAILURES: "Failures",
    AGENT_MAP: "Agent map",
    HANDOFF: "Failed handoff",
    COSTS: "Costs",
    CONVERSATIONS: "Conversations",
}
_RETURN = "janux_return_to"
_ORDER = "janux_trace_order"
_IDS = "__trace_ids"
_SEEN = "__seen"
_ITEM_PARAMS = ("trace_id", "span", "span_id")
"""Query parameters of the pages that show one item, never of a list."""


def go(page: str, **params: str | None) -> NoReturn:
    """Switch this tab to `page` with `params` (empty ones left out) and the source's parameters."""
    query = {key: value for key, value in params.items() if value}
    st.switch_page(page, query_params={**query, **source_params()})


def open_trace(trace_id: str, span: str | None = None) -> NoReturn:
    """Show one trace (and select one of its spans) in this tab."""
    go(TRACE, trace_id=trace_id, span=span)


def open_handoff(trace_id: str, span_id: str) -> NoReturn:
    """Explain one failed handoff in this tab."""
    go(HANDOFF, trace_id=trace_id, span_id=span_id)


def picked_row(event: Any) -> int | None:
    """Position of the row a click selected in a selectable `st.dataframe`, None when nothing is
    selected. A clicked cell wins over a selected row: a table whose row selection the page sets
    (the Trace page's tree) reports the new click as a cell beside the old row."""
    selection = getattr(event, "selection", None)
    if selection is None and isinstance(event, dict):
        selection = event.get("selection")
    if selection is None:
        return None
    cells = list(selection.get("cells", []))
    if cells:
        return int(cells[0][0])
    rows = list(selection.get("rows", []))
    return int(rows[0]) if rows else None


def chart_pick(key: str, field: str) -> str | None:
    """The `field` of the mark just clicked in chart `key` (a point selection named `pick`), once: a
    chart keeps its selection between runs, so a value already seen is not a new click."""
    state: Any = st.session_state.get(key)
    points = list((state or {}).get("selection", {}).get("pick", []) or [])
    picked = str(points[0].get(field, "")) if points else ""
    seen = st.session_state.get(f"{key}{_SEEN}")
    st.session_state[f"{key}{_SEEN}"] = picked
    return picked if picked and picked != seen else None


def follow_click(key: str) -> None:
    """Open the trace of the row just clicked in table `key` before the page reads anything: the
    click's rerun goes straight to the Trace page (the rows' traces are those of the last run)."""
    ids: list[str] = st.session_state.get(f"{key}{_IDS}", [])
    pos = picked_row(st.session_state.get(key))
    if pos is not None and pos < len(ids):
        open_trace(ids[pos])


def shown_rows(key: str, trace_ids: list[str]) -> None:
    """Note the trace of each row of table `key`, as drawn, for `follow_click`."""
    st.session_state[f"{key}{_IDS}"] = list(trace_ids)


def remember_list(page: str, trace_ids: list[str]) -> None:
    """Note that `page` (with its current URL) listed `trace_ids`: the Trace page then offers a
    link back to it and previous/next among those traces."""
    st.session_state[_RETURN] = (page, st.query_params.to_dict())
    st.session_state[_ORDER] = list(trace_ids)


def restore_list(page: str) -> None:
    """Browser Back into a list page arrives with the query of the page it left (`?trace_id=`):
    put back the list's own query, as remembered, before its widgets read it."""
    if not any(param in st.query_params for param in _ITEM_PARAMS):
        return
    remembered = st.session_state.get(_RETURN)
    params = remembered[1] if remembered is not None and remembered[0] == page else {}
    st.query_params.from_dict({**params, **source_params()})


def back_link(default: str = TRACES) -> None:
    """ "← <list>": the list this trace was opened from, with its filters and page as left."""
    page, params = st.session_state.get(_RETURN, (default, {}))
    params = {**params, **source_params()}
    st.page_link(page, label=f"← {_TITLES.get(page, 'Back')}", query_params=params)


def neighbours(trace_id: str) -> tuple[str | None, str | None]:
    """(previous, next) trace of the list the trace was opened from; None at either end or when
    the trace was not opened from a list."""
    order: list[str] = st.session_state.get(_ORDER, [])
    if trace_id not in order:
        return None, None
    at = order.index(trace_id)
    before = order[at - 1] if at > 0 else None
    after = order[at + 1] if at + 1 < len(order) else None
    return before, after
