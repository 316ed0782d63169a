"""What a person sees: `janux serve --demo` in a real Chromium (Debian's package, via Playwright).

The demo scenarios travel through the runtime, real OTLP/HTTP, the receiver and the embedded
store; the browser then opens every page and checks what a user would look for: a delegation
with two attempts, a denied handoff with the rule that denied it, and the total cost. The
screenshots it takes are the ones the README shows (docs/screenshots/).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from janux.cli.commands.demo import wait_until_up
from janux.tracing.analysis.formatting import compact_usd, usd
from janux.tracing.analysis.money_cells import money_text
from janux.tracing.conventions import JANUX_HANDOFF_DENY_REASON
from janux.tracing.sources.protocol import TraceFilter, TraceSummary
from janux.tracing.sources.store import open_store
from janux.tracing.testing import synthetic_trace
from tests.support.paths import REPO_ROOT
from tests.support.wait import wait_until

REPO = REPO_ROOT
SCREENSHOTS = REPO / "docs" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
DEMO_TRACES = 19
UI_WAIT_MS = 30_000
WINDOW = {"width": 1440, "height": 900}
"""The browser window of every page test and of the README's screenshots: a 1440x900 laptop
(design brief: on that window the trace tree starts in the top half)."""
TABLE_HEADER_PX, TABLE_ROW_PX = 38, 35
"""Streamlit's table header and row heights (to click a link drawn on the table canvas)."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    url: str
    traces: list[TraceSummary]
    denied_by: dict[str, str]
    """Trace id of a denied handoff, by the rule that denied it."""
    data_dir: Path
    """The store `janux serve` writes to (a second writer may add traces)."""


def _wait_for_demo(data_dir: Path, process: subprocess.Popen[bytes], timeout_s: float) -> list[TraceSummary]:
    def stored() -> list[TraceSummary] | None:
        assert process.poll() is None, "janux serve exited early"
        if not (data_dir / "traces.sqlite3").exists():
            return None
        with open_store(data_dir) as store:
            traces = store.list_traces(TraceFilter(), limit=100)
        return traces if len(traces) >= DEMO_TRACES else None

    return wait_until(stored, timeout_s=timeout_s, interval_s=0.5, what="the demo traces in the store")


def _denials(data_dir: Path) -> dict[str, str]:
    with open_store(data_dir) as store:
        spans = store.failed_handoff_spans(TraceFilter())
    return {
        str(span.attributes[JANUX_HANDOFF_DENY_REASON]): span.trace_id
        for span in spans
        if JANUX_HANDOFF_DENY_REASON in span.attributes
    }


def _wait_for_ui(url: str, timeout_s: float) -> None:
    assert wait_until_up(f"{url}/_stcore/health", timeout_s), "the dashboard never answered its health check"


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a served process as a user would (SIGTERM), killing it only if it does not end."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


@contextlib.contextmanager
def serve_demo(data_dir: Path, **env: str) -> Iterator[Served]:
    """`janux serve --demo` into `data_dir` (with `env` added), up until the block ends."""
    ui_port = _free_port()
    command = [
        sys.executable, "-m", "janux", "serve", "--demo", "--data-dir", str(data_dir),
        "--http-port", "0", "--grpc-port", "0", "--ui-port", str(ui_port),
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, env=dict(os.environ, PYTHONUNBUFFERED="1", **env))
    try:
        url = f"http://127.0.0.1:{ui_port}"
        traces = _wait_for_demo(data_dir, process, 120)
        _wait_for_ui(url, 60)
        yield Served(url, traces, _denials(data_dir), data_dir)
    finally:
        stop(process)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve_demo(tmp_path_factory.mktemp("store")) as found:
        yield found


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture()
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=WINDOW)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert not errors, f"JavaScript errors in the page: {errors}"


def _open(page: Page, url: str, heading: str) -> None:
    page.goto(url)
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    # A Streamlit exception box would mean the page crashed on real data.
    expect(page.locator("[data-testid='stException']")).to_have_count(0)


def _shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(500)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)


def _trace_with(
    traces: list[TraceSummary], *, attempts: int, failed: int, delegations: int, errors: int | None = None
) -> TraceSummary:
    return next(
        t
        for t in traces
        if t.attempts == attempts
        and t.failed_handoffs == failed
        and t.delegations == delegations
        and (errors is None or t.error_spans == errors)
    )


def test_traces_page_lists_every_demo_trace(served: Served, page: Page) -> None:
    _open(page, served.url, "Traces")
    expect(page.get_by_text(f"{len(served.traces)} traces match")).to_be_visible(timeout=UI_WAIT_MS)
    _shot(page, "traces")


def test_trace_page_shows_a_delegation_with_two_attempts(served: Served, page: Page) -> None:
    retried = _trace_with(served.traces, attempts=2, failed=0, delegations=1)
    _open(page, f"{served.url}/trace?trace_id={retried.trace_id}&trace_view_tab=Graph", "Trace")
    graph = page.locator("[data-testid='stVegaLiteChart'] svg")
    expect(graph.get_by_text("attempt 1/2", exact=False).first).to_be_visible(timeout=UI_WAIT_MS)
    expect(graph.get_by_text("attempt 2/2", exact=False).first).to_be_visible()
    assert retried.bill_cost is not None
    expect(page.get_by_text(usd(retried.bill_cost), exact=True).first).to_be_visible()
    graph.first.scroll_into_view_if_needed()
    _shot(page, "trace-graph")


def test_trace_page_names_the_rule_that_denied_a_handoff(served: Served, page: Page) -> None:
    assert set(served.denied_by) >= {"allowed_tools", "denied_tools", "max_depth", "guardrail"}
    denied = served.denied_by["max_depth"]
    # A link from before the graph moved beside the detail still opens the graph.
    _open(page, f"{served.url}/trace?trace_id={denied}&trace_section=Handoff+graph", "Trace")
    graph = page.locator("[data-testid='stVegaLiteChart'] svg")
    expect(graph.get_by_text("max_depth", exact=True).first).to_be_visible(timeout=UI_WAIT_MS)
    expect(graph.get_by_text("denied · not run", exact=False).first).to_be_visible()


def test_failures_page_counts_each_kind(served: Served, page: Page) -> None:
    _open(page, f"{served.url}/failures", "Failures")
    denied = page.locator("[data-testid='stMetric']").filter(has_text="denied")
    expect(denied.first).to_contain_text(str(len(served.denied_by)), timeout=UI_WAIT_MS)
    _shot(page, "failures")


def cut_metrics(page: Page) -> list[str]:
    """The headline values drawn cut (wider than their box, shown with "…" by CSS), once drawn."""
    page.locator("[data-testid='stMetricValue']").first.wait_for(timeout=UI_WAIT_MS)
    script = (
        "els => els.filter(el => [el, ...el.querySelectorAll('*')]"
        ".some(e => e.scrollWidth > e.clientWidth + 1)).map(el => el.innerText)"
    )
    cut: list[str] = page.locator("[data-testid='stMetricValue']").evaluate_all(script)
    return cut


def test_costs_page_shows_the_total_of_every_bill(served: Served, page: Page) -> None:
    total = sum(t.bill_cost or 0.0 for t in served.traces)
    _open(page, f"{served.url}/costs", "Costs")
    recorded = page.locator("[data-testid='stMetric']").filter(has_text="Recorded cost")
    # The headline is short (never cut with "…"); the exact amount is in its help.
    expect(recorded.first).to_contain_text(compact_usd(total), timeout=UI_WAIT_MS)
    assert cut_metrics(page) == []
    traces = page.locator("[data-testid='stMetric']").filter(has_text="Traces")
    expect(traces.first).to_contain_text(str(len(served.traces)))
    _shot(page, "costs")
    # Below the exact tables: what is rebuilt from the newest traces, with how many.
    page.get_by_role("tab", name="Inclusive & costliest delegations", exact=True).click()
    rebuilt = f"Rebuilt from the newest {len(served.traces)} of {len(served.traces)} traces in the range"
    note = page.get_by_text(rebuilt, exact=False)
    expect(note).to_have_count(1, timeout=UI_WAIT_MS)
    expect(page.get_by_role("heading", name="Most expensive delegations")).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_role("button", name="Download most expensive delegations (CSV)")).to_be_visible()
    _shot(page, "costs-rebuilt")


def test_failures_page_finds_the_timeout_that_fell_back(served: Served, page: Page) -> None:
    """A timed-out attempt whose handoff ended in a fallback is counted and explained."""
    _open(page, f"{served.url}/failures", "Failures")
    timeout = page.locator("[data-testid='stMetric']").filter(has_text="timeout")
    expect(timeout.first).to_contain_text("1", timeout=UI_WAIT_MS)
    note = "Timed out: 1 attempt in 1 handoff; final status: fallback 1."
    expect(page.get_by_text(note, exact=True)).to_be_visible()
    # The constants' help text stays in the tooltips, not on the page.
    expect(page.get_by_text("Help text", exact=False)).to_have_count(0)


def test_timeline_outlines_the_attempt_that_timed_out(served: Served, page: Page) -> None:
    fallback = _trace_with(served.traces, attempts=1, failed=1, delegations=1, errors=2)
    _open(page, f"{served.url}/trace?trace_id={fallback.trace_id}", "Trace")
    page.get_by_role("tab", name="Waterfall").click()
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    expect(chart).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_text("Red outline: the span ended with an error", exact=False)).to_be_visible()
    _shot(page, "trace-timeline")


def test_compare_page_diffs_two_traces(served: Served, page: Page) -> None:
    retried = _trace_with(served.traces, attempts=2, failed=0, delegations=1)
    plain = next(t for t in served.traces if not (t.delegations or t.transfers) and t.root_agent == "triage")
    _open(page, f"{served.url}/compare?a={plain.trace_id}&b={retried.trace_id}", "Compare")
    expect(page.locator("svg").get_by_text("researcher", exact=False).first).to_be_visible(timeout=UI_WAIT_MS)
    # The pickers show which traces the URL chose: start time, root agent, cost, short id.
    assert plain.bill_cost is not None
    label_a = f" · triage · {plain.conversation_id} · {money_text(plain.bill_cost)} · {plain.trace_id[:8]}"
    expect(page.get_by_role("combobox", name="Trace A")).to_have_value(re.compile(re.escape(label_a) + "$"))
    expect(page.get_by_role("combobox", name="Trace B")).to_have_value(re.compile(retried.trace_id[:8] + "$"))
    _shot(page, "compare")


def test_compare_page_picks_two_traces_from_the_list(served: Served, page: Page) -> None:
    retried = _trace_with(served.traces, attempts=2, failed=0, delegations=1)
    plain = next(t for t in served.traces if not (t.delegations or t.transfers) and t.root_agent == "triage")
    _open(page, f"{served.url}/compare", "Compare")
    expect(page.get_by_text("Pick two traces", exact=False)).to_be_visible(timeout=UI_WAIT_MS)
    for side, trace in enumerate((plain, retried)):
        page.get_by_role("combobox", name=f"Trace {'AB'[side]}").click()
        page.get_by_role("option").filter(has_text=trace.trace_id[:8]).click()
        typed = page.get_by_role("textbox", name="or its trace id").nth(side)
        expect(typed).to_have_value(trace.trace_id, timeout=UI_WAIT_MS)  # the id field follows
    expect(page.locator("svg").get_by_text("researcher", exact=False).first).to_be_visible(timeout=UI_WAIT_MS)
    expect(page).to_have_url(re.compile(f"a={plain.trace_id}.*b={retried.trace_id}"))


def test_uploaded_traces_open_in_the_same_tab_with_a_shareable_address(
    served: Served, page: Page, tmp_path: Path
) -> None:
    """A click on a row opens the uploaded trace in this tab; its address, opened in a new tab (a new
    session), shows the uploaded trace too, not the store."""
    trace_file = tmp_path / "one.jsonl"
    demo = [
        sys.executable,
        "-m",
        "janux",
        "demo",
        "--out",
        str(trace_file),
        "--scenario",
        "retry_then_success",
    ]
    subprocess.run(demo, cwd=REPO, check=True, capture_output=True, timeout=120)
    _open(page, served.url, "Traces")
    page.get_by_text("Uploaded files", exact=True).click()
    page.locator("input[type='file']").set_input_files(str(trace_file))
    expect(page.get_by_text("1 traces match", exact=False)).to_be_visible(timeout=UI_WAIT_MS)
    table = page.locator("[data-testid='stDataFrame']").first
    box = table.bounding_box()
    assert box is not None
    # The table is drawn on a canvas: a cell of the first row.
    x, y = box["x"] + 150, box["y"] + TABLE_HEADER_PX + TABLE_ROW_PX / 2
    page.mouse.click(x, y)
    expect(page.get_by_role("heading", name="Trace", exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    assert len(page.context.pages) == 1 and "upload=" in page.url
    tab = page.context.new_page()
    tab.goto(page.url)
    expect(tab.get_by_role("heading", name="Trace", exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    label = tab.get_by_text("Attempts", exact=True)
    attempts = tab.locator("[data-testid='stMetric']").filter(has=label)
    expect(attempts.first).to_contain_text("2", timeout=UI_WAIT_MS)
    expect(tab.get_by_text("No spans stored", exact=False)).to_have_count(0)
    assert "upload=" in tab.url


def test_live_tail_shows_a_trace_that_arrives(served: Served, page: Page) -> None:
    """Runs last: it adds a trace to the store while the Traces page is open, without a reload."""
    _open(page, served.url, "Traces")
    expect(page.get_by_text(f"{len(served.traces)} traces match")).to_be_visible(timeout=UI_WAIT_MS)
    page.get_by_text("Live tail", exact=False).click()
    arriving = synthetic_trace(30, seed=2024)
    with open_store(served.data_dir) as store:
        store.write(arriving)
    expect(page.get_by_text(f"{len(served.traces) + 1} traces match")).to_be_visible(timeout=UI_WAIT_MS)
