"""The three jobs of issue 19, done by single clicks in a real Chromium, in one tab and one session:
inspect a trace from the Traces list, audit a delegation's cost from the Costs page down to its loop,
explain a failed handoff from the Failures page. Every page passed must show the same numbers (read
from the stored spans by the analysis layer, the one rule every page uses).
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Locator, Page, expect

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.failures import decided_by
from janux.tracing.analysis.trace_outline import outline
from janux.tracing.analysis.trace_view import TraceView, reconstruct
from janux.tracing.sources.store import open_store
from tests.dashboard.browser.test_dashboard_in_chromium import (
    TABLE_HEADER_PX,
    TABLE_ROW_PX,
    UI_WAIT_MS,
    Served,
    _shot,
)
from tests.support.wait import wait_until


def outline_after(view: TraceView, span_id: str) -> str:
    """The span of the tree row below `span_id`'s."""
    ids = [r.span_id for r in outline(view)]
    return ids[ids.index(span_id) + 1]


def _views(served: Served) -> dict[str, TraceView]:
    with open_store(served.data_dir) as store:
        return {t.trace_id: reconstruct(store.get_trace(t.trace_id)) for t in served.traces}


IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
"""The app once its script (or fragment) has finished running."""
_HEADERS_JS = (
    "els => els.map(el => { const tr = el.querySelector('table tr');"
    " return tr ? [...tr.children].map(c => c.innerText) : []; })"
)
_ROWS_JS = "el => [...el.querySelectorAll('table tr')].map(tr => [...tr.children].map(c => c.innerText))"


def _table(page: Page, *headers: str, exact: bool = False) -> Locator:
    """The one data table whose header row holds `headers` (exactly these, with `exact`), once drawn."""
    tables = page.locator("[data-testid='stDataFrame']")

    def found() -> tuple[int] | None:  # a tuple: the first table (0) is found too
        heads: Any = tables.evaluate_all(_HEADERS_JS)
        wanted = set(headers)
        hits = [i for i, head in enumerate(heads) if (set(head) == wanted if exact else wanted <= set(head))]
        return (hits[0],) if len(hits) == 1 else None

    (at,) = wait_until(found, timeout_s=UI_WAIT_MS / 1000, interval_s=0.1, what=f"one table with {headers}")
    return tables.nth(at)


def _rows(table: Locator) -> list[list[str]]:
    """Cell texts of a table, read from the grid's accessible copy of its cells (header row first)."""
    rows: Any = table.evaluate(_ROWS_JS)
    return [[str(cell) for cell in row] for row in rows]


def _row_of(table: Locator, column: str, wanted: Any) -> int:
    """Position (0 = first data row) of the first row whose `column` cell satisfies `wanted`."""
    rows = _rows(table)
    at = rows[0].index(column)
    return next(i for i, row in enumerate(rows[1:]) if wanted(row[at]))


def _click_row(page: Page, table: Locator, row: int) -> None:
    """One click on a cell of the row (the grid is a canvas: click where the row is drawn)."""
    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    assert box is not None
    y = box["y"] + TABLE_HEADER_PX + TABLE_ROW_PX * row + TABLE_ROW_PX / 2
    assert y < box["y"] + box["height"], "the row is not in the table's visible part"
    page.mouse.click(box["x"] + 150, y)


def _click_tree_row(page: Page, label: str) -> None:
    """One click on the tree's row of the span labelled `label` (the tree is HTML: its rows are
    elements, `janux.dashboard.ui.trace_tree`)."""
    cells = page.locator("tr.row td.span")
    expect(cells.first).to_be_visible(timeout=UI_WAIT_MS)

    def at() -> tuple[int] | None:
        texts: Any = cells.evaluate_all("els => els.map(el => el.textContent.trim())")
        return (texts.index(label),) if label in texts else None

    (row,) = wait_until(at, timeout_s=UI_WAIT_MS / 1000, interval_s=0.1, what=f"tree row {label}")
    page.locator("tr.row").nth(row).click()


def _metric(page: Page, label: str) -> Locator:
    label_text = page.get_by_text(label, exact=True)
    return page.locator("[data-testid='stMetric']").filter(has=label_text).first


def _heading(page: Page, name: str) -> None:
    """The page `name` is drawn and its script has finished: what the script writes last (the URL's
    query parameters, a browser history entry) is written before the test clicks on, or goes Back."""
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.locator("[data-testid='stApp'][data-test-script-state='notRunning']")).to_have_count(
        1, timeout=UI_WAIT_MS
    )
    expect(page.locator("[data-testid='stException']")).to_have_count(0)


def _detail_value(page: Page, label: str) -> str:
    """A value of the selected span's detail panel (the facts table beside the tree, drawn by
    `janux.dashboard.ui.text_tables`), once drawn."""

    script = "trs => trs.map(tr => [...tr.children].map(c => c.innerText.trim()))"

    def value() -> str | None:
        if page.locator(IDLE).count() == 0:
            return None  # still drawing: a value now may be the previous span's
        rows: Any = page.locator(".tables table[data-name='facts'] tr").evaluate_all(script)
        return next((str(row[1]) for row in rows if len(row) > 1 and row[0] == label), None)

    return wait_until(value, timeout_s=UI_WAIT_MS / 1000, interval_s=0.1, what=f"{label} in the span detail")


def test_inspect_a_trace_from_the_list_and_come_back(served: Served, page: Page) -> None:
    views = _views(served)
    retried = next(v for v in views.values() if any(len(d.attempts) == 2 for d in v.delegations))
    d = next(d for d in retried.delegations if len(d.attempts) == 2)
    first = d.attempts[0]
    page.goto(f"{served.url}/?agent=triage")
    _heading(page, "Traces")
    listed = page.get_by_text("traces match", exact=False)
    expect(listed).to_be_visible(timeout=UI_WAIT_MS)
    count_text = listed.inner_text()
    traces = _table(page, "conversation", "checks")
    conversation = next(n.conversation_id for n in retried.nodes if n.conversation_id)
    _click_row(page, traces, _row_of(traces, "conversation", lambda cell: cell == conversation))
    # One click: the Trace page, in this tab, with the header of this trace.
    _heading(page, "Trace")
    expect(page).to_have_url(re.compile(f"trace_id={retried.trace_id}"))
    assert len(page.context.pages) == 1
    expect(_metric(page, "Attempts")).to_contain_text("2")
    expect(_metric(page, "Total cost")).to_contain_text(fmt.usage_cost(retried.total))
    header = page.locator("[data-testid='stMain'] [data-testid='stCaptionContainer']").first  # the header
    expect(header).to_contain_text(f"conversation {conversation}")
    # The tree beside the detail: one click on the failed attempt shows why it failed.
    label = f"attempt 1/2 · {d.target}"
    _click_tree_row(page, label)
    expect(page.get_by_role("heading", name=f"{label} (attempt)")).to_be_visible(timeout=UI_WAIT_MS)
    expect(page).to_have_url(re.compile(f"span={first.span_id}"))
    outcome = outcomes.attempt_outcome(first)
    assert outcome.startswith("failed: ")
    assert _detail_value(page, "outcome") == outcome
    assert _detail_value(page, "duration") == fmt.ms(first.duration_ms)  # the attempt's own, not 22 ms
    expect(page.get_by_text("upstream returned 503", exact=False).first).to_be_visible()
    _shot(page, "trace")
    # The arrow keys move the selection: down from the failed attempt is its model round.
    page.keyboard.press("ArrowDown")
    below = next(r for r in outline(retried) if r.span_id == outline_after(retried, first.span_id))
    expect(page.get_by_role("heading", name=f"{below.label} ({below.kind})")).to_be_visible(
        timeout=UI_WAIT_MS
    )
    # A click on a loop of the graph, on a handoff (its diamond), then on a bar of the waterfall,
    # selects that span too.
    second = d.attempts[1]
    page.get_by_role("tab", name="Graph", exact=True).click()
    expect(page).to_have_url(re.compile("trace_view_tab=Graph"))
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    chart.locator(f"[aria-label*='kind: loop'][aria-label*='span_id: {second.span_id}']").first.click()
    expect(page.get_by_role("heading", name=f"attempt 2/2 · {d.target} (attempt)")).to_be_visible(
        timeout=UI_WAIT_MS
    )
    expect(page).to_have_url(re.compile(f"span={second.span_id}"))
    # A retried delegation's diamond is its attempt's: the red "attempt 1/2" one selects attempt 1.
    chart.locator(f"[aria-label*='kind: handoff'][aria-label*='span_id: {first.span_id}']").first.click()
    expect(page.get_by_role("heading", name=f"{label} (attempt)")).to_be_visible(timeout=UI_WAIT_MS)
    expect(page).to_have_url(re.compile(f"span={first.span_id}"))
    assert d.tool_span_id is not None
    tool_row = next(r for r in outline(retried) if r.span_id == d.tool_span_id)
    page.get_by_role("tab", name="Waterfall", exact=True).click()
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    chart.locator(f"[aria-label*='span_id: {d.tool_span_id}']").first.click()
    expect(page.get_by_role("heading", name=f"{tool_row.label} ({tool_row.kind})")).to_be_visible(
        timeout=UI_WAIT_MS
    )
    expect(page).to_have_url(re.compile(f"span={d.tool_span_id}"))
    # Back to the list as it was left: the in-page link, then the browser's Back button.
    page.get_by_role("link", name="← Traces").click()
    _heading(page, "Traces")
    expect(page).to_have_url(re.compile("agent=triage"))
    expect(page.get_by_text(count_text, exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    traces = _table(page, "conversation", "checks")
    _click_row(page, traces, _row_of(traces, "conversation", lambda cell: cell == conversation))
    _heading(page, "Trace")
    page.go_back()
    _heading(page, "Traces")
    expect(page).to_have_url(re.compile("agent=triage"))
    expect(page.get_by_text(count_text, exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    assert len(page.context.pages) == 1


def test_audit_a_delegation_cost_from_the_costs_page_to_its_loop(served: Served, page: Page) -> None:
    views = _views(served)
    priced = [(v, d) for v in views.values() for d in v.delegations if d.cost.total_cost is not None]
    view, costliest = max(priced, key=lambda pair: pair[1].cost.total_cost or 0.0)
    # The Costs page's sections are tabs one can link to.
    page.goto(f"{served.url}/costs?costs_section=Inclusive+%26+costliest+delegations")
    _heading(page, "Costs")
    top = _table(page, "delegation tool", "inclusive cost USD")
    rows = _rows(top)
    assert float(rows[1][rows[0].index("inclusive cost USD")]) == costliest.cost.total_cost
    _click_row(page, top, 0)
    _heading(page, "Trace")
    expect(page).to_have_url(re.compile(f"trace_id={view.trace_id}.*span={costliest.tool_span_id}"))
    assert len(page.context.pages) == 1
    # The delegation, then the loop it ran: the same money on each.
    assert _detail_value(page, "cost carried") == fmt.usage_cost(costliest.cost)
    attempt = costliest.attempts[-1]
    loop = view.nodes[attempt.node]
    label = f"attempt {attempt.number}/{costliest.attempt_count} · {costliest.target}"
    _click_tree_row(page, label)
    expect(page.get_by_role("heading", name=f"{label} (attempt)")).to_be_visible(timeout=UI_WAIT_MS)
    assert _detail_value(page, "inclusive cost") == fmt.usage_cost(loop.inclusive)
    assert _detail_value(page, "own cost") == fmt.usage_cost(loop.own)
    if len(costliest.attempts) == 1:
        assert fmt.usage_cost(loop.inclusive) == fmt.usage_cost(costliest.cost)
    _shot(page, "trace-cost-audit")
    page.get_by_role("link", name="← Costs").click()
    _heading(page, "Costs")


def test_explain_a_failed_handoff_from_the_failures_page(served: Served, page: Page) -> None:
    views = _views(served)
    failure = next(f for v in views.values() for f in v.failures if f.kind == "failed")
    delegation = views[failure.trace_id].delegations[failure.delegation or 0]
    page.goto(f"{served.url}/failures")
    _heading(page, "Failures")
    table = _table(page, "final status", "error")
    rows = _rows(table)
    at = _row_of(table, "kind", lambda cell: cell == "failed")
    row = rows[at + 1]
    assert row[rows[0].index("reason")] == failure.reason
    assert row[rows[0].index("error")] == failure.error  # the whole message, not cut
    assert row[rows[0].index("attempts")] == str(failure.attempts)
    _shot(page, "failures")
    _click_row(page, table, at)
    _heading(page, "Failed handoff")
    expect(page).to_have_url(re.compile(f"trace_id={failure.trace_id}.*span_id={failure.span_id}"))
    assert len(page.context.pages) == 1
    expect(_metric(page, "Attempts")).to_contain_text(str(failure.attempts))
    # The banner says what decided it, as the one rule words it (error type and message).
    decision = decided_by(delegation)
    assert decision is not None
    expect(page.get_by_text(decision.text, exact=True)).to_be_visible()
    page.get_by_role("button", name="Open the whole trace ›").click()
    _heading(page, "Trace")
    expect(page).to_have_url(re.compile(f"span={failure.span_id}"))
    assert _detail_value(page, "attempts") == str(delegation.attempt_count)
    assert _detail_value(page, "outcome").startswith(delegation.status)
    assert len(page.context.pages) == 1
    page.get_by_role("link", name="← Failures").click()
    _heading(page, "Failures")


def test_trace_header_copies_its_id_without_a_code_block(served: Served, page: Page) -> None:
    """The header's Copy button puts the trace id on the clipboard; the page draws no `st.code`
    for it (its syntax highlighter cost the browser 0.3-0.9 s of CPU on a big trace's first visit)."""
    trace_id = served.traces[0].trace_id
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served.url)
    page.goto(f"{served.url}/trace?trace_id={trace_id}")
    _heading(page, "Trace")
    copy = page.get_by_role("button", name="Copy trace id")
    expect(copy).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_text(trace_id, exact=True)).to_be_visible()
    copy.click()
    expect(copy).to_have_text("Copied", timeout=UI_WAIT_MS)
    assert page.evaluate("() => navigator.clipboard.readText()") == trace_id
    expect(page.locator("[data-testid='stCode']")).to_have_count(0)
