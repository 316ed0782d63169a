"""The Trace page's tree as a small custom component: one HTML row per span, a click (or an arrow
key) selects it at once.

Streamlit's data grid sends a selection 150 ms after the click (a debounce in its frontend), half
of the time a span's detail may take; this component sends the picked span id on the click itself
(`setTriggerValue`), and marks the row at once. Rows already drawn stay when the new ones extend
them (a click only moves the mark; more rows are appended below). A big tree is sent a part at a
time: its last row says how many are not drawn yet, and a click on it, scrolling down to it or the
down arrow past the last row asks for the next part. Every cell is set as text (never as HTML), so
a hostile span name is shown as written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_outline import OutlineRow

COLUMNS = ("span", "kind", "outcome", "duration", "cost")
"""The tree's columns, in order."""
VISIBLE_ROWS = 20
"""Rows shown before the tree scrolls."""

_CSS = """
.tree { max-height: calc(var(--rows) * 2.1rem + 2.2rem); overflow: auto; outline: none;
        border: 1px solid var(--st-border-color, rgba(49, 51, 63, 0.2)); border-radius: 0.5rem; }
table { border-collapse: collapse; width: 100%; font-size: 0.875rem; font-family: var(--st-font, inherit); }
th { position: sticky; top: 0; text-align: left; font-weight: 400; opacity: 0.75;
     background: var(--st-secondary-background-color, #f0f2f6); }
th, td { padding: 0.3rem 0.6rem; white-space: nowrap; line-height: 1.5rem; }
td.span { white-space: pre; }
tr.row, tr.more { cursor: pointer; }
tr.row:hover, tr.more:hover { background: var(--st-secondary-background-color, #f0f2f6); }
tr.row.on { background: color-mix(in srgb, var(--st-primary-color, #ff4b4b) 18%, transparent); }
tr.more td { opacity: 0.75; font-style: italic; }
"""

_JS = """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let box = parentElement.querySelector('.tree');
  if (!box) {
    box = document.createElement('div');
    box.className = 'tree';
    box.tabIndex = 0;
    box.setAttribute('role', 'grid');
    parentElement.appendChild(box);
  }
  box.style.setProperty('--rows', String(data.visible));
  // One key per row (its id and cells): rows already drawn are kept when the new ones extend them
  // (more rows asked for, or a click: only the mark moves); else the table is built anew.
  const keys = data.rows.map((cells, at) => data.ids[at] + '\t' + cells.join('\t'));
  const drawn = box.drawnKeys || [];
  let body = box.querySelector('tbody');
  const rebuilt = !body || drawn.length > keys.length || drawn.some((key, at) => key !== keys[at]);
  if (rebuilt) {
    if (body) box.scrollTop = 0;  // other rows (a search) start at the top; a first draw has no scroll
    const table = document.createElement('table');
    const head = table.createTHead().insertRow();
    for (const name of data.columns) {
      const th = document.createElement('th');
      th.textContent = name;
      head.appendChild(th);
    }
    body = table.createTBody();
    box.replaceChildren(table);
    box.drawnKeys = [];
    delete box.dataset.asked;  // other rows (a search, another trace): their next part not asked yet
  }
  body.querySelector('tr.more')?.remove();
  for (let at = box.drawnKeys.length; at < data.rows.length; at++) {
    const tr = body.insertRow();
    tr.className = 'row';
    tr.dataset.at = String(at);
    data.rows[at].forEach((text, col) => {
      const td = tr.insertCell();
      td.textContent = text;
      if (col === 0) td.className = 'span';
    });
  }
  box.drawnKeys = keys;
  const rows = Array.from(body.querySelectorAll('tr.row'));
  let more = null;
  if (data.more) {  // the rows not sent yet: asked for by a click on this row or by scrolling to it
    more = body.insertRow();
    more.className = 'more';
    const td = more.insertCell();
    td.colSpan = data.columns.length;
    td.textContent = data.more;
  }
  const askMore = () => {
    if (!more || box.dataset.asked === String(rows.length)) return;
    box.dataset.asked = String(rows.length);  // once per length: the next rows are on their way
    // With a time: a value equal to the last one sent (100 rows again, after a search) is not sent.
    setTriggerValue('more', { drawn: rows.length, at: Date.now() });
  };
  let current = data.selected;
  const mark = (at, scroll) => {
    for (const tr of body.querySelectorAll('tr.on')) tr.classList.remove('on');
    if (at < 0 || at >= rows.length) return;
    rows[at].classList.add('on');
    if (!scroll) return;
    // Within the tree only (the page itself never jumps), and in the next frame: reading where the
    // row is lays out the page, which while the page is still being drawn (its first draw) is a
    // whole layout done twice.
    requestAnimationFrame(() => {
      const row = rows[at];
      if (!row.isConnected) return;
      const top = row.offsetTop - body.offsetTop, head = body.offsetTop;
      if (top < box.scrollTop) box.scrollTop = top;
      else if (top + row.offsetHeight + head > box.scrollTop + box.clientHeight) {
        box.scrollTop = top + row.offsetHeight + head - box.clientHeight;
      }
    });
  };
  const pick = (at) => {
    if (at < 0 || at >= rows.length || at === current) return;
    current = at;
    mark(at, true);
    setTriggerValue('picked', data.ids[at]);
  };
  // Scrolled to when it changed or the rows did, not when more rows came below it (the reader
  // scrolled down for them).
  const id = current >= 0 ? data.ids[current] : '';
  mark(current, rebuilt || box.dataset.marked !== id);
  box.dataset.marked = id;
  box.onclick = (event) => {
    if (more && event.target.closest('tr.more')) { askMore(); return; }
    const tr = event.target.closest('tr.row');
    if (!tr) return;
    box.focus({ preventScroll: true });
    pick(Number(tr.dataset.at));
  };
  box.onscroll = () => {
    if (more && box.scrollTop + box.clientHeight >= more.offsetTop - more.offsetHeight) askMore();
  };
  box.onkeydown = (event) => {
    if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return;
    event.preventDefault();
    const from = current === null || current < 0 ? -1 : current;
    if (event.key === 'ArrowDown' && from === rows.length - 1) askMore();
    pick(event.key === 'ArrowDown' ? Math.min(from + 1, rows.length - 1) : Math.max(from - 1, 0));
  };
}
"""

_TREE = st.components.v2.component("janux_trace_tree", css=_CSS, js=_JS)


def row_cells(row: OutlineRow) -> list[str]:
    """The tree's cells of one span (`COLUMNS`), as text: indented label, kind, outcome, duration, cost."""
    return ["  " * row.depth + row.label, row.kind, row.outcome, fmt.ms(row.duration_ms), row.cost]


def trace_tree(
    rows: list[OutlineRow],
    selected: str | None,
    *,
    key: str,
    on_pick: Callable[[str], None],
    more: str = "",
    on_more: Callable[[int], None] | None = None,
) -> None:
    """Draw the tree of `rows` with `selected` marked; `on_pick(span_id)` runs (before the rerun it
    causes) when a row is clicked or reached with the arrow keys. With `more` (the text of a last
    row saying what is not drawn yet), a click on that row, scrolling down to it or the down arrow
    on the last row runs `on_more(n)`, `n` being the rows drawn, before the rerun it causes."""
    ids = [r.span_id for r in rows]
    cells = [row_cells(r) for r in rows]

    def state() -> Any:
        return st.session_state.get(key)

    def picked() -> None:
        span_id = state().get("picked") if state() is not None else None
        if span_id:
            on_pick(str(span_id))

    def asked() -> None:
        held = state().get("more") if state() is not None else None
        if isinstance(held, dict) and on_more is not None:
            on_more(int(held.get("drawn") or 0))

    _TREE(
        key=key,
        data={
            "columns": list(COLUMNS),
            "rows": cells,
            "ids": ids,
            "selected": ids.index(selected) if selected in ids else -1,
            "visible": VISIBLE_ROWS,
            "more": more if on_more is not None else "",
        },
        on_picked_change=picked,
        on_more_change=asked,
    )
