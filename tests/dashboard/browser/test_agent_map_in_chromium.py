"""The agent map, the cost pictures and the failed-handoff screen in a real Chromium, on `janux serve --demo`.

Reuses the served demo, browser and page fixtures of `test_dashboard_in_chromium` (conftest.py).
Its screenshots are the README's (docs/screenshots/agent-map*.png, costs-*.png, handoff.png).
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from tests.dashboard.browser.test_dashboard_in_chromium import UI_WAIT_MS, Served, _open, _shot, cut_metrics


def test_agent_map_node_and_edge_click_through(served: Served, page: Page) -> None:
    with open_store(served.data_dir) as store:
        agent_map = store.agent_map(TraceFilter())
    edge = agent_map.edge("triage", "researcher")
    assert edge is not None and edge.failed
    _open(page, f"{served.url}/agent-map", "Agent map")
    graph = page.locator("[data-testid='stVegaLiteChart'] svg")
    expect(graph.get_by_text("researcher", exact=True).first).to_be_visible(timeout=UI_WAIT_MS)
    expect(graph.get_by_text(f"{edge.count}× · {edge.failure_rate:.1%} failed").first).to_be_visible()
    _shot(page, "agent-map")
    # One click on an agent's dot, then on an edge's diamond, inspects it (as the selector would).
    expect(page.get_by_text("Newest traces of triage", exact=False)).to_be_visible(timeout=UI_WAIT_MS)
    assert cut_metrics(page) == []  # "$0.0348", "+ 415 unpriced tokens" below it: never "$0.0348 + …"
    graph.locator("[aria-label*='inspect: agent: fact_checker']").first.click()
    expect(page.get_by_text("Newest traces of fact_checker", exact=False)).to_be_visible(timeout=UI_WAIT_MS)
    expect(page).to_have_url(re.compile("select=agent"))
    graph.locator("[aria-label*='inspect: edge: triage → researcher (delegate)']").first.click()
    expect(page.get_by_role("heading", name="Newest failures")).to_be_visible(timeout=UI_WAIT_MS)
    page.get_by_role("heading", name="Newest failures").evaluate("e => e.scrollIntoView({block: 'center'})")
    _shot(page, "agent-map-edge")
    # Same tab, same session: the Failures page narrowed to the edge.
    page.get_by_role("button", name="All failures of this edge ›").first.click()
    expect(page.get_by_role("heading", name="Failures", exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_text("Only the edge triage → researcher.", exact=True)).to_be_visible(
        timeout=UI_WAIT_MS
    )
    assert len(page.context.pages) == 1


def test_costs_over_time_and_the_path_icicle(served: Served, page: Page) -> None:
    _open(page, f"{served.url}/costs", "Costs")
    page.get_by_role("tab", name="Over time & by path", exact=True).click()
    expect(page).to_have_url(re.compile("costs_section=Over"))
    heading = page.get_by_role("heading", name="Cost over time and by delegation path")
    expect(heading).to_be_visible(timeout=UI_WAIT_MS)
    heading.evaluate("e => e.scrollIntoView({block: 'start'})")
    charts = page.locator("[data-testid='stVegaLiteChart']")
    expect(charts.nth(1)).to_be_visible(timeout=UI_WAIT_MS)
    _shot(page, "costs-over-time")
    icicle = page.get_by_role("heading", name="Inclusive tokens by delegation path")
    icicle.evaluate("e => e.scrollIntoView({block: 'start'})")
    expect(charts.nth(2)).to_be_visible(timeout=UI_WAIT_MS)
    _shot(page, "costs-paths")


def test_failed_handoff_screen_explains_a_cut(served: Served, page: Page) -> None:
    with open_store(served.data_dir) as store:
        newest = [
            f
            for e in store.agent_map(TraceFilter()).edges
            for f in store.map_refs(TraceFilter(), e.key).failures
        ]
    cut = next(f for f in newest if f.reason == "max_turns")
    _open(page, f"{served.url}/handoff?trace_id={cut.trace_id}&span_id={cut.span_id}", "Failed handoff")
    banner = page.get_by_text("Decided by budget line: max_turns (attempt 1)", exact=True)
    expect(banner).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_role("heading", name="Budget burn at the cut")).to_be_visible()
    _shot(page, "handoff")
