"""A dashboard with a token, in a real Chromium: nothing shows before the visitor signs in."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from janux.cli.commands.demo import wait_until_up
from janux.tracing.sources.store import open_store
from janux.tracing.testing import synthetic_trace
from tests.dashboard.browser.test_dashboard_in_chromium import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    UI_WAIT_MS,
    _free_port,
)
from tests.support.paths import REPO_ROOT

TOKEN = "correct horse battery staple"


@pytest.fixture(scope="module")
def signed_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`janux ui` on 127.0.0.1 with a token file, over a store holding one trace."""
    root = tmp_path_factory.mktemp("signin")
    with open_store(root / "data") as store:
        store.write(synthetic_trace(12, seed=7))
    (root / "token").write_text(TOKEN + "\n")
    port = _free_port()
    command = [sys.executable, "-m", "janux", "ui", "--data-dir", str(root / "data"), "--port", str(port),
               "--ui-token-file", str(root / "token")]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        assert wait_until_up(f"{url}/_stcore/health", 60), "the dashboard never answered its health check"
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


@pytest.fixture()
def page() -> Iterator[Page]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        opened = browser.new_page(viewport={"width": 1280, "height": 900})
        yield opened
        browser.close()


def test_the_traces_show_only_after_signing_in(signed_url: str, page: Page) -> None:
    page.goto(signed_url)
    token_box = page.get_by_label("Dashboard token")
    expect(token_box).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_text("traces match", exact=False)).to_have_count(0)
    expect(page.get_by_text("Trace source", exact=False)).to_have_count(0)
    token_box.fill("guess")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("Wrong token.")).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_text("traces match", exact=False)).to_have_count(0)
    token_box.fill(TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Traces", exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_text("1 traces match", exact=False)).to_be_visible(timeout=UI_WAIT_MS)
    assert TOKEN not in page.url


def test_a_new_visit_asks_again(signed_url: str, page: Page) -> None:
    page.goto(signed_url)
    expect(page.get_by_label("Dashboard token")).to_be_visible(timeout=UI_WAIT_MS)
    page.goto(f"{signed_url}/?auth=made-up")
    expect(page.get_by_label("Dashboard token")).to_be_visible(timeout=UI_WAIT_MS)
    expect(page.get_by_text("traces match", exact=False)).to_have_count(0)
