"""Who may use the dashboard and what the page may change: sign-in before any page renders, the
source settings read-only unless allowed, uploads capped once decompressed."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard
from streamlit.testing.v1 import AppTest

from janux.dashboard.access import AccessMisconfigured, DashboardAccess, exposure_problem, is_loopback
from janux.tracing.sources.store import open_store
from tests.dashboard.app_helpers import APP, TIMEOUT_S, OpenPage
from tests.dashboard.shown import rendered
from tests.support.contract_traces import contract_trace
from tests.support.otlp_encode import json_lines

CONTRACT_ID = contract_trace()[0].trace_id


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
    monkeypatch.setenv("JANUX_UI_TOKEN", "letmein")
    at = _app()
    at.run()
    assert not at.exception
    assert [t.label for t in at.text_input] == ["Dashboard token"]
    assert not at.sidebar.radio and not at.dataframe and CONTRACT_ID not in _text(at)
    at.text_input(key="janux_token_input").set_value("wrong")  # a form: sent with its button
    at.button[0].click().run()
    assert any("Wrong token" in e.value for e in at.error) and not at.dataframe
    at.text_input(key="janux_token_input").set_value("letmein")
    at.button[0].click().run()
    assert not at.exception and at.sidebar.radio(key="janux_source_choice").value == "Embedded store"
    # The session's ticket, as a link to another tab carries it (`link_params`).
    ticket = str(at.session_state["janux_ticket"])
    assert ticket and "letmein" not in ticket
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
        assert exposure_problem(host, DashboardAccess(token="t")) is None
    with pytest.raises(AccessMisconfigured):
        DashboardAccess.from_env({"JANUX_UI_TOKEN": ""})
    settings = DashboardAccess("t", True, 5, 7)  # the upload size itself goes to Streamlit, not the env
    assert DashboardAccess.from_env(settings.env()) == DashboardAccess("t", True, 64, 7)
