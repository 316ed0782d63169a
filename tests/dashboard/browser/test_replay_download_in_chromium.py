"""The Failed handoff screen's regression test, downloaded in a real Chromium and run with pytest.

`janux serve --demo` runs with content capture on (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`),
so its traces travel through the runtime, real OTLP/HTTP, the receiver and the embedded store with
everything `janux replay` needs. The browser opens the screen of the handoff the demo cuts by its
`max_turns` budget, clicks "Download the test file" under "Reproduce offline", and the file that
lands on disk must pass in a fresh pytest process: what a developer does with it (issue 30).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from janux.tracing.conventions import CAPTURE_CONTENT_ENV
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from tests.dashboard.browser.test_dashboard_in_chromium import (
    UI_WAIT_MS,
    Served,
    _open,
    serve_demo,
)
from tests.support.wait import wait_until

PYTEST_TIMEOUT_S = 300
"""Bounds the downloaded test's run only to prove it does not hang (it takes seconds)."""


@pytest.fixture(scope="module")
def served_with_content(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`janux serve --demo` recording prompts, outputs and the agents' definitions."""
    with serve_demo(tmp_path_factory.mktemp("captured-store"), **{CAPTURE_CONTENT_ENV: "true"}) as found:
        yield found


@pytest.fixture()
def downloading_page(browser: Browser, tmp_path: Path) -> Iterator[Page]:
    """A page whose downloads are accepted (Playwright sets Chromium's download behaviour over CDP)."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert not errors, f"JavaScript errors in the page: {errors}"


def _cut_by_max_turns(served: Served) -> tuple[str, str]:
    """(trace id, tool span id) of the demo's handoff cut by its max_turns budget line."""
    with open_store(served.data_dir) as store:
        agent_map = store.agent_map(TraceFilter())
        failures = [f for e in agent_map.edges for f in store.map_refs(TraceFilter(), e.key).failures]
    cut = next(f for f in failures if f.reason == "max_turns")
    return cut.trace_id, cut.span_id


def test_the_downloaded_test_file_passes_in_a_fresh_pytest(
    served_with_content: Served, downloading_page: Page, tmp_path: Path
) -> None:
    page = downloading_page
    trace_id, span_id = _cut_by_max_turns(served_with_content)
    _open(page, f"{served_with_content.url}/handoff?trace_id={trace_id}&span_id={span_id}", "Failed handoff")
    page.get_by_text("Reproduce offline", exact=True).click()
    command = f"janux replay {trace_id} --span {span_id} --write-test tests/test_handoff_{span_id[:8]}.py"
    expect(page.get_by_text(command, exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    button = page.get_by_role("button", name="Download the test file")
    expect(button).to_be_visible(timeout=UI_WAIT_MS)
    with page.expect_download(timeout=UI_WAIT_MS) as started:
        button.click()
    download = started.value
    assert download.failure() is None, download.failure()
    assert download.suggested_filename == f"test_handoff_{span_id[:8]}.py"
    target = tmp_path / download.suggested_filename
    download.save_as(target)
    written = wait_until(
        lambda: target.is_file() and target.stat().st_size > 0, what=f"{target.name} on disk"
    )
    assert written
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", target.name],
        cwd=tmp_path, capture_output=True, text=True, timeout=PYTEST_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
