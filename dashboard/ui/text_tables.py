"""Small text tables, several in one element: a small custom component for the span detail.

The Trace page showed the selected span's facts, budget, attributes and events as one `st.table`
each, with a caption element between them. `st.table` sends Arrow data, and the browser loads
Streamlit's table and Arrow scripts for it on the page's first draw: on a 10,000-span trace's first
visit, the detail was about a quarter of the browser's work. This component draws the same tables
from JSON with the script the tree's component already loads, as one element. Every cell and
caption is set as text (never as HTML), wrapped when long, never cut.
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
th, td { padding: 0.3rem 0.5rem; vertical-align: top; white-space: pre-wrap; overflow-wrap: anywhere;
         border-bottom: 1px solid var(--st-border-color, rgba(49, 51, 63, 0.2)); }
td:first-child { opacity: 0.8; }
"""

_JS = """
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
      for (const text of cells) tr.insertCell().textContent = text;
    }
    parts.push(table);
  }
  box.replaceChildren(...parts);
  box.dataset.drawn = data.version;
}
"""

_TABLES = st.components.v2.component("janux_text_tables", css=_CSS, js=_JS)


@dataclass(slots=True)
class TextTable:
    """One table of `text_tables`: a caption above it and its rows of text (no rows: only the caption)."""

    name: str
    """What the table holds (`facts`, `attributes`): its `data-name` in the page, for tests."""
    caption: str
    """The line above the table ("" for none)."""
    frame: pd.DataFrame | None = None
    """The table; its cells are shown as text. None: the caption alone."""


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
            }
        )
    version = f"{zlib.crc32(json.dumps(blocks).encode()):08x}"
    _TABLES(key=key, data={"blocks": blocks, "version": version})
