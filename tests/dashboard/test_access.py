"""Who may use the dashboard and what the page may change: sign-in before any page renders, the
source settings read-only unless allowed, uploads capped once decompressed."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard
from streamlit.testing.v1 import AppTest

from janux.dashboard import sign_ins as sign_ins_module
from janux.dashboard.access import (
    AccessMisconfigured,
    DashboardAccess,
    exposure_problem,
    is_loopback,
    new_token,
    token_problem,
)
from janux.dashboard.sign_ins import TICKET_LIFETIME_S, GuessLimit, SignIns, browser_key
from janux.dashboard.ui import login
from janux.tracing.sources.store import open_store
from tests.dashboard.app_helpers import APP, TIMEOUT_S, OpenPage
from tests.dashboard.shown import rendered
from tests.support.contract_traces import contract_trace
from tests.support.otlp_encode import json_lines

CONTRACT_ID = contract_trace()[0].trace_id
TOKEN = "let-me-in-with-a-long-token"


@pytest.fixture
def store_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data_dir = tmp_path / "data"
    with open_store(data_dir) as store:
        store.write(contract_trace())
    monkeypatch.setenv("JANUX_DATA_DIR", str(data_dir))
    return data_dir


def _app() -> AppTest:
    return AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)


def _text(at: AppTest) -> str:
    parts = [e.value for e in (*at.markdown, *at.caption, *at.title, *at.error, *at.info)]
    return " ".join(str(p) for p in parts)


def test_with_a_token_nothing_renders_before_sign_in(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JANUX_UI_TOKEN", TOKEN)
    at = _app()
    at.run()
    assert not at.exception
    assert [t.label for t in at.text_input] == ["Dashboard token"]
    assert not at.sidebar.radio and not at.dataframe and CONTRACT_ID not in _text(at)
    at.text_input(key="janux_token_input").set_value("wrong")  # a form: sent with its button
    at.button[0].click().run()
    assert any("Wrong token" in e.value for e in at.error) and not at.dataframe
    at.text_input(key="janux_token_input").set_value(TOKEN)
    at.button[0].click().run()
    assert not at.exception and at.sidebar.radio(key="janux_source_choice").value == "Embedded store"
    # The session's ticket, as a link to another tab carries it (`link_params`).
    ticket = str(at.session_state["janux_ticket"])
    assert ticket and TOKEN not in ticket
    # A link opens a new tab, a new session: its ticket signs it in; a made-up one does not.
    for given, signed_in in ((ticket, True), ("made-up", False)):
        tab = _app()
        tab.query_params["auth"] = given
        tab.run()
        assert not tab.exception
        asked = [t.label for t in tab.text_input] == ["Dashboard token"]
        assert bool(tab.dataframe) is signed_in and asked is not signed_in


def test_an_empty_token_setting_refuses_to_render(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JANUX_UI_TOKEN", " ")
    at = _app()
    at.run()
    assert any("set but empty" in e.value for e in at.error) and not at.dataframe and not at.text_input


def test_without_the_flag_the_page_cannot_change_the_source_settings(
    open_page: OpenPage, store_dir: Path, tmp_path: Path
) -> None:
    at = open_page(None)
    assert not [t for t in at.sidebar.text_input if t.label == "Data directory"]
    assert f"Data directory: {store_dir}" in " ".join(rendered(c.value) for c in at.sidebar.caption)
    at.sidebar.radio(key="janux_source_choice").set_value("ClickHouse otel_traces").run()
    assert not at.sidebar.text_input and not at.sidebar.number_input
    assert "ClickHouse: default@127.0.0.1:8123/otel.otel_traces" in " ".join(
        rendered(c.value) for c in at.sidebar.caption
    )


def test_with_the_flag_only_an_existing_store_can_be_opened_from_the_page(
    open_page: OpenPage, store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JANUX_ALLOW_SOURCE_EDIT", "1")
    at = open_page(None)
    elsewhere = tmp_path / "not" / "a" / "store"
    at.sidebar.text_input(key="janux_data_dir").set_value(str(elsewhere)).run()
    assert not at.exception and any("No Janux store" in e.value for e in at.sidebar.error)
    assert not elsewhere.exists()  # nothing created where the page pointed


def test_an_upload_is_read_no_further_than_its_decompressed_limit(
    open_page: OpenPage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JANUX_UPLOAD_MAX_DECOMPRESSED_MB", "1")
    bomb = zstandard.ZstdCompressor().compress(json_lines(contract_trace()) * 2000)  # ~20 MiB of lines
    assert len(bomb) < 1024 * 1024
    at = open_page(None)
    at.sidebar.radio(key="janux_source_choice").set_value("Uploaded files").run()
    at.file_uploader(key="janux_files").set_value([("big.jsonl.zst", bomb, "application/zstd")]).run()
    assert not at.exception
    shown = " ".join(str(t.value) for t in (*at.text, *at.sidebar.text))
    assert "the decompressed data exceeds the limit of 1 MiB" in shown


def test_only_loopback_goes_without_a_token() -> None:
    for host in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"):
        assert is_loopback(host) and exposure_problem(host, DashboardAccess()) is None
    for host in ("0.0.0.0", "::", "", "192.0.2.1", "example.org"):
        assert not is_loopback(host)
        assert "without authentication" in str(exposure_problem(host, DashboardAccess()))
        assert exposure_problem(host, DashboardAccess(token=TOKEN)) is None
    with pytest.raises(AccessMisconfigured):
        DashboardAccess.from_env({"JANUX_UI_TOKEN": ""})
    settings = DashboardAccess(TOKEN, True, 5, 7, 9, 11)  # the upload size itself goes to Streamlit
    assert DashboardAccess.from_env(settings.env()) == DashboardAccess(TOKEN, True, 64, 7, 9, 11)


def test_a_short_token_is_refused_naming_the_minimum(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AccessMisconfigured, match="needs at least 22"):
        DashboardAccess.from_env({"JANUX_UI_TOKEN": "letmein"})
    assert len(new_token()) >= 22 and token_problem(new_token()) is None  # 256 random bits
    monkeypatch.setenv("JANUX_UI_TOKEN", "letmein")
    at = _app()
    at.run()
    assert any("needs at least 22" in e.value for e in at.error) and not at.text_input and not at.dataframe


def _sign_in(at: AppTest, token: str) -> None:
    at.text_input(key="janux_token_input").set_value(token)
    at.button[0].click().run()


def test_guessing_is_limited_for_the_whole_process_not_per_session(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JANUX_UI_TOKEN", TOKEN)
    monkeypatch.setattr(login, "WRONG_TOKEN_DELAY_S", 0.0)
    monkeypatch.setattr(login, "GUESSES", GuessLimit(per_minute=1, burst=3))
    answers = []
    for _ in range(5):  # a new session for every guess, as a guesser would open
        at = _app()
        at.run()
        _sign_in(at, "wrong-guess-of-enough-length")
        answers.append(" ".join(e.value for e in at.error))
    assert [("Wrong token" in a, "Too many sign-in attempts" in a) for a in answers] == [
        (True, False), (True, False), (True, False), (False, True), (False, True),
    ]  # fmt: skip
    at = _app()
    at.run()
    _sign_in(at, TOKEN)  # while the process is out of attempts, even the right token waits
    assert not at.dataframe and any("Too many sign-in attempts" in e.value for e in at.error)


def test_a_ticket_is_single_use_and_revocable(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JANUX_UI_TOKEN", TOKEN)
    at = _app()
    at.run()
    _sign_in(at, TOKEN)
    ticket = str(at.session_state["janux_ticket"])  # as a link to another tab carries it
    opened = []
    for _ in range(2):  # a second tab on the same ticket (a copied link) must sign in itself
        tab = _app()
        tab.query_params["auth"] = ticket
        tab.run()
        opened.append(bool(tab.dataframe))
    assert opened == [True, False]
    at.run()  # each page run hands out a fresh ticket
    fresh = str(at.session_state["janux_ticket"])
    assert fresh != ticket
    at.sidebar.button(key="janux_sign_out_all").click().run()  # every session and ticket revoked
    tab = _app()
    tab.query_params["auth"] = fresh
    tab.run()
    assert not tab.dataframe and not at.dataframe and [t.label for t in at.text_input] == ["Dashboard token"]


def test_tickets_expire_and_work_only_in_the_browser_they_were_issued_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sign_ins = SignIns()
    mine, theirs = b"m" * 16, b"t" * 16
    assert sign_ins.redeem_ticket(sign_ins.issue_ticket(mine), mine)
    assert not sign_ins.redeem_ticket(sign_ins.issue_ticket(mine), theirs)
    late = sign_ins.issue_ticket(mine)
    monkeypatch.setattr(sign_ins_module, "TICKET_LIFETIME_S", -1.0)
    assert not sign_ins.redeem_ticket(sign_ins.issue_ticket(mine), mine)
    assert sign_ins.redeem_ticket(late, mine)  # issued while the lifetime was positive
    assert TICKET_LIFETIME_S <= 300  # minutes, not the 12 hours a ticket used to live


def test_a_browser_is_known_by_its_anti_forgery_cookie_however_it_is_masked() -> None:
    token = bytes(range(16))
    masks = (b"\x01\x02\x03\x04", b"\xff\x00\xaa\x55")
    cookies = [
        f"2|{m.hex()}|{bytes(b ^ m[i % 4] for i, b in enumerate(token)).hex()}|1700000000" for m in masks
    ]
    assert browser_key(cookies[0]) == browser_key(cookies[1]) == token
    assert browser_key("garbage") is None and browser_key(None) is None and browser_key("2|zz|zz|1") is None
