"""The receiver's bearer token: from a file or the environment (not the process list), never empty."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path

import httpx
import pytest

from janux.cli.receiver_args import TOKEN_ENV, add_receiver_arguments, resolve_token
from tests.cli.helpers import janux
from tests.support.hostile import valid_request
from tests.support.otlp_build import start_collect

PROTO = {"content-type": "application/x-protobuf"}


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_receiver_arguments(parser)
    return parser.parse_args(list(argv))


def test_an_empty_token_variable_is_an_error_not_auth_off(tmp_path: Path) -> None:
    for value in ("", "   "):
        done = janux("collect", "--data-dir", str(tmp_path), "--http-port", "0", "--grpc-port", "0",
                     env={TOKEN_ENV: value}, timeout=60)  # fmt: skip
        assert done.returncode != 0
        assert f"${TOKEN_ENV} is empty" in done.stderr and "unset it" in done.stderr
        assert "OTLP/HTTP on" not in done.stdout


def test_token_sources_in_order_and_every_empty_one_refused(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("s3cret\n")
    assert resolve_token(_args("--token-file", str(secret)), env={TOKEN_ENV: "other"}) == "s3cret"
    assert resolve_token(_args("--token", "t"), env={TOKEN_ENV: "other"}) == "t"
    assert resolve_token(_args(), env={TOKEN_ENV: "from-env"}) == "from-env"
    assert resolve_token(_args(), env={}) is None
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for argv in (("--token-file", str(empty)), ("--token", ""), ("--token-file", str(tmp_path / "missing")),
                 ("--token", "a", "--token-file", str(secret))):  # fmt: skip
        with pytest.raises(SystemExit):
            resolve_token(_args(*argv), env={})


def test_a_token_file_keeps_the_token_out_of_the_process_list(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("t0k-from-file\n")
    proc, http_port, _ = start_collect(tmp_path / "data", "--workers", "1", "--token-file", str(secret))
    try:
        command_line = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        url = f"http://127.0.0.1:{http_port}/v1/traces"
        refused = httpx.post(url, content=valid_request(2), headers=PROTO)
        authorized = {**PROTO, "authorization": "Bearer t0k-from-file"}
        accepted = httpx.post(url, content=valid_request(2), headers=authorized)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert b"t0k-from-file" not in command_line
    assert (refused.status_code, accepted.status_code) == (401, 200)


@pytest.mark.parametrize("command", ["collect", "serve"])
def test_help_says_where_the_token_comes_from(command: str) -> None:
    text = janux(command, "--help", timeout=60).stdout
    assert "--token-file" in text and TOKEN_ENV in text and "process list" in text
