"""The Trace page's tree as a small custom component: one HTML row per span, a click (or an arrow
key) selects it at once.

Streamlit's data grid sends a selection 150 ms after the click (a debounce in its frontend), half
of the time a span's detail may take; this component sends the picked span id on the click itself
(`setTriggerValue`), and marks the row at once. The rows are built again only when they change
(a click moves the mark). Every cell is set as text (never as HTML), so a hostile span name is
shown as written.
"""

from __future__ import annotations

import json
import zlib
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
tr.row { cursor: pointer; }
tr.row:hover { background: var(--st-secondary-background-color, #f0f2f6); }
tr.row.on { background: color-mix(in srgb, var(--st-primary-color, #ff4b4b) 18%, transparent); }
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
  if (box.dataset.version !== data.version) {  // new rows (another trace, a search); else only the mark moves
    const table = document.createElement('table');
    const head = table.createTHead().insertRow();
    for (const name of data.columns) {
      const th = document.createElement('th');
      th.textContent = name;
      head.appendChild(th);
    }
    const tbody = table.createTBody();
    data.rows.forEach((cells, at) => {
      const tr = tbody.insertRow();
      tr.className = 'row';
      tr.dataset.at = String(at);
      cells.forEach((text, col) => {
        const td = tr.insertCell();
        td.textContent = text;
        if (col === 0) td.className = 'span';
      });
    });
    box.replaceChildren(table);
    box.dataset.version = data.version;
  }
  const body = box.querySelector('tbody');
  const rows = Array.from(body.rows);
  let current = data.selected;
  const mark = (at, scroll) => {
    for (const tr of body.querySelectorAll('tr.on')) tr.classList.remove('on');
    if (at < 0 || at >= rows.length) return;
    rows[at].classList.add('on');
    if (!scroll) return;  // within the tree only: the page itself never jumps
    const row = rows[at], top = row.offsetTop - body.offsetTop, head = body.offsetTop;
    if (top < box.scrollTop) box.scrollTop = top;
    else if (top + row.offsetHeight + head > box.scrollTop + box.clientHeight) {
      box.scrollTop = top + row.offsetHeight + head - box.clientHeight;
    }
  };
  const pick = (at) => {
    if (at < 0 || at >= rows.length || at === current) return;
    current = at;
    mark(at, true);
    setTriggerValue('picked', data.ids[at]);
  };
  mark(current, true);
  box.onclick = (event) => {
    const tr = event.target.closest('tr.row');
    if (!tr) return;
    box.focus({ preventScroll: true });
    pick(Number(tr.dataset.at));
  };
  box.onkeydown = (event) => {
    if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return;
    event.preventDefault();
    const from = current === null || current < 0 ? -1 : current;
    pick(event.key === 'ArrowDown' ? Math.min(from + 1, rows.length - 1) : Math.max(from - 1, 0));
  };
}
"""

_TREE = st.components.v2.component("janux_trace_tree", css=_CSS, js=_JS)


def row_cells(row: OutlineRow) -> list[str]:
    """The tree's cells of one span (`COLUMNS`), as text: indented label, kind, outcome, duration, cost."""
    return ["  " * row.depth + row.label, row.kind, row.outcome, fmt.ms(row.duration_ms), row.cost]


def trace_tree(
    rows: list[OutlineRow], selected: str | None, *, key: str, on_pick: Callable[[str], None]
) -> None:
    """Draw the tree of `rows` with `selected` marked; `on_pick(span_id)` runs (before the rerun it
    causes) when a row is clicked or reached with the arrow keys."""
    ids = [r.span_id for r in rows]
    cells = [row_cells(r) for r in rows]

    def picked() -> None:
        state: Any = st.session_state.get(key)
        span_id = state.get("picked") if state is not None else None
        if span_id:
            on_pick(str(span_id))

    _TREE(
        key=key,
        data={
            "columns": list(COLUMNS),
            "rows": cells,
            "ids": ids,
            "version": f"{zlib.crc32(json.dumps([ids, cells]).encode()):08x}",
            "selected": ids.index(selected) if selected in ids else -1,
            "visible": VISIBLE_ROWS,
        },
        on_picked_change=picked,
    )
