"""`janux trace` names what failed (kind, reason, whole message) and takes a unique id prefix;
`janux traces` has the Traces list's conversation, status and failure columns (issue 19)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from janux.cli.main import main
from janux.tracing.analysis import reconstruct
from janux.tracing.sources.store import open_store
from tests.support.demo_traces import demo_traces


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str], list[Any]]]:
    path = tmp_path_factory.mktemp("store")
    traces = demo_traces()
    with open_store(path) as store:
        store.write(list(traces.spans))
    yield path, dict(traces.trace_ids), list(traces.spans)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def test_trace_prints_each_failed_handoff_with_kind_reason_and_message(
    capsys: pytest.CaptureFixture[str], demo_store: tuple[Path, dict[str, str], list[Any]]
) -> None:
    data_dir, ids, spans = demo_store
    trace_id = ids["failed_delegation"]
    view = reconstruct([s for s in spans if s.trace_id == trace_id])
    (failure,) = view.failures
    assert failure.error and failure.reason == "rate_limited"  # one name for rate limits
    code, out = _run(capsys, "trace", trace_id, "--data-dir", str(data_dir))
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("failed: "))
    assert f"reason {failure.reason}" in line and line.endswith(failure.error)
    assert "status failed" in out
    code, out = _run(capsys, "trace", trace_id, "--json", "--data-dir", str(data_dir))
    report = json.loads(out)
    assert report["status"] == "failed"
    assert [(f["kind"], f["reason"], f["error"]) for f in report["failures"]] == [
        ("failed", failure.reason, failure.error)
    ]


def test_trace_lists_an_attempt_retried_to_success_and_reads_ok(
    capsys: pytest.CaptureFixture[str], demo_store: tuple[Path, dict[str, str], list[Any]]
) -> None:
    data_dir, ids, _ = demo_store
    report = json.loads(
        _run(capsys, "trace", ids["retry_then_success"], "--json", "--data-dir", str(data_dir))[1]
    )
    assert report["status"] == "ok" and report["failed_handoffs"] == 0
    (retried,) = report["failures"]
    assert retried["kind"] == "retried" and retried["reason"] == "model_error"
    assert "upstream returned 503" in retried["error"]


def test_trace_accepts_a_unique_prefix_and_refuses_an_ambiguous_one(
    capsys: pytest.CaptureFixture[str], demo_store: tuple[Path, dict[str, str], list[Any]]
) -> None:
    data_dir, ids, _ = demo_store
    trace_id = ids["delegation"]
    others = [t for t in ids.values() if t != trace_id]
    prefix = next(trace_id[:n] for n in range(1, 33) if not any(t.startswith(trace_id[:n]) for t in others))
    code, out = _run(capsys, "trace", prefix, "--json", "--data-dir", str(data_dir))
    assert code == 0 and json.loads(out)["trace_id"] == trace_id
    code, out = _run(capsys, "trace", "", "--data-dir", str(data_dir))
    assert code == 1 and "more than one trace id starts with" in out
    code, out = _run(capsys, "trace", "zz", "--data-dir", str(data_dir))
    assert code == 1 and "no trace id starts with zz" in out


def test_traces_has_conversation_status_and_failure_columns(
    capsys: pytest.CaptureFixture[str], demo_store: tuple[Path, dict[str, str], list[Any]]
) -> None:
    data_dir, ids, _ = demo_store
    code, out = _run(capsys, "traces", "--json", "--data-dir", str(data_dir))
    rows = {row["trace_id"]: row for row in map(json.loads, out.splitlines())}
    assert code == 0 and set(rows) == set(ids.values())
    failed = rows[ids["failed_delegation"]]
    assert failed["status"] == "failed" and failed["failure"] == "failed: rate_limited"
    assert failed["conversation_id"].startswith("failed_delegation")
    retried = rows[ids["retry_then_success"]]
    assert (retried["status"], retried["failed_handoffs"]) == ("ok", 0)
    assert retried["failure"] == "retried: model_error"
    code, out = _run(capsys, "traces", "--data-dir", str(data_dir))
    header = out.splitlines()[0].split()
    assert {"conversation", "status", "failure"} <= set(header)
