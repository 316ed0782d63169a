"""`janux ui`: the command line it builds, and a real start on a free port serving the app."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from janux.cli.commands.ui import DEFAULT_HOST, app_path, free_port, ui_command, ui_env
from janux.cli.main import build_parser
from tests.support.contract_traces import contract_trace
from tests.support.wait import wait_until


def test_command_is_headless_local_and_without_usage_stats(tmp_path: Path) -> None:
    command = ui_command(tmp_path, port=8765)
    assert command[:5] == [sys.executable, "-m", "streamlit", "run", str(app_path())]
    flags = dict(zip(command[5::2], command[6::2], strict=False))
    assert flags["--server.headless"] == "true"
    assert flags["--server.address"] == DEFAULT_HOST == "127.0.0.1"
    assert flags["--server.port"] == "8765"
    assert flags["--browser.gatherUsageStats"] == "false"
    assert command[command.index("--") + 1 :] == ["--data-dir", str(tmp_path)]
    assert app_path().is_file()


def test_command_passes_the_source(tmp_path: Path) -> None:
    command = ui_command(None, "0.0.0.0", 9000, source="clickhouse")
    assert command[command.index("--") + 1 :] == ["--source", "clickhouse"]
    assert "0.0.0.0" in command


def test_env_carries_data_dir_source_and_extras(tmp_path: Path) -> None:
    env = ui_env(tmp_path, "memory-file:/x.jsonl", {"EXTRA": "1"}, base={"PATH": "/bin"})
    assert env == {
        "PATH": "/bin",
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        "JANUX_DATA_DIR": str(tmp_path),
        "JANUX_SOURCE": "memory-file:/x.jsonl",
        "EXTRA": "1",
    }


def test_parser_defaults() -> None:
    args = build_parser().parse_args(["ui"])
    assert (args.host, args.port, args.data_dir, args.source) == ("127.0.0.1", 8501, None, None)


def test_bad_source_is_refused_with_the_field_named() -> None:
    args = build_parser().parse_args(["ui", "--source", "mysql"])
    with pytest.raises(SystemExit, match="--source"):
        args.func(args)


@pytest.mark.slow
def test_janux_ui_serves_the_dashboard_on_a_data_dir(tmp_path: Path) -> None:
    from janux.tracing.sources.store import open_store

    data_dir = tmp_path / "data"
    with open_store(data_dir) as store:
        store.write(contract_trace())
    port = free_port()
    env = dict(os.environ, HOME=str(tmp_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "janux", "ui", "--data-dir", str(data_dir), "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        body = _wait_healthy(f"http://127.0.0.1:{port}", proc)
        assert body == "ok"
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
        assert page.status_code == 200 and "<noscript>" in page.text
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)


def _wait_healthy(base: str, proc: subprocess.Popen[bytes]) -> str:
    def health() -> str | None:
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            raise AssertionError(f"janux ui exited with {proc.returncode}: {out}")
        try:
            reply = httpx.get(f"{base}/_stcore/health", timeout=2)
        except httpx.TransportError:
            return None
        return reply.text if reply.status_code == 200 else None

    return wait_until(health, interval_s=0.3, what="the dashboard's health endpoint")


@pytest.mark.slow
def test_a_fresh_dashboard_reads_the_agent_map_before_any_visitor(tmp_path: Path) -> None:
    """Server start opens the configured store and reads its map facts (kept in the facts file)
    with no page requested: the first visitor of a fresh dashboard does not wait for them alone."""
    import sqlite3

    from janux.tracing.sources.store import facts_file, open_store

    data_dir = tmp_path / "data"
    with open_store(data_dir) as store:
        store.write(contract_trace())
    kept = data_dir / facts_file.FILE_NAME
    assert not kept.exists()
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "janux", "ui", "--data-dir", str(data_dir), "--port", str(port)],
        env=dict(os.environ, HOME=str(tmp_path)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )

    def facts_kept() -> int:
        if proc.poll() is not None:
            raise AssertionError(f"janux ui exited with {proc.returncode}")
        if not kept.exists():
            return 0
        try:
            with sqlite3.connect(kept) as conn:
                return int(conn.execute("SELECT count(*) FROM map_facts").fetchone()[0])
        except sqlite3.Error:  # created, its table not yet
            return 0

    try:
        assert wait_until(facts_kept, interval_s=0.2, what="the agent map facts read at server start") == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
