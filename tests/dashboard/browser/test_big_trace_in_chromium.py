"""A big trace's Trace page in a real Chromium: what its first draw leaves out arrives when asked for.

The tree is sent a part at a time (its first `FIRST_ROWS` rows, then `MORE_ROWS` more when its last
row is scrolled to or clicked), and the sections below the explorer are drawn only once one is
chosen. Served by `janux ui` on a store holding one synthetic trace.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from janux.cli.commands.ui import free_port, launch_ui
from janux.dashboard.ui.trace_explorer import FIRST_ROWS, MORE_ROWS
from janux.dashboard.ui.trace_tree import PART_ROWS, row_cells
from janux.tracing.analysis import reconstruct
from janux.tracing.analysis.trace_outline import OutlineRow, outline
from janux.tracing.analysis.trace_search import matches, with_ancestors
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.sources.store import open_store
from janux.tracing.testing import synthetic_trace
from tests.dashboard.browser.test_dashboard_in_chromium import UI_WAIT_MS, _wait_for_ui
from tests.support.wait import wait_until

SPANS = 3_500
"""Enough for the tree's first part and two more (`FIRST_ROWS`, `MORE_ROWS`), and for a search's two parts."""
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


@dataclass
class BigTrace:
    url: str
    """The Trace page of the big trace."""
    rows: list[OutlineRow]
    """Its tree rows, in order."""
    view: TraceView
    """The trace, rebuilt."""


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BigTrace]:
    data_dir: Path = tmp_path_factory.mktemp("big-store")
    spans = synthetic_trace(SPANS, seed=19)
    with open_store(data_dir) as store:
        store.write(spans)
    port = free_port()
    server = launch_ui(data_dir, port=port, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_for_ui(url, 60)
        view = reconstruct(spans)
        yield BigTrace(f"{url}/trace?trace_id={spans[0].trace_id}", outline(view), view)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _drawn(page: Page) -> list[str]:
    """The tree's rows as drawn, each as its cells' text joined by tabs."""
    texts: list[str] = page.locator("tr.row").evaluate_all(
        "trs => trs.map(tr => [...tr.cells].map(td => td.textContent).join('\\t'))"
    )
    return texts


def _expected(rows: list[OutlineRow]) -> list[str]:
    return ["\t".join(row_cells(r)) for r in rows]


def test_big_tree_sends_its_first_rows_and_the_next_when_scrolled_to_or_clicked(
    big_trace: BigTrace, page: Page
) -> None:
    page.goto(big_trace.url)
    rows = page.locator("tr.row")
    expect(rows.first).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.locator(IDLE)).to_have_count(1, timeout=UI_WAIT_MS)
    assert _drawn(page) == _expected(big_trace.rows[:FIRST_ROWS])
    # The selected span's detail is plain text tables: no table or grid element (and its scripts)
    # on the first draw.
    expect(page.locator(".tables table[data-name='facts']")).to_be_visible()
    expect(
        page.locator("[data-testid='stMain'] :is([data-testid='stTable'], [data-testid='stDataFrame'])")
    ).to_have_count(0)
    more = page.locator("tr.more")
    expect(more).to_have_text(
        f"{MORE_ROWS:,} more of {len(big_trace.rows) - FIRST_ROWS:,} not drawn yet: click or scroll here"
    )
    expect(page.locator("tr.row.on")).to_have_count(1)  # the selected span (the first) is marked
    # Scrolled to the bottom of the tree's box: the next MORE_ROWS rows, below the ones drawn; the
    # box stays where the reader scrolled (not back up to the selected row).
    page.locator(".tree").evaluate("box => { box.scrollTop = box.scrollHeight; }")
    expect(rows).to_have_count(FIRST_ROWS + MORE_ROWS, timeout=UI_WAIT_MS)
    assert _drawn(page) == _expected(big_trace.rows[: FIRST_ROWS + MORE_ROWS])
    assert page.locator(".tree").evaluate("box => box.scrollTop") > 0
    # A click on the last row asks for the next part too.
    more.click()
    expect(rows).to_have_count(FIRST_ROWS + 2 * MORE_ROWS, timeout=UI_WAIT_MS)
    assert _drawn(page) == _expected(big_trace.rows[: FIRST_ROWS + 2 * MORE_ROWS])
    expect(page.locator("tr.row.on")).to_have_count(1)
    expect(page.locator(IDLE)).to_have_count(1, timeout=UI_WAIT_MS)  # the part's run has ended
    # A row that came later selects its span like any other.
    label = big_trace.rows[FIRST_ROWS + MORE_ROWS + 5]
    rows.nth(FIRST_ROWS + MORE_ROWS + 5).click()
    expect(page).to_have_url(re.compile(f"span={label.span_id}"), timeout=UI_WAIT_MS)
    expect(page.get_by_role("heading", name=f"{label.label} ({label.kind})")).to_be_visible(
        timeout=UI_WAIT_MS
    )


def test_sections_below_the_explorer_are_drawn_once_chosen(big_trace: BigTrace, page: Page) -> None:
    page.goto(big_trace.url)
    expect(page.locator("tr.row").first).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.locator(IDLE)).to_have_count(1, timeout=UI_WAIT_MS)
    tables = page.locator("[data-testid='stMain'] [data-testid='stDataFrame']")
    expect(tables).to_have_count(0)
    page.get_by_role("radio", name="Delegations & attempts").click()
    expect(page).to_have_url(re.compile(r"trace_section=Delegations"), timeout=UI_WAIT_MS)
    expect(tables.first).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_text("Attempts of", exact=True)).to_be_visible()
    # A second click closes it again.
    page.get_by_role("radio", name="Delegations & attempts").click()
    expect(tables).to_have_count(0, timeout=UI_WAIT_MS)
    expect(page).not_to_have_url(re.compile("trace_section="))
    # A link naming a section opens the page with it drawn.
    page.goto(f"{big_trace.url}&trace_section=Checks")
    expect(tables.first).to_be_visible(timeout=UI_WAIT_MS)


def test_a_link_to_a_span_far_down_opens_the_tree_scrolled_to_it(big_trace: BigTrace, page: Page) -> None:
    """The tree holds the rows down to the linked span, marks it and scrolls its box (not the page)
    to it."""
    far = big_trace.rows[FIRST_ROWS + 150]
    page.goto(f"{big_trace.url}&span={far.span_id}")
    expect(page.get_by_role("heading", name=f"{far.label} ({far.kind})")).to_be_visible(timeout=UI_WAIT_MS)
    marked = page.locator("tr.row.on")
    expect(marked).to_have_count(1, timeout=UI_WAIT_MS)
    assert marked.evaluate("tr => tr.dataset.at") == str(FIRST_ROWS + 150)
    box = page.locator(".tree")

    def in_box() -> bool:
        inside: bool = box.evaluate(
            "box => { const row = box.querySelector('tr.row.on').getBoundingClientRect();"
            " const view = box.getBoundingClientRect();"
            " return box.scrollTop > 0 && row.top >= view.top && row.bottom <= view.bottom; }"
        )
        return inside

    wait_until(in_box, timeout_s=UI_WAIT_MS / 1000, what="the linked span's row scrolled into the tree's box")


def test_a_search_draws_its_first_rows_and_the_next_on_scroll(big_trace: BigTrace, page: Page) -> None:
    """After more rows of the whole tree, a search's rows come a part at a time too (the tree asks
    again for the next part of the new rows, even of the length it last asked at)."""
    page.goto(big_trace.url)
    rows = page.locator("tr.row")
    expect(rows).to_have_count(FIRST_ROWS, timeout=UI_WAIT_MS)
    box = page.locator(".tree")
    box.evaluate("box => { box.scrollTop = box.scrollHeight; }")
    expect(rows).to_have_count(FIRST_ROWS + MORE_ROWS, timeout=UI_WAIT_MS)
    hits = {r.span_id for r in big_trace.rows if matches(big_trace.view, r, "chat")}
    found = with_ancestors(big_trace.view, big_trace.rows, hits)  # the rows found and those above them
    assert len(found) > FIRST_ROWS + MORE_ROWS
    search = page.get_by_label("Search this trace")
    search.fill("chat")
    search.press("Enter")
    matched = f"{len(hits):,} of {len(big_trace.rows):,} spans match."
    expect(page.get_by_text(matched, exact=False)).to_be_visible(timeout=UI_WAIT_MS)
    expect(rows).to_have_count(FIRST_ROWS, timeout=UI_WAIT_MS)
    assert _drawn(page) == _expected(found[:FIRST_ROWS])
    box.evaluate("box => { box.scrollTop = box.scrollHeight; }")
    expect(rows).to_have_count(FIRST_ROWS + MORE_ROWS, timeout=UI_WAIT_MS)
    assert _drawn(page) == _expected(found[: FIRST_ROWS + MORE_ROWS])


def test_big_trace_header_figures_are_never_cut(big_trace: BigTrace, page: Page) -> None:
    """Hundreds of thousands of tokens in and out still read whole in the header (issue 19, item 5),
    now a caption of two lines (issue 31) that wraps, never cuts."""
    page.goto(big_trace.url)
    expect(page.locator("tr.row").first).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.locator(IDLE)).to_have_count(1, timeout=UI_WAIT_MS)
    total = big_trace.view.total
    header = page.locator("[data-testid='stCaptionContainer']").filter(has_text="tokens").first
    expect(header).to_contain_text(f"tokens {total.input_tokens:,} in / {total.output_tokens:,} out")
    cut: bool = header.evaluate("el => el.scrollWidth > el.clientWidth + 1")
    assert not cut


def test_rows_far_below_the_view_are_left_unlaid_until_scrolled_near(big_trace: BigTrace, page: Page) -> None:
    """Of the first `FIRST_ROWS` rows drawn, those far below the tree's box are not laid out (their
    part is skipped by the browser) until the box scrolls to them; every part's columns line up
    with the header's."""
    page.goto(big_trace.url)
    rows = page.locator("tr.row")
    expect(rows).to_have_count(FIRST_ROWS, timeout=UI_WAIT_MS)
    expect(page.locator(IDLE)).to_have_count(1, timeout=UI_WAIT_MS)
    laid_out = "tr => tr.checkVisibility({ contentVisibilityAuto: true })"
    far = rows.nth(FIRST_ROWS - 1 - PART_ROWS // 2)
    assert rows.first.evaluate(laid_out) is True
    assert far.evaluate(laid_out) is False
    far.scroll_into_view_if_needed()
    wait_until(lambda: far.evaluate(laid_out), timeout_s=UI_WAIT_MS / 1000, what="the far row laid out")
    lefts = "tr => [...tr.cells].map(td => Math.round(td.getBoundingClientRect().left))"
    header = page.locator(".tree table.head tr").evaluate(lefts)
    assert far.evaluate(lefts) == header
    page.locator(".tree").evaluate("box => { box.scrollTop = 0; }")
    assert rows.first.evaluate(lefts) == header


def test_a_click_in_the_tree_reruns_only_the_detail(big_trace: BigTrace, page: Page) -> None:
    """A click on a row of the 1,000-row tree brings back the span's detail, never the tree's rows
    again (the tree marks the row itself; only the detail pane's fragment reruns): what the page
    receives after the click is less than the text of the rows it draws."""
    received: list[int] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda frame: received.append(len(frame))))
    page.goto(big_trace.url)
    rows = page.locator("tr.row")
    expect(rows).to_have_count(FIRST_ROWS, timeout=UI_WAIT_MS)
    expect(page.locator(IDLE)).to_have_count(1, timeout=UI_WAIT_MS)
    rows_text = sum(len(text) for text in _drawn(page))
    target = big_trace.rows[7]
    received.clear()
    rows.nth(7).click()
    expect(page).to_have_url(re.compile(f"span={target.span_id}"), timeout=UI_WAIT_MS)
    expect(page.get_by_role("heading", name=f"{target.label} ({target.kind})")).to_be_visible(
        timeout=UI_WAIT_MS
    )
    expect(page.locator(IDLE)).to_have_count(1, timeout=UI_WAIT_MS)
    marked = page.locator("tr.row.on")
    expect(marked).to_have_count(1)
    assert marked.evaluate("tr => tr.dataset.at") == "7"
    assert rows.count() == FIRST_ROWS
    assert 0 < sum(received) < rows_text, (sum(received), rows_text)
