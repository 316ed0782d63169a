"""Small text tables, several in one element: a small custom component for the span detail.

The Trace page showed the selected span's facts, budget, attributes and events as one `st.table`
each, with a caption element between them. `st.table` sends Arrow data, and the browser loads
Streamlit's table and Arrow scripts for it on the page's first draw: on a 10,000-span trace's first
visit, the detail was about a quarter of the browser's work. This component draws the same tables
from JSON with the script the tree's component already loads, as one element. Every cell and
caption is set as text (never as HTML). Columns stay readable in a narrow pane: a name breaks only
after a dot or a slash (`HANDOFF_START` stays whole, never one letter a line), and a value longer than
`LONG_CHARS` shows its start with "show all" to open the whole of it in place.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass

import pandas as pd
import streamlit as st

_CSS = """
.tables { font-family: var(--st-font, inherit); font-size: 0.875rem; }
p { margin: 0.75rem 0 0.25rem; opacity: 0.65; }
table { border-collapse: collapse; width: 100%; }
th { text-align: left; font-weight: 400; opacity: 0.75; }
th, td { padding: 0.3rem 0.5rem; vertical-align: top; white-space: pre-wrap; overflow-wrap: break-word;
         border-bottom: 1px solid var(--st-border-color, rgba(49, 51, 63, 0.2)); }
td:first-child { opacity: 0.8; max-width: 40%; }
td:last-child { overflow-wrap: anywhere; }
td.first { border-top: 1px solid var(--st-border-color, rgba(49, 51, 63, 0.45)); }
button.all { font: inherit; font-size: 0.8rem; margin-left: 0.3rem; padding: 0 0.35rem; cursor: pointer;
             border: 1px solid var(--st-border-color, rgba(49, 51, 63, 0.2)); border-radius: 0.3rem;
             background: transparent; color: inherit; }
"""

_JS = """
const LONG = %d;
// A name breaks after `.` or `/` only (an empty <wbr> between its parts: the text stays whole).
function words(parent, text) {
  const parts = text.split(/(?<=[.\\/])/);
  parts.forEach((part, at) => {
    if (at) parent.appendChild(document.createElement('wbr'));
    parent.appendChild(document.createTextNode(part));
  });
}
// A long value: its start, and a button that shows all of it in place (and its start again).
function fill(td, text) {
  if (text.length <= LONG) { words(td, text); return; }
  // A value the server cut ends with `… [N more characters]`: that note stays in sight.
  const note = (text.match(/… \\[[\\d,]+ more characters\\]$/) || [''])[0];
  const start = text.slice(0, LONG) + '…' + (note ? ' ' + note.slice(2) : '');
  const shown = document.createElement('span');
  shown.textContent = start;
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'all';
  const all = 'show all ' + text.length.toLocaleString('en-US') + ' characters';
  button.textContent = all;
  button.onclick = () => {
    const open = button.dataset.open === '1';
    shown.textContent = open ? start : text;
    button.dataset.open = open ? '0' : '1';
    button.textContent = open ? all : 'show less';
  };
  td.append(shown, button);
}
export default function (component) {
  const { data, parentElement } = component;
  let box = parentElement.querySelector('.tables');
  if (!box) {
    box = document.createElement('div');
    box.className = 'tables';
    parentElement.appendChild(box);
  }
  if (box.dataset.drawn === data.version) return;
  const parts = [];
  for (const block of data.blocks) {
    if (block.caption) {
      const p = document.createElement('p');
      p.textContent = block.caption;
      parts.push(p);
    }
    if (!block.columns.length) continue;
    const table = document.createElement('table');
    table.dataset.name = block.name;
    const head = table.createTHead().insertRow();
    for (const name of block.columns) {
      const th = document.createElement('th');
      th.textContent = name;
      head.appendChild(th);
    }
    const body = table.createTBody();
    for (const cells of block.rows) {
      const tr = body.insertRow();
      for (const text of cells) fill(tr.insertCell(), text);
      if (cells[0] && block.grouped) tr.cells[0].className = 'first';  // an event's first row
    }
    parts.push(table);
  }
  box.replaceChildren(...parts);
  box.dataset.drawn = data.version;
}
"""

LONG_CHARS = 300
"""Characters of a value shown before its "show all" button."""

_TABLES = st.components.v2.component("janux_text_tables", css=_CSS, js=_JS.replace("%d", str(LONG_CHARS), 1))


@dataclass(slots=True)
class TextTable:
    """One table of `text_tables`: a caption above it and its rows of text (no rows: only the caption)."""

    name: str
    """What the table holds (`facts`, `attributes`): its `data-name` in the page, for tests."""
    caption: str
    """The line above the table ("" for none)."""
    frame: pd.DataFrame | None = None
    """The table; its cells are shown as text. None: the caption alone."""
    grouped: bool = False
    """Rows come in groups, each group's first row with a first cell, the others with "" there (an
    event and its attributes): a line above each group."""


def text_tables(tables: list[TextTable], *, key: str) -> None:
    """Draw `tables` one below the other, as one element."""
    blocks = []
    for table in tables:
        frame = table.frame if table.frame is not None else pd.DataFrame()
        blocks.append(
            {
                "name": table.name,
                "caption": table.caption,
                "columns": [str(c) for c in frame.columns],
                "rows": [[str(v) for v in row] for row in frame.itertuples(index=False)],
                "grouped": table.grouped,
            }
        )
    version = f"{zlib.crc32(json.dumps(blocks).encode()):08x}"
    _TABLES(key=key, data={"blocks": blocks, "version": version})
