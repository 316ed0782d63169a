"""The dashboard as an explorer, timed in a real Chromium (issue 19), next to the Traces page.

Run: `.venv/bin/python -m bench.bench_explorer [--runs N]`. Serves an embedded store (a 10,000-span
trace and 30 small ones) with `janux ui`, drives Debian's /usr/bin/chromium through Playwright in
one tab and one session, and prints a markdown table of medians:

- the Traces page loaded (the same-run baseline every row is compared with);
- one click on a Traces row until the Trace page is drawn (same session, warm server);
- one click on a span in the Trace page's tree until its detail is drawn;
- the 10,000-span trace's Trace page, first visit and revisits;
- with `--fresh N`, that first visit again on N fresh servers (one sample each: a spread, not one number).

Then the server's CPU seconds (all its threads, from /proc) of the same steps, beside the Traces
page's: on a loaded machine, far steadier than the seconds waited.

"Drawn" means the script has finished (`data-test-script-state=notRunning`) and the element the
person looks for is visible. Targets (design brief, issue 31): a click to the Trace page < 1 s, a
span's detail < 200 ms, the 10k-span first visit < 1 s. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from janux.cli.commands.demo import wait_until_up
from janux.tracing.records import SpanRecord
from janux.tracing.testing import synthetic_trace

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
"""The app once its script has finished."""
SEARCH = "input[aria-label='Search this trace']"
"""The Trace page's search box (its label is hidden since issue 31: the box is found by it)."""
TREE_ROW = "tr.row"
"""A row of the Trace page's tree (`dashboard/ui/trace_tree.py`): the page is drawn once its first
row shows, not only its search box."""
WINDOW = {"width": 1440, "height": 900}
"""The browser window: the 1440x900 laptop of the design brief's targets."""
MARKS_JS = """
window.__janux_marks = {};
document.addEventListener('pointerdown', () => { window.__janux_marks = { down: performance.now() }; }, true);
const send = WebSocket.prototype.send;
WebSocket.prototype.send = function (data) {
  const marks = window.__janux_marks;
  if (marks.down !== undefined && marks.sent === undefined) marks.sent = performance.now();
  return send.call(this, data);
};
"""
"""Marks, in the page, when a pointer went down and when the next message left for the server."""
HEADER_PX, ROW_PX = 38, 35
"""Streamlit's table header and row heights (rows are drawn on a canvas)."""
WAIT_MS = 120_000
TARGETS_S = {"click": 1.0, "span": 0.2, "big": 1.0}
"""The targets (design brief, issue 31): a Traces row to the Trace page, a span's detail, the
10k-span first visit (with 1,000 tree rows drawn since issue 31)."""
SMALL_TRACES = 30
HOUR_NS, SECOND_NS = 3_600 * 10**9, 10**9
T = TypeVar("T")


@dataclass
class Times:
    """Seconds of each measured step, in run order."""

    listing: list[float] = field(default_factory=list)
    click: list[float] = field(default_factory=list)
    span: list[float] = field(default_factory=list)
    span_sent: list[float] = field(default_factory=list)
    """Of `span`: from the pointer going down on the row to the request leaving the page (page timed)."""
    big: list[float] = field(default_factory=list)
    big_span: list[float] = field(default_factory=list)
    """A click on a span in the 10k-span trace's tree (1,000 rows drawn) until its detail shows."""
    cpu: dict[str, list[float]] = field(default_factory=dict)
    """Server CPU seconds of the steps above, by the step's field name."""

    def add_cpu(self, step: str, seconds: float) -> None:
        """Record the server's CPU seconds of one run of `step`."""
        self.cpu.setdefault(step, []).append(seconds)


CpuClock = Callable[[], float]
"""The server process's CPU seconds so far (user and system, all threads)."""


def process_cpu(pid: int) -> CpuClock:
    """A `CpuClock` of process `pid`, read from /proc (Linux: the machine the targets are for)."""
    ticks = os.sysconf("SC_CLK_TCK")

    def read() -> float:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14, 15 of stat)

    return read


def _settled(page: Any, visible: str) -> None:
    page.wait_for_selector(IDLE, timeout=WAIT_MS)
    page.wait_for_selector(visible, state="visible", timeout=WAIT_MS)


def _trace_drawn(page: Any) -> None:
    """The Trace page drawn: script finished, search box and the tree's first row visible."""
    _settled(page, SEARCH)
    page.wait_for_selector(TREE_ROW, state="visible", timeout=WAIT_MS)


def _timed(action: Callable[[], object], done: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    done()
    return time.perf_counter() - start


def _table_box(page: Any, header: str) -> dict[str, float]:
    """Bounding box of the data table whose header row holds `header`."""
    table = page.locator("[data-testid='stDataFrame']").filter(has_text=header).first
    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    assert box is not None, f"no table with {header}"
    return dict(box)


def _click_row(page: Any, header: str, row: int) -> None:
    box = _table_box(page, header)
    page.mouse.click(box["x"] + 120, box["y"] + HEADER_PX + ROW_PX * row + ROW_PX / 2)


def _open_list(page: Any, url: str) -> float:
    return _timed(lambda: page.goto(url), lambda: _settled(page, "[data-testid='stDataFrame']"))


def _row_to_trace(page: Any, row: int) -> float:
    def drawn() -> None:
        page.wait_for_url("**/trace?**", timeout=WAIT_MS)
        _trace_drawn(page)

    return _timed(lambda: _click_row(page, "checks", row), drawn)


def _sent_after_down(page: Any) -> float:
    """Seconds from the last pointer down to the first message sent after it, as the page timed them."""
    marks = page.evaluate("() => window.__janux_marks")
    return float(marks["sent"] - marks["down"]) / 1000 if "sent" in marks else float("nan")


def _span_detail(page: Any, row: int) -> float:
    """Click tree row `row` (not the selected one) and wait for its detail's heading."""
    target = page.locator(TREE_ROW).nth(row)
    target.wait_for(timeout=WAIT_MS)
    label = target.locator("td").first.inner_text().strip()
    target.scroll_into_view_if_needed()
    box = target.bounding_box()
    assert box is not None, "the tree row is not drawn"

    def drawn() -> None:
        page.get_by_role("heading", name=f"{label} (").first.wait_for(timeout=WAIT_MS)
        page.wait_for_selector(IDLE, timeout=WAIT_MS)

    return _timed(lambda: page.mouse.click(box["x"] + 60, box["y"] + box["height"] / 2), drawn)


def _measure(url: str, big_id: str, runs: int, cpu: CpuClock) -> Times:
    from playwright.sync_api import sync_playwright

    times = Times()

    def step(name: str, seconds: Callable[[], float]) -> float:
        before = cpu()
        wall = seconds()
        times.add_cpu(name, cpu() - before)
        return wall

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport=WINDOW)
        page.add_init_script(MARKS_JS)
        # Warm-up on a page that rebuilds nothing (imports, JS bundle), then the 10k-span trace first.
        _timed(lambda: page.goto(f"{url}/trace"), lambda: _settled(page, "text=Open a trace from"))
        big = f"{url}/trace?trace_id={big_id}"
        for _ in range(runs):
            times.big.append(step("big", lambda: _timed(lambda: page.goto(big), lambda: _trace_drawn(page))))
        for run in range(runs):
            times.big_span.append(step("big_span", lambda run=run: _span_detail(page, 1 + run % 3)))  # type: ignore[misc]
        for run in range(runs):
            times.listing.append(step("listing", lambda: _open_list(page, url)))
            times.click.append(step("click", lambda run=run: _row_to_trace(page, run % 5)))  # type: ignore[misc]
            times.span.append(step("span", lambda run=run: _span_detail(page, 1 + run % 3)))  # type: ignore[misc]
            times.span_sent.append(_sent_after_down(page))
        browser.close()
    return times


def _serve(spans: list[SpanRecord], measure: Callable[[str, CpuClock], T]) -> T:
    """Store `spans`, serve them with `janux ui` (a fresh server) and run `measure(url, its CPU clock)`."""
    from janux.cli.commands.ui import free_port, launch_ui
    from janux.tracing.sources.store import open_store

    with tempfile.TemporaryDirectory() as data_dir:
        with open_store(data_dir) as store:
            store.write(spans)
        port = free_port()
        server = launch_ui(data_dir, port=port, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            if not wait_until_up(f"{url}/_stcore/health", 60, interval_s=0.3):
                raise RuntimeError("the dashboard never answered its health check")
            return measure(url, process_cpu(server.pid))
        finally:
            server.terminate()
            server.wait(timeout=30)


def _first_visit(url: str, big_id: str, _cpu: CpuClock) -> float:
    """A fresh browser on a fresh server: the warm-up page, then the 10k-span trace's first visit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport=WINDOW)
        _timed(lambda: page.goto(f"{url}/trace"), lambda: _settled(page, "text=Open a trace from"))
        seconds = _timed(lambda: page.goto(f"{url}/trace?trace_id={big_id}"), lambda: _trace_drawn(page))
        browser.close()
    return seconds


def _line(what: str, samples: list[float], baseline: float, target: float | None) -> str:
    median = statistics.median(samples)
    goal = f"< {target:g} s" if target is not None else ""
    ok = "" if target is None else (" ✓" if median < target else " ✗")
    shown = ", ".join(f"{s:.2f}" for s in samples)
    return f"| {what} | {median:.3f} | {median / baseline:.2f}x | {goal}{ok} | {shown} |"


def main(argv: list[str] | None = None) -> int:
    """Print the table; exit 1 when a median misses its target."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="runs of each step (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="3 runs of each step")
    parser.add_argument(
        "--fresh", type=int, default=0, metavar="N",
        help="also time the 10k-span trace's first visit on N fresh servers, one sample each (default: 0)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.quick:
        args.runs = 3
    # The 10k-span trace an hour older than the small ones: the last row of the list, never clicked.
    big = [replace(s, start_ns=s.start_ns - HOUR_NS) for s in synthetic_trace(10_000, seed=10_000)]
    small = [
        replace(s, start_ns=s.start_ns + i * SECOND_NS)
        for i in range(SMALL_TRACES)
        for s in synthetic_trace(40, seed=100 + i)
    ]
    big_id, runs = big[0].trace_id, max(1, args.runs)
    times = _serve(big + small, lambda url, cpu: _measure(url, big_id, runs, cpu))
    fresh = [_serve(big + small, lambda url, cpu: _first_visit(url, big_id, cpu)) for _ in range(args.fresh)]
    base = statistics.median(times.listing)
    print("| step (Chromium, one tab and session) | median s | vs Traces page | target | runs (s) |")
    print("|---|---:|---:|---|---|")
    print(_line("Traces page loaded (baseline)", times.listing, base, None))
    print(_line("click a Traces row -> Trace page drawn", times.click, base, TARGETS_S["click"]))
    print(_line("click a span in the tree -> its detail", times.span, base, TARGETS_S["span"]))
    print(_line("... of which: pointer down -> request sent (in the page)", times.span_sent, base, None))
    print(_line("10k-span trace, first visit", times.big[:1], base, TARGETS_S["big"]))
    if len(times.big) > 1:
        print(_line("10k-span trace, revisits", times.big[1:], base, None))
    print(
        _line(
            "click a span in the 10k-span trace's tree -> its detail", times.big_span, base, TARGETS_S["span"]
        )
    )
    if fresh:
        print(
            _line(f"10k-span trace, first visit on {len(fresh)} fresh servers", fresh, base, TARGETS_S["big"])
        )
    cpu_base = statistics.median(times.cpu["listing"])
    print("\n| step | server CPU s (median) | vs Traces page | runs (s) |")
    print("|---|---:|---:|---|")
    for name, what in (
        ("listing", "Traces page loaded (baseline)"), ("click", "click a Traces row -> Trace page"),
        ("span", "click a span in the tree -> its detail"), ("big", "10k-span trace, first visit"),
        ("big_span", "click a span in the 10k-span tree -> its detail"),
    ):  # fmt: skip
        samples = times.cpu[name] if name != "big" else times.cpu[name][:1]
        median = statistics.median(samples)
        shown = ", ".join(f"{s:.2f}" for s in times.cpu[name])
        print(f"| {what} | {median:.3f} | {median / cpu_base:.2f}x | {shown} |")
    met = [
        statistics.median(times.click) < TARGETS_S["click"],
        statistics.median(times.span) < TARGETS_S["span"],
        (statistics.median(fresh) if fresh else times.big[0]) < TARGETS_S["big"],
    ]
    return 0 if all(met) else 1


if __name__ == "__main__":
    raise SystemExit(main())
