"""The agent map, the cost pictures and the failed-handoff screen in a real Chromium, on `janux serve --demo`;
and one figure across pages (issue 28): a transfer's caller and billing's own cost on the Trace page,
the agent map and the Costs CSV, and a failed attempt's failed round counted.

Reuses the served demo, browser and page fixtures of `test_dashboard_in_chromium` (conftest.py).
Its screenshots are the README's (docs/screenshots/agent-map*.png, costs-*.png, handoff.png).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from playwright.sync_api import Page, expect

from janux.tracing.analysis import figures
from janux.tracing.analysis.trace_outline import outline
from janux.tracing.analysis.trace_view import TraceView, reconstruct
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


def _transfer_view(served: Served) -> TraceView:
    """The demo's transfer (triage hands the conversation to billing), rebuilt from the store."""
    (summary,) = [t for t in served.traces if t.agent_path and not t.failed_handoffs]  # not the denied chain
    with open_store(served.data_dir) as store:
        return reconstruct(store.get_trace(summary.trace_id))


def test_a_transfer_shows_its_caller_and_one_figure_on_every_page(served: Served, page: Page) -> None:
    # Issue 28: the caller's round is the caller's, and billing's own cost is one figure, rendered by
    # one rule per medium: the Trace page's row, the agent map's label and the Costs page's CSV.
    view = _transfer_view(served)
    assert [n.agent for n in view.nodes] == ["triage", "billing"]
    billing = view.nodes[1].own
    _open(page, f"{served.url}/trace?trace_id={view.trace_id}", "Trace")
    rows = outline(view)
    labels: list[str] = page.locator("tr.row td.span").evaluate_all("tds => tds.map(td => td.textContent)")
    assert labels == [r.label for r in rows][: len(labels)]
    loops = [r for r in rows if r.kind == "loop"]
    assert [r.agent for r in loops] == ["triage", "billing"]  # the caller, then the agent it handed to
    for loop, node in zip(loops, view.nodes, strict=True):
        cell = page.locator("tr.row").nth(rows.index(loop)).locator("td.cost")
        expect(cell).to_contain_text(loop.cost)
        # its own cost (the hover's first line), by the page's rule: the caller's round is the caller's
        own = re.escape(f"own: {figures.page_text(figures.cost(node.own))},")
        expect(cell).to_have_attribute("title", re.compile(own))
    # The agent map and the Costs CSV sum billing over every trace it ran in (this one and the
    # denied chain's): this trace's own cost plus the others', each read from its trace.
    with open_store(served.data_dir) as store:
        for other in served.traces:
            if other.trace_id != view.trace_id and "billing" in other.agent_path:
                billing = billing + reconstruct(store.get_trace(other.trace_id)).nodes[1].own
    billing = billing.rounded()
    _open(page, f"{served.url}/agent-map", "Agent map")
    graph = page.locator("[data-testid='stVegaLiteChart'] svg")
    label = f"own {figures.chart_label(figures.cost(billing))}"
    expect(graph.get_by_text(label, exact=False).first).to_be_visible(timeout=UI_WAIT_MS)
    # The Costs page's by-agent CSV: the same figure's exact digits, and triage's own round apart.
    _open(page, f"{served.url}/costs", "Costs")
    with page.expect_download(timeout=UI_WAIT_MS) as started:
        page.get_by_role("button", name="Download by agent (own) (CSV)").click()
    exported = {r["agent"]: r for r in csv.DictReader(io.StringIO(Path(started.value.path()).read_text()))}
    assert exported["billing"]["own cost USD"] == figures.csv_value(figures.cost(billing))
    assert int(exported["billing"]["own input tokens"]) == billing.input_tokens
    assert "e" not in exported["billing"]["own cost USD"].lower()  # never scientific notation


def test_a_failed_attempt_counts_its_failed_round(served: Served, page: Page) -> None:
    # Issue 28: a failed model round is a round: the failed attempt's detail says 1, not 0.
    retried = next(
        t for t in served.traces if t.attempts == 2 and t.failed_handoffs == 0 and t.delegations == 1
    )
    with open_store(served.data_dir) as store:
        view = reconstruct(store.get_trace(retried.trace_id))
    failed = next(n for n in view.nodes if n.attempt == 1 and n.via is not None)
    assert failed.own.rounds == 1
    _open(page, f"{served.url}/trace?trace_id={view.trace_id}&span={failed.span_id}", "Trace")
    detail = page.locator(".tables").filter(has_text="model rounds")
    expect(detail.first).to_be_visible(timeout=UI_WAIT_MS)
    row = detail.first.locator("tr", has_text="model rounds")
    expect(row.locator("td").last).to_have_text("1")
