"""The dashboard on a derived ClickHouse source (a chdb directory: `janux clickhouse init` and the
deriver ran, then more traces arrived), in a real Chromium: the Traces, Trace, Costs, Failures and
Agent map pages show the derived facts, and the Traces page says how many traces are still being
derived."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from janux.cli.commands.demo import wait_until_up
from janux.tracing.analysis.formatting import compact_usd, usd
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from tests.dashboard.browser.test_dashboard_in_chromium import (
    TABLE_HEADER_PX,
    TABLE_ROW_PX,
    UI_WAIT_MS,
    _free_port,
    _open,
    stop,
)
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement
from tests.support.contract_traces import TOTAL_COST, contract_trace, plain_trace
from tests.support.demo_traces import demo_traces
from tests.support.paths import REPO_ROOT

CONTRACT_ID = contract_trace()[0].trace_id


@dataclass(frozen=True)
class Derived:
    url: str
    pending: int


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Derived]:
    path = tmp_path_factory.mktemp("chdb-ui") / "chdb"
    client = ChdbClient(str(path))
    try:
        client.command(EXPORTER_DDL)
        client.command(insert_statement(contract_trace() + plain_trace()))
        schema.init(client)
        derive_pending(client, quiet_s=0)
        late = list(demo_traces().spans)
        client.command(insert_statement(late))  # received after the deriver ran: pending
    finally:
        client.close()  # the dashboard's process opens the directory
    port = _free_port()
    env = dict(os.environ, JANUX_CLICKHOUSE_CHDB=str(path), PYTHONUNBUFFERED="1")
    command = [sys.executable, "-m", "janux", "ui", "--source", "clickhouse", "--port", str(port)]
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        assert wait_until_up(f"{url}/_stcore/health", 60), "the dashboard never answered its health check"
        yield Derived(url, len({s.trace_id for s in late}))
    finally:
        stop(process)


def test_traces_page_lists_the_derived_traces_and_counts_the_pending(derived: Derived, page: Page) -> None:
    _open(page, derived.url, "Traces")
    expect(page.get_by_text("2 traces match", exact=False)).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_text(f"{derived.pending} traces still being derived", exact=False)).to_be_visible()


def test_trace_costs_failures_and_agent_map_pages(derived: Derived, page: Page) -> None:
    _open(page, f"{derived.url}/trace?trace_id={CONTRACT_ID}", "Trace")
    # The header's cost travels with its unpriced tokens (`$… + N unpriced tokens`).
    expect(page.get_by_text(usd(TOTAL_COST), exact=False).first).to_be_visible(timeout=UI_WAIT_MS)
    _open(page, f"{derived.url}/costs", "Costs")
    recorded = page.locator("[data-testid='stMetric']").filter(has_text="Recorded cost")
    expect(recorded.first).to_contain_text(compact_usd(TOTAL_COST), timeout=UI_WAIT_MS)
    _open(page, f"{derived.url}/failures", "Failures")
    denied = page.locator("[data-testid='stMetric']").filter(has_text="denied")
    expect(denied.first).to_contain_text("1", timeout=UI_WAIT_MS)
    _open(page, f"{derived.url}/agent-map", "Agent map")
    expect(page.locator("svg").get_by_text("researcher", exact=True).first).to_be_visible(timeout=UI_WAIT_MS)


def test_an_inspected_edge_on_the_derived_map_lists_its_newest_traces(derived: Derived, page: Page) -> None:
    """A click on an edge reads its newest delegations from the derived rows (`map_refs`, not with
    the map); a click on the first opens that trace at the edge's span."""
    memory = MemoryTraceSource(contract_trace() + plain_trace())
    edge = next(e for e in memory.agent_map(TraceFilter()).edges if e.failed)
    newest = memory.map_refs(TraceFilter(), edge.key).recent[0]
    _open(page, f"{derived.url}/agent-map", "Agent map")
    graph = page.locator("[data-testid='stVegaLiteChart'] svg")
    graph.locator(f"[aria-label*='inspect: edge: {edge.caller} → {edge.target} ({edge.kind})']").first.click()
    heading = page.get_by_role("heading", name="Newest delegations", exact=False)
    expect(heading).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_role("heading", name="Newest failures")).to_be_visible()
    heading.evaluate("e => e.scrollIntoView({block: 'start'})")
    table = page.locator("[data-testid='stDataFrame']").last  # the edge's delegations, under the heading
    expect(table).to_be_visible(timeout=UI_WAIT_MS)
    box = table.bounding_box()
    assert box is not None
    # The table is drawn on a canvas: a cell of its first row.
    page.mouse.click(box["x"] + 150, box["y"] + TABLE_HEADER_PX + TABLE_ROW_PX / 2)
    expect(page.get_by_role("heading", name="Trace", exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    expect(page).to_have_url(re.compile(f"trace_id={newest.trace_id}.*span={newest.span_id}"))
