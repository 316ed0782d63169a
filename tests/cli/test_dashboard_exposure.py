"""`janux serve` and `janux ui`: the dashboard has its own bind address, and never listens beyond
loopback without a token (the commands refuse before binding anything)."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from janux.cli.commands.ui import dashboard_access, ui_command
from tests.cli.helpers import janux
from tests.support.otlp_build import free_port
from tests.support.paths import REPO_ROOT
from tests.support.wait import wait_until


def test_serve_refuses_a_dashboard_beyond_loopback_without_a_token(tmp_path: Path) -> None:
    done = janux("serve", "--data-dir", str(tmp_path), "--http-port", "0", "--grpc-port", "0",
                 "--ui-host", "0.0.0.0", timeout=60)  # fmt: skip
    assert done.returncode != 0
    assert "refusing to start" in done.stderr and "without authentication" in done.stderr
    assert "--ui-token-file" in done.stderr and "OTLP/HTTP" not in done.stdout


def test_ui_refuses_too_and_an_empty_token_file_is_an_error(tmp_path: Path) -> None:
    done = janux("ui", "--data-dir", str(tmp_path), "--host", "192.0.2.1", "--port", "0", timeout=60)
    assert done.returncode != 0 and "without authentication" in done.stderr
    empty = tmp_path / "token"
    empty.write_text("\n")
    done = janux("ui", "--data-dir", str(tmp_path), "--ui-token-file", str(empty), timeout=60)
    assert done.returncode != 0 and "is empty" in done.stderr


def test_the_dashboard_binds_its_own_address_not_the_receivers(tmp_path: Path) -> None:
    ui_port = free_port()
    command = [sys.executable, "-m", "janux", "serve", "--data-dir", str(tmp_path), "--host", "127.0.0.2",
               "--http-port", "0", "--grpc-port", "0", "--ui-port", str(ui_port)]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        health = f"http://127.0.0.1:{ui_port}/_stcore/health"
        wait_until(lambda: _answers(health), timeout_s=90, what="the dashboard on 127.0.0.1")
        assert not _answers(f"http://127.0.0.2:{ui_port}/_stcore/health")
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_streamlit_is_told_the_upload_size_limit() -> None:
    command = ui_command(None, max_upload_mb=12)
    assert command[command.index("--server.maxUploadSize") + 1] == "12"


def test_a_short_token_file_is_refused_and_a_new_token_file_is_made_strong(tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.write_text("letmein\n")
    done = janux("ui", "--data-dir", str(tmp_path), "--ui-token-file", str(short), timeout=60)
    assert done.returncode != 0 and "needs at least 22" in done.stderr and "Traceback" not in done.stderr
    made = tmp_path / "made"
    args = argparse.Namespace(new_ui_token_file=str(made), ui_token_file=None, allow_source_edit=False,
                              max_upload_mb=1, max_upload_decompressed_mb=1, upload_memory_session_mb=1,
                              upload_memory_total_mb=1)  # fmt: skip
    token = dashboard_access(args, env={}).token
    assert token is not None and len(token) >= 43 and made.read_text().strip() == token  # 256 bits
    assert made.stat().st_mode & 0o777 == 0o600
    assert dashboard_access(args, env={}).token == token  # an existing file is kept, not replaced
