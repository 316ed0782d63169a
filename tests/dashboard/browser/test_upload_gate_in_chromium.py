"""A `janux ui` on every interface with a token, attacked over real HTTP: no upload and no media file
before sign-in, and uploads after sign-in stay within their memory caps. Sessions are real: a
Chromium page opens each, and the test reads its session id from the page's websocket."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

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
from tests.support.receiver_process import rss_mib
from tests.support.wait import wait_until

TOKEN = "a-long-enough-dashboard-token-for-tests"
UPLOAD_MIB = 60
FLOOD = 12
SESSION_CAP_MIB = 128


@dataclass
class Dashboard:
    """A running `janux ui`: its URL and the pid of its Streamlit process."""

    url: str
    pid: int


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    root = tmp_path_factory.mktemp("gate")
    with open_store(root / "data") as store:
        store.write(synthetic_trace(12, seed=3))
    (root / "token").write_text(TOKEN + "\n")
    port = _free_port()
    command = [sys.executable, "-m", "janux", "ui", "--data-dir", str(root / "data"), "--host", "0.0.0.0",
               "--port", str(port), "--ui-token-file", str(root / "token"), "--max-upload-mb", "64",
               "--upload-memory-session-mb", str(SESSION_CAP_MIB)]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        assert wait_until_up(f"{url}/_stcore/health", 60), "the dashboard never answered its health check"
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        yield Dashboard(url, int(children[0]))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


@pytest.fixture()
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


def _open_session(browser: Browser, url: str) -> tuple[BrowserContext, Page, list[str]]:
    """A new browser (context) on the dashboard; the list fills with its session id."""
    context = browser.new_context()
    page = context.new_page()
    session_ids: list[str] = []

    def on_frame(payload: str | bytes) -> None:
        if isinstance(payload, bytes):
            message = ForwardMsg.FromString(payload)
            if message.HasField("new_session") and message.new_session.initialize.session_id:
                session_ids.append(message.new_session.initialize.session_id)

    page.on("websocket", lambda socket: socket.on("framereceived", on_frame))
    page.goto(url)
    expect(page.get_by_label("Dashboard token")).to_be_visible(timeout=UI_WAIT_MS)
    wait_until(lambda: session_ids, what="the page's session id")
    return context, page, session_ids


def _client(context: BrowserContext) -> httpx.Client:
    """An HTTP client carrying this browser's cookies and its anti-forgery header, as the page does."""
    cookies = {c["name"]: c["value"] for c in context.cookies()}
    headers = {"X-Xsrftoken": cookies["_streamlit_xsrf"]}
    return httpx.Client(cookies=cookies, headers=headers, timeout=120)


def _put(client: httpx.Client, url: str, session_id: str, file_id: str, mib: int) -> httpx.Response:
    files = {"file": (f"{file_id}.json", b"x" * (mib << 20), "application/json")}
    return client.put(f"{url}/_stcore/upload_file/{session_id}/{file_id}", files=files)


def _upload(client: httpx.Client, url: str, session_id: str, file_id: str, mib: int) -> int:
    return _put(client, url, session_id, file_id, mib).status_code


def test_a_session_that_never_signed_in_cannot_upload_or_download(
    dashboard: Dashboard, browser: Browser
) -> None:
    context, _, session_ids = _open_session(browser, dashboard.url)
    before = rss_mib(dashboard.pid)
    with _client(context) as client:
        statuses = [_upload(client, dashboard.url, session_ids[0], f"f{n}", UPLOAD_MIB) for n in range(FLOOD)]
        media = client.get(f"{dashboard.url}/media/0123456789abcdef.png").status_code
    added = rss_mib(dashboard.pid) - before
    # Ungated: 12 x 60 MiB were all stored (204) and took the dashboard from ~250 to ~970 MiB.
    assert statuses == [403] * FLOOD and media == 403
    assert added < 100, f"{FLOOD} refused uploads added {added:.0f} MiB"


def test_after_sign_in_uploads_count_against_the_session_cap(dashboard: Dashboard, browser: Browser) -> None:
    context, page, session_ids = _open_session(browser, dashboard.url)
    page.get_by_label("Dashboard token").fill(TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Traces", exact=True)).to_be_visible(timeout=UI_WAIT_MS)
    with _client(context) as client:
        answers = [_put(client, dashboard.url, session_ids[0], f"g{n}", 50) for n in range(3)]
        media = client.get(f"{dashboard.url}/media/0123456789abcdef.png").status_code
    # Two files of 50 MiB fit in the 128 MiB a session may hold; the third would not.
    assert [a.status_code for a in answers] == [204, 204, 413], [a.text for a in answers]
    assert "this session's uploads would exceed 128 MiB" in answers[2].text
    assert media == 404  # past the gate: this browser signed in (the file itself does not exist)
