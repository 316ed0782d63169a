"""`janux import` and `janux prune` from the command line."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from janux.cli.main import main
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from tests.support.paths import FIXTURES
from tests.support.paths import REPO_ROOT as ROOT

ALL_FIXTURES = [
    "collector_file_exporter.jsonl", "otlp_json_file_exporter.jsonl", "single_document.json",
    "tempo_v1_batches.json", "tempo_v2_trace.json", "jaeger_v3_result.jsonl",
]  # fmt: skip


def test_import_every_fixture_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [str(FIXTURES / name) for name in ALL_FIXTURES]
    assert main(["import", *paths, "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "6 file(s)" in out and "15 span(s) read, 15 stored, 0 duplicate(s), 0 rejected" in out
    with open_store(tmp_path) as store:
        assert store.count_traces(TraceFilter()) == 6
        (janux,) = store.list_traces(TraceFilter(root_agent="planner"))
        assert (janux.attempts, janux.failed_handoffs, janux.delegations, janux.bill_cost) == (
            2,
            1,
            1,
            0.0021,
        )
        (other,) = store.list_traces(TraceFilter(service="other-runtime"))
        assert (other.attempts, other.failed_handoffs, other.bill_input_tokens) == (1, 1, 50)


def test_import_twice_counts_duplicates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "collector_file_exporter.jsonl")
    main(["import", path, "--data-dir", str(tmp_path)])
    assert main(["import", path, "--data-dir", str(tmp_path)]) == 0
    assert "0 stored, 4 duplicate(s)" in capsys.readouterr().out


def test_bad_lines_reported_with_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "mixed_bad.jsonl"
    assert main(["import", str(path), "--data-dir", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "3 stored" in captured.out and "3 rejected" in captured.out
    assert f"skipped: {path}:2: invalid JSON" in captured.err
    assert f"skipped: {path}:4: resourceSpans[0].scopeSpans[0].spans[1].traceId" in captured.err
    with open_store(tmp_path) as store:
        assert store.ingest_stats().rejected == 3


def test_nothing_readable_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("nope\nstill nope\n")
    assert (
        main(["import", str(garbage), str(tmp_path / "missing.json"), "--data-dir", str(tmp_path / "d")]) == 1
    )
    err = capsys.readouterr().err
    assert "garbage.jsonl:1: invalid JSON" in err and "missing.json: cannot open" in err
    assert "nothing could be read" in err


def test_prune_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["import", str(FIXTURES / "jaeger_v3_result.jsonl"), "--data-dir", str(tmp_path)])
    old = time.time_ns() - 1_700_000_300_000_000_000
    days_since = old / 86_400e9
    assert main(["prune", "--older-than-days", str(days_since + 30), "--data-dir", str(tmp_path)]) == 0
    assert "deleted 0 trace(s)" in capsys.readouterr().out
    assert main(["prune", "--older-than-days", "1", "--data-dir", str(tmp_path)]) == 0
    assert "deleted 1 trace(s), 2 span(s)" in capsys.readouterr().out


def test_help_texts_describe_the_commands() -> None:
    for command, phrase in (("collect", "OTLP/HTTP"), ("import", "JSON lines"), ("prune", "days ago")):
        result = subprocess.run(
            [sys.executable, "-m", "janux", command, "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        assert phrase in result.stdout.replace("\n", " ")


def test_exit_status_is_non_zero_only_when_no_span_could_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = tmp_path / "refused.jsonl"  # readable JSON lines, but every span is refused
    refused.write_text('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"01"}]}]}]}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    data = str(tmp_path / "d")
    assert main(["import", str(refused), str(empty), "--data-dir", data]) == 1
    assert "refused.jsonl:1: resourceSpans[0].scopeSpans[0].spans[0].traceId" in capsys.readouterr().err
    good = FIXTURES / "jaeger_v3_result.jsonl"
    assert main(["import", str(refused), str(good), "--data-dir", data]) == 0


def test_data_dir_defaults_to_janux_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JANUX_DATA_DIR", str(tmp_path / "from-env"))
    assert main(["import", str(FIXTURES / "jaeger_v3_result.jsonl")]) == 0
    with open_store(tmp_path / "from-env") as store:
        assert store.ingest_stats().spans == 2


def _import_with_stderr_on(stderr_fd: int, data_dir: Path) -> subprocess.Popen[bytes]:
    path = FIXTURES / "collector_file_exporter.jsonl"
    command = [sys.executable, "-m", "janux", "import", str(path), "--data-dir", str(data_dir)]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr_fd)


def test_progress_bar_only_on_a_terminal(tmp_path: Path) -> None:
    import fcntl
    import os
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal has a size
    proc = _import_with_stderr_on(slave, tmp_path / "tty")
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the pty closes when the process exits
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert proc.wait(60) == 0
    assert b"collector_file_exporter.jsonl:" in shown and b"B/s" in shown
    piped = subprocess.run(
        [sys.executable, "-m", "janux", "import", str(FIXTURES / "collector_file_exporter.jsonl"),
         "--data-dir", str(tmp_path / "pipe")],
        cwd=ROOT, capture_output=True, check=True,
    )  # fmt: skip
    assert b"%" not in piped.stderr and b"it/s" not in piped.stderr and b"B/s" not in piped.stderr


def test_collect_defaults_to_loopback_and_the_otlp_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    from janux.cli.main import build_parser

    monkeypatch.delenv("JANUX_RECEIVER_TOKEN", raising=False)

    args = build_parser().parse_args(["collect"])
    assert (args.host, args.http_port, args.grpc_port, args.token) == ("127.0.0.1", 4318, 4317, None)
    assert args.max_body_bytes == 16 * 1024 * 1024


def test_import_collects_garbage_as_seldom_as_the_receiver(tmp_path: Path) -> None:
    """`janux import` holds a batch of thousands of decoded spans at a time: with CPython's default
    threshold, the young-generation collector walks it every 700 allocations (a quarter of the
    import's time). It runs with the receiver's settings (`receiver.process.settle_heap`)."""
    probe = (
        "import gc, sys\n"
        "from janux.cli.main import main\n"
        "from janux.tracing.receiver.process import YOUNG_COLLECTION_THRESHOLD\n"
        "before = gc.get_threshold()[0]\n"
        "assert main(['import', sys.argv[1], '--data-dir', sys.argv[2]]) == 0\n"
        "print(before, gc.get_threshold()[0], YOUNG_COLLECTION_THRESHOLD)\n"
    )
    path = str(FIXTURES / "collector_file_exporter.jsonl")
    done = subprocess.run(
        [sys.executable, "-c", probe, path, str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    before, after, wanted = map(int, done.stdout.split()[-3:])
    assert before < wanted <= after
