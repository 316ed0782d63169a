"""The Trace page at a glance in a real Chromium at 1440x900 (issue 31): the tree in the top half of
the window, a failed round's row with its icon and tokens, a search for an error message selecting
its span, "Errors only" leaving exactly the failed spans and their ancestors, and events that read
in a narrow pane. Served by `janux ui` on a store holding a small trace with a failed model round
and a 300-span synthetic one.
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
from janux.tracing.analysis import reconstruct
from janux.tracing.analysis.trace_outline import outline
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.records import STATUS_ERROR
from janux.tracing.sources.store import open_store
from janux.tracing.testing import synthetic_trace
from tests.dashboard.browser.test_dashboard_in_chromium import UI_WAIT_MS, WINDOW, _wait_for_ui
from tests.support.failed_round_trace import FAILED_TOKENS, STATUS_MESSAGE, failed_round_trace

IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
LABELS_JS = "cells => cells.map(td => td.textContent)"


@dataclass
class Served:
    url: str
    small: TraceView
    """The trace with a failed round."""
    big: TraceView
    """A 300-span synthetic trace."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data_dir: Path = tmp_path_factory.mktemp("trace-page-store")
    small, big = failed_round_trace(), synthetic_trace(300, seed=3)
    with open_store(data_dir) as store:
        store.write(small + big)
    port = free_port()
    server = launch_ui(data_dir, port=port, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_for_ui(url, 60)
        yield Served(url, reconstruct(small), reconstruct(big))
    finally:
        server.terminate()
        server.wait(timeout=30)


def _open(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator("tr.row").first).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.locator(IDLE)).to_have_count(1, timeout=UI_WAIT_MS)


def _failed_round(view: TraceView) -> str:
    return next(s.span_id for s in view.index.spans if s.status_message == STATUS_MESSAGE)


def _labels(page: Page) -> list[str]:
    labels: list[str] = page.locator("tr.row td.span").evaluate_all(LABELS_JS)
    return labels


def test_the_tree_starts_in_the_top_half_and_a_failed_round_shows_its_icon_and_tokens(
    served: Served, page: Page
) -> None:
    _open(page, f"{served.url}/trace?trace_id={served.big.trace_id}")
    first = page.locator("tr.row").first.bounding_box()
    assert first is not None and first["y"] + first["height"] <= WINDOW["height"] / 2, first
    # A dozen rows show without scrolling the page.
    bottoms: list[float] = page.locator("tr.row").evaluate_all(
        "trs => trs.map(tr => tr.getBoundingClientRect().bottom)"
    )
    assert sum(1 for bottom in bottoms if bottom <= WINDOW["height"]) >= 12
    _open(page, f"{served.url}/trace?trace_id={served.small.trace_id}")
    rows = [r for r in outline(served.small) if r.span_id == _failed_round(served.small)]
    at = [r.span_id for r in outline(served.small)].index(rows[0].span_id)
    row = page.locator("tr.row").nth(at)
    expect(row.locator("td.span")).to_have_text(rows[0].label)
    icon = row.locator(".i.failed")
    expect(icon).to_be_visible()
    assert icon.evaluate("el => getComputedStyle(el, '::before').content") == '"✕"'
    expect(row.locator("td.tokens")).to_have_text(f"{FAILED_TOKENS[0]:,} / {FAILED_TOKENS[1]:,}")
    expect(row.locator(".bar.bad")).to_be_visible()


def test_searching_an_error_message_selects_its_span(served: Served, page: Page) -> None:
    _open(page, f"{served.url}/trace?trace_id={served.small.trace_id}")
    search = page.get_by_label("Search this trace")
    search.fill("upstream returned 503")
    search.press("Enter")
    failed = _failed_round(served.small)
    expect(page).to_have_url(re.compile(f"span={failed}"), timeout=UI_WAIT_MS)
    expect(page.get_by_role("heading", name="chat gpt-4o-mini (round)")).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.locator("tr.row.on.hit")).to_have_count(1, timeout=UI_WAIT_MS)
    expect(page.locator("tr.row.hit")).to_have_count(1)
    matched = f"1 of {len(served.small.index.spans)} spans match."
    expect(page.get_by_text(matched, exact=False)).to_be_visible()


def test_errors_only_leaves_exactly_the_failed_spans_and_their_ancestors(served: Served, page: Page) -> None:
    view = served.small
    _open(page, f"{served.url}/trace?trace_id={view.trace_id}")
    assert len(_labels(page)) == len(view.index.spans)
    # Expected from the spans alone: every span that ended with status ERROR, and every span above.
    index, kept = view.index, set()
    for pos, span in enumerate(index.spans):
        while span.status_code == STATUS_ERROR and pos >= 0:
            kept.add(index.spans[pos].span_id)
            pos = index.parent[pos]
    expected = [r.label for r in outline(view) if r.span_id in kept]
    assert 2 < len(expected) < len(view.index.spans)
    page.get_by_text("Errors only", exact=True).click()
    expect(page.locator("tr.row")).to_have_count(len(expected), timeout=UI_WAIT_MS)
    assert _labels(page) == expected
    expect(page.locator("tr.row .i.failed")).to_have_count(2)


def test_handoff_events_read_one_name_a_line_in_the_detail(served: Served, page: Page) -> None:
    (delegation,) = served.small.delegations
    _open(page, f"{served.url}/trace?trace_id={served.small.trace_id}&span={delegation.tool_span_id}")
    events = page.locator(".tables table[data-name='events']")
    expect(events).to_be_visible(timeout=UI_WAIT_MS)
    lines_js = (
        "td => { const range = document.createRange(); range.selectNodeContents(td);"
        " return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size; }"
    )
    start = events.locator("td", has_text="HANDOFF_START").first
    assert start.evaluate(lines_js) == 1  # the name on one line, not one letter a line
    end = events.locator("td", has_text="HANDOFF_END").first
    assert end.evaluate(lines_js) == 1
