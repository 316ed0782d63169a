"""The Trace page's tree as a small custom component: one HTML row per span that reads like a
timeline, a click (or an arrow key) selects it at once.

Each row: connector lines down the tree, an icon for how the span ended (failed, timed out, cut,
denied, fallback, retried, open), its label, kind, a bar on the trace's time scale, its duration,
tokens and cost (a loop's and a delegation's inclusive, labelled; the breakdown on hover). Rows a
search found are highlighted.

Streamlit's data grid sends a selection 150 ms after the click (a debounce in its frontend), half
of the time a span's detail may take; this component sends the picked span id on the click itself
(`setTriggerValue`), and marks the row at once. Rows already drawn stay when the new ones extend
them (a click only moves the mark; more rows are appended below). A big tree is sent a part at a
time: its last row says how many are not drawn yet, and a click on it, scrolling down to it or the
down arrow past the last row asks for the next part. The rows are drawn in parts of `PART_ROWS`,
each laid out by the browser only once scrolled near (`content-visibility: auto`), so a thousand
rows cost a first draw little more than a screenful. Every cell is set as text (never as HTML), so
a hostile span name is shown as written; lines, icons and bars are drawn by CSS on empty elements.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable
from typing import Any

import streamlit as st

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_outline import OutlineRow

COLUMNS = ("span", "timeline", "duration", "tokens in / out", "cost")
"""The tree's columns, in order (a span's kind is in its label, its bar's colour and its hover)."""
VISIBLE_ROWS = 12
"""Rows shown before the tree scrolls (the tree and its toolbar fit the top half of a 900 px window
below the header, and the selected span's detail beside it)."""
PART_ROWS = 50
"""Rows in each part of the tree the browser lays out on its own, only once scrolled near (a
thousand rows laid out at once were most of a big trace's first draw)."""
MAX_GUIDES = 24
"""Connector levels drawn at most (a hostile trace thousands deep is drawn at this depth, its depth
written in its kind cell's hover)."""
STATE_NAMES = {
    "failed": "failed",
    "timeout": "timed out",
    "cut": "cut by a budget",
    "denied": "denied",
    "fallback": "served by its fallback",
    "retried": "retried",
    "open": "open (no end yet)",
}
"""Each state with an icon, as its hover names it (a span that ended well has none)."""

_CSS = """
.tree { max-height: calc(var(--rows) * 1.7rem + 1.9rem); overflow: auto; outline: none; position: relative;
        border: 1px solid var(--st-border-color, rgba(49, 51, 63, 0.2)); border-radius: 0.5rem; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; font-size: 0.8125rem;
        font-family: var(--st-font, inherit); }
table.head { position: sticky; top: 0; z-index: 1; background: var(--st-background-color, #fff); }
.part { content-visibility: auto; contain-intrinsic-block-size: auto calc(var(--n) * 1.7rem); }
col.timeline { width: 17%; } col.duration { width: 4.4rem; } col.tokens { width: 6.6rem; }
col.cost { width: 6.6rem; }
th { text-align: left; font-weight: 400; opacity: 0.85;
     background: var(--st-secondary-background-color, #f0f2f6); }
th, td { padding: 0 0.45rem; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
         height: 1.7rem; line-height: 1.7rem; }
td.duration, td.tokens, td.cost, th.duration, th.tokens, th.cost { text-align: right; }
td.span { padding-left: 0.3rem; }
.g { display: inline-block; position: relative; width: 0.85rem; height: 1.7rem; vertical-align: top; }
.g.v::before, .g.t::before, .g.l::before { content: ''; position: absolute; left: 0.4rem; top: 0;
  border-left: 1px solid rgba(128, 128, 128, 0.6); height: 100%; }
.g.l::before { height: 50%; }
.g.t::after, .g.l::after { content: ''; position: absolute; left: 0.4rem; top: 50%; width: 0.45rem;
  border-top: 1px solid rgba(128, 128, 128, 0.6); }
.i { display: inline-block; width: 1.05rem; text-align: center; font-weight: 600; }
.i.failed::before { content: '✕'; color: #d32f2f; } .i.timeout::before { content: '◷'; color: #d32f2f; }
.i.denied::before { content: '⊘'; color: #d32f2f; } .i.cut::before { content: '✂'; color: #ef6c00; }
.i.fallback::before { content: '↪'; color: #ef6c00; } .i.retried::before { content: '↻'; color: #ef6c00; }
.i.open::before { content: '◌'; color: #7b1fa2; }
td.timeline { position: relative; }
.bar { position: absolute; top: 0.5rem; height: 0.7rem; min-width: 2px; border-radius: 2px;
       background: #90a4ae; }
.bar.loop, .bar.attempt { background: #1565c0; } .bar.delegation, .bar.transfer { background: #64b5f6; }
.bar.round { background: #8e7cc3; } .bar.bad { background: #d32f2f; } .bar.open { opacity: 0.45; }
tr.row, tr.more { cursor: pointer; }
tr.row:hover, tr.more:hover { background: var(--st-secondary-background-color, #f0f2f6); }
tr.row.hit { background: color-mix(in srgb, #fbc02d 28%, transparent); }
tr.row.on { background: color-mix(in srgb, var(--st-primary-color, #ff4b4b) 20%, transparent); }
tr.more td { opacity: 0.75; font-style: italic; }
"""

_JS = """
const BAD = new Set(['failed', 'timeout', 'denied']);
function cell(tr, cls, text) {
  const td = tr.insertCell();
  td.className = cls;
  if (text) { td.textContent = text; td.title = text; }
  return td;
}
function drawRow(body, row, at) {
  // row: [id, guides, state, label, kind, left %, width %, duration, tokens, cost, hover, hit, outcome]
  const [, guides, state, label, kind, left, width, duration, tokens, cost, hover, hit, outcome] = row;
  const tr = body.insertRow();
  tr.className = hit ? 'row hit' : 'row';
  tr.dataset.at = String(at);
  const span = cell(tr, 'span', '');
  for (const g of guides) {
    const el = document.createElement('span');
    el.className = 'g ' + g;
    span.appendChild(el);
  }
  const icon = document.createElement('span');
  icon.className = 'i ' + state;
  span.appendChild(icon);
  span.appendChild(document.createTextNode(label));
  span.title = label + ' (' + kind + ')' + (outcome ? ' · ' + outcome : '');
  const time = cell(tr, 'timeline', '');
  const bar = document.createElement('div');
  bar.className = 'bar ' + kind + (BAD.has(state) ? ' bad' : '') + (state === 'open' ? ' open' : '');
  bar.style.left = left + '%';
  bar.style.width = width + '%';
  time.title = duration;
  time.appendChild(bar);
  cell(tr, 'duration', duration);
  cell(tr, 'tokens', tokens).title = hover || tokens;
  cell(tr, 'cost', cost).title = hover || cost;
}
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
  // One key per row (all it shows): rows already drawn are kept when the new ones extend them
  // (more rows asked for, or a click: only the mark moves); else the tree is built anew.
  const keys = data.rows.map((row) => row.join('\\t'));
  const drawn = box.drawnKeys || [];
  const rebuilt = !box.firstChild || drawn.length > keys.length || drawn.some((key, at) => key !== keys[at]);
  const colgroup = () => {
    const cols = document.createElement('colgroup');
    for (const name of data.classes) cols.appendChild(document.createElement('col')).className = name;
    return cols;
  };
  if (rebuilt) {
    if (box.firstChild) box.scrollTop = 0;  // other rows (a search) start at the top
    const table = document.createElement('table');
    table.className = 'head';
    table.appendChild(colgroup());
    const head = table.createTHead().insertRow();
    data.columns.forEach((name, col) => {
      const th = document.createElement('th');
      th.textContent = name;
      th.className = data.classes[col];
      head.appendChild(th);
    });
    box.replaceChildren(table);
    box.drawnKeys = [];
    delete box.dataset.asked;  // other rows (a search, another trace): their next part not asked yet
  }
  box.querySelector('table.tail')?.remove();
  // Rows in parts of PART_ROWS, each its own table in a box the browser lays out only when it is
  // scrolled near (`content-visibility: auto`): 1,000 rows laid out at once took most of a big
  // trace's first draw; the columns line up as every table has the same fixed widths.
  let body = box.lastChild.querySelector('tbody');  // the last part's rows (none after the header)
  for (let at = box.drawnKeys.length; at < data.rows.length; at++) {
    if (at % data.part === 0) {
      const part = box.appendChild(document.createElement('div'));
      part.className = 'part';
      part.style.setProperty('--n', String(Math.min(data.part, data.rows.length - at)));  // its height unseen
      const table = part.appendChild(document.createElement('table'));
      table.appendChild(colgroup());
      body = table.createTBody();
    }
    drawRow(body, data.rows[at], at);
  }
  if (body) body.closest('.part').style.setProperty('--n', String(body.rows.length));  // a part extended
  box.drawnKeys = keys;
  const rows = Array.from(box.querySelectorAll('tr.row'));
  let more = null;
  if (data.more) {  // the rows not sent yet: asked for by a click on this row or by scrolling to it
    const tail = box.appendChild(document.createElement('table'));
    tail.className = 'tail';
    tail.appendChild(colgroup());
    more = tail.createTBody().insertRow();
    more.className = 'more';
    const td = more.insertCell();
    td.colSpan = data.columns.length;
    td.textContent = data.more;
  }
  const askMore = () => {
    if (!more || box.dataset.asked === String(rows.length)) return;
    box.dataset.asked = String(rows.length);  // once per length: the next rows are on their way
    // With a time: a value equal to the last one sent (the first rows again, after a search) is not sent.
    setTriggerValue('more', { drawn: rows.length, at: Date.now() });
  };
  const ids = data.rows.map((row) => row[0]);
  let current = data.selected;
  const mark = (at, scroll) => {
    for (const tr of box.querySelectorAll('tr.on')) tr.classList.remove('on');
    if (at < 0 || at >= rows.length) return;
    rows[at].classList.add('on');
    if (!scroll) return;
    // Within the tree only (the page itself never jumps), and in the next frame: reading where the
    // row is lays out the page, which while the page is still being drawn (its first draw) is a
    // whole layout done twice.
    requestAnimationFrame(() => {
      const row = rows[at];
      if (!row.isConnected) return;
      // The row's top within the rows (below the header), the part it is in being laid out now.
      const head = box.firstChild.offsetHeight;
      const top = row.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop - head;
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
    setTriggerValue('picked', ids[at]);
  };
  // Scrolled to when it changed or the rows did, not when more rows came below it (the reader
  // scrolled down for them).
  const id = current >= 0 ? ids[current] : '';
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
    const tail = more?.closest('table');
    if (tail && box.scrollTop + box.clientHeight >= tail.offsetTop - more.offsetHeight) askMore();
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

_CLASSES = ("span", "timeline", "duration", "tokens", "cost")
"""The class of each column's cells (`COLUMNS`, in order)."""

_TREE = st.components.v2.component("janux_trace_tree", css=_CSS, js=_JS)


def guides(rows: list[OutlineRow]) -> list[str]:
    """The connector lines before each row's label, one letter a level: `v` a line going on down,
    `t` a branch to this row with siblings below it, `l` the last branch, a space nothing. Read
    from each row's depth and `last` in tree order (a part of the tree draws as the whole would)."""
    going_on: list[bool] = []  # per level: a line continues down past the rows below this one
    out: list[str] = []
    for row in rows:
        depth = min(row.depth, MAX_GUIDES)
        del going_on[depth:]
        going_on.extend([False] * (depth - len(going_on)))
        if depth == 0:
            out.append("")
            continue
        lines = "".join("v" if on else " " for on in going_on[1:depth])
        out.append(lines + ("l" if row.last else "t"))
        going_on.append(not row.last)
    return out


def cost_cell(row: OutlineRow) -> str:
    """The cost cell: `$0.25` for a round, `$0.8750 incl.` for a loop or a delegation."""
    return f"{row.cost} {row.scope}" if row.scope and row.tokens else row.cost


def row_cells(row: OutlineRow) -> list[str]:
    """The text of each of the row's cells (`COLUMNS`; the timeline is a bar, no text)."""
    return [row.label, "", fmt.ms(row.duration_ms), row.tokens, cost_cell(row)]


def _bar(row: OutlineRow, total_ms: float) -> tuple[float, float]:
    """(left, width) of the row's bar, percent of the trace's duration (an open span to the end)."""
    if total_ms <= 0:
        return 0.0, 100.0
    left = min(max(row.offset_ms / total_ms * 100, 0.0), 100.0)
    length = total_ms - row.offset_ms if row.duration_ms is None else row.duration_ms
    return round(left, 3), round(min(max(length / total_ms * 100, 0.0), 100.0 - left), 3)


def _rows_data(rows: list[OutlineRow], total_ms: float, hits: Collection[str]) -> list[list[Any]]:
    """Each row as the component draws it (see `drawRow` in its script)."""
    out: list[list[Any]] = []
    for row, lines in zip(rows, guides(rows), strict=True):
        left, width = _bar(row, total_ms)
        label, _, duration, tokens, cost = row_cells(row)
        out.append([
            row.span_id, list(lines), row.state if row.state in STATE_NAMES else "", label, row.kind,
            left, width, duration, tokens, cost, row.breakdown, row.span_id in hits,
            " · ".join(x for x in (STATE_NAMES.get(row.state, ""), row.outcome) if x),
        ])  # fmt: skip
    return out


DRAWN_KEPT = 4
"""Trees whose rows, as sent to the browser, are kept between runs (`trace_tree`'s `version`)."""
_drawn: OrderedDict[Hashable, list[list[Any]]] = OrderedDict()
_drawn_lock = threading.Lock()


def _rows_kept(
    version: Hashable | None, rows: list[OutlineRow], total_ms: float, hits: Collection[str]
) -> list[list[Any]]:
    """`_rows_data`, kept by `version` (None: built every time): a click on a span reruns the tree
    with the same rows, 1,000 of them (20-50 ms to write again)."""
    if version is None:
        return _rows_data(rows, total_ms, set(hits))
    key = (version, total_ms, tuple(hits))
    with _drawn_lock:
        held = _drawn.get(key)
        if held is not None:
            _drawn.move_to_end(key)
            return held
    data = _rows_data(rows, total_ms, set(hits))
    with _drawn_lock:
        _drawn[key] = data
        while len(_drawn) > DRAWN_KEPT:
            _drawn.popitem(last=False)
    return data


def trace_tree(
    rows: list[OutlineRow],
    selected: str | None,
    *,
    key: str,
    on_pick: Callable[[str], None],
    total_ms: float = 0.0,
    hits: Collection[str] = (),
    more: str = "",
    on_more: Callable[[int], None] | None = None,
    version: Hashable | None = None,
) -> None:
    """Draw the tree of `rows` with `selected` marked, bars on a scale of `total_ms` (the trace's
    duration) and the rows of `hits` (span ids a search found) highlighted; `on_pick(span_id)` runs
    (before the rerun it causes) when a row is clicked or reached with the arrow keys. With `more`
    (the text of a last row saying what is not drawn yet), a click on that row, scrolling down to it
    or the down arrow on the last row runs `on_more(n)`, `n` being the rows drawn, before the rerun
    it causes. `version`: what the rows are (the same value, the same rows): their data is kept."""
    ids = [r.span_id for r in rows]

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
            "classes": list(_CLASSES),
            "rows": _rows_kept(version, rows, total_ms, hits),
            "selected": ids.index(selected) if selected in ids else -1,
            "visible": VISIBLE_ROWS,
            "part": PART_ROWS,
            "more": more if on_more is not None else "",
        },
        on_picked_change=picked,
        on_more_change=asked,
    )
