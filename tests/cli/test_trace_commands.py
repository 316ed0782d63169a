"""`janux trace ID --json` and `janux traces --json` give every foreign fixture's truth, from the
embedded store and from a trace file, and say `unknown` (null), never 0, for usage not read."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.cli.main import main
from janux.tracing.analysis.readers.structure import FOUND_BY
from janux.tracing.sources.store import open_store
from tests.cli.helpers import janux
from tests.support.foreign.common import FIXTURES
from tests.support.foreign.load import (
    Case,
    all_spans,
    cases,
    edges,
    failed_handoffs,
    listed_tokens,
    stated_edges,
    tokens,
)

CASES = cases()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("store")
    with open_store(path) as store:
        store.write(all_spans())
    yield path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_trace_json_gives_the_truth(capsys: pytest.CaptureFixture[str], data_dir: Path, case: Case) -> None:
    report = json.loads(_run(capsys, "trace", case.trace_id, "--json", "--data-dir", str(data_dir)))
    truth = case.truth
    assert (report["input_tokens"], report["output_tokens"]) == tokens(truth)
    assert report["delegations"] == len(truth["delegations"])
    assert report["transfers"] == len(truth["transfers"])
    assert sorted(report["agents"]) == sorted(truth["agents"])
    calls = truth["inference_calls"]
    assert report["usage_read"] == f"{calls}/{calls + truth['unread_calls']}"
    assert report["failed_handoffs"] == failed_handoffs(truth)
    tree_edges = [(e["caller"], e["target"]) for e in report["tree"]["edges"] if e["kind"] == "delegate"]
    assert edges(tree_edges) == edges(truth["delegations"])
    if truth["edges"] is not None:
        outcomes = sorted((e["caller"] or "", e["target"], e["kind"], e["status"], e["attempts"])
                          for e in report["tree"]["edges"])  # fmt: skip
        assert outcomes == stated_edges(truth)
        assert all(e["found"] in FOUND_BY for e in report["tree"]["edges"])
        delegated = sum(e["attempts"] for e in truth["edges"] if e["kind"] == "delegate")
        assert report["attempts"] == delegated
    if truth["unread_calls"]:
        assert report["cost_usd"] is None and report["cost_kind"] == "unknown"
        assert report["checks"]["usage_read"] == "fail"
    elif not truth["inference_calls"] and truth["agents"]:  # agents ran, no model call was recorded
        assert report["cost_usd"] is None and report["cost_kind"] == "unknown"
        assert "model calls not recorded" in report["coverage"]
        assert report["usage_note"] == "model calls not recorded by this instrumentation"
    elif not truth["inference_calls"]:  # no agent and no model call (a graph's construction)
        assert report["cost_kind"] == "none" and report["coverage"] == []
    else:
        assert report["cost_kind"] in ("estimated", "unpriced")
        assert report["checks"]["usage_read"] == "pass"
    if not truth["hand_built"]:
        assert report["errors"] == truth["errors"]


def test_traces_json_lists_the_page_columns(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    out = _run(capsys, "traces", "--json", "--limit", "100", "--data-dir", str(data_dir))
    rows = {row["trace_id"]: row for row in map(json.loads, out.splitlines())}
    assert len(rows) == len(CASES)
    for case in CASES:
        row, truth = rows[case.trace_id], case.truth
        assert row["schema"] == 1
        # null where no call's usage was read (unknown, or no model call at all: never 0)
        assert (row["input_tokens"], row["output_tokens"]) == listed_tokens(truth), case.id
        unrecorded = not truth["inference_calls"] and bool(truth["agents"])  # agents ran, no model call
        assert row["usage_known"] is not (bool(truth["unread_calls"]) or unrecorded), case.id
        assert (row["delegations"], row["transfers"]) == (len(truth["delegations"]), len(truth["transfers"]))
        assert row["failed_handoffs"] == failed_handoffs(truth), case.id
        if truth["edges"] is not None:
            assert row["root_agent"] == truth["root_agent"], case.id  # null where no agent ran
            assert row["attempts"] == sum(e["attempts"] for e in truth["edges"] if e["kind"] == "delegate")
        calls = truth["inference_calls"] + truth["unread_calls"]
        assert (row["model_calls_read"], row["model_calls"]) == (truth["inference_calls"], calls), case.id
        assert row["reconciled"] is None  # nothing to reconcile: no bill, no Janux accounting
        assert row["started_at"].endswith("Z") and isinstance(row["duration_ms"], float)
    failing = _run(capsys, "traces", "--json", "--failed-handoffs", "--data-dir", str(data_dir))
    failed = {c.trace_id for c in CASES if failed_handoffs(c.truth)}
    assert {json.loads(line)["trace_id"] for line in failing.splitlines()} == failed


def test_trace_from_a_trace_file_and_as_a_tree(capsys: pytest.CaptureFixture[str]) -> None:
    (case,) = [c for c in CASES if c.fixture == "openllmetry"]
    source = f"memory-file:{FIXTURES / 'openllmetry.jsonl'}"
    report = json.loads(_run(capsys, "trace", case.trace_id, "--json", "--source", source))
    assert (report["input_tokens"], report["usage_read"], report["cost_usd"]) == (500, "2/3", None)
    text = _run(capsys, "trace", case.trace_id, "--source", source)
    assert "usage read 2/3" in text and "delegate via lookup (completed, tool nesting) -> researcher" in text
    assert "$0.000000" not in text


def test_unknown_trace_and_bad_source_fail_clearly(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    assert main(["trace", "f" * 32, "--data-dir", str(data_dir)]) == 1
    assert "no spans stored" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"janux trace: .*unknown source"):
        main(["trace", "f" * 32, "--source", "nowhere"])


def test_the_console_script_prints_the_trace(data_dir: Path) -> None:
    case = next(c for c in CASES if c.fixture == "openai_agents_genai" and c.truth["scenario"] == "handoff")
    done = janux("trace", case.trace_id, "--json", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["transfers"] == 1


def test_traces_json_into_a_closed_pipe_ends_quietly(data_dir: Path) -> None:
    # `janux traces --json | head -0`: the reader is gone before the first line is written. The
    # command stops with the shell's status for a closed pipe, without a traceback.
    script = Path(sys.executable).with_name("janux")
    with subprocess.Popen(
        [str(script), "traces", "--json", "--limit", "100", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as process:  # fmt: skip
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # before the command has even finished starting
        stderr = process.stderr.read()
        assert process.wait(timeout=120) == 141
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
