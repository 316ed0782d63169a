"""`janux trace` on hostile traces: agent loops nested 10,000 deep print (text and JSON), with lines
of bounded length, instead of dying with RecursionError."""

from __future__ import annotations

import json
from pathlib import Path

from janux.tracing.analysis.formatting import MAX_INDENT_DEPTH
from janux.tracing.sources.store import open_store
from tests.cli.helpers import janux
from tests.support.hostile_traces import nested_agents

DEPTH = 10_000


def test_a_trace_of_10000_nested_agents_prints_as_text_and_json(tmp_path: Path) -> None:
    with open_store(tmp_path / "data") as store:
        store.write(nested_agents(DEPTH))
    text = janux("trace", "d" * 32, "--data-dir", str(tmp_path / "data"), timeout=300)
    assert text.returncode == 0, text.stderr[-2000:]
    lines = text.stdout.splitlines()
    agents = [line for line in lines if ": own " in line]
    assert len(agents) == DEPTH and agents[0].startswith("agent0:")
    assert agents[-1].endswith(f"agent{DEPTH - 1}: own 0 in / 0 out, —")
    assert f"[depth {DEPTH - 1}]" in agents[-1]
    assert max(len(line) for line in lines) < 4 * MAX_INDENT_DEPTH + 200  # no 40 KB indentation
    done = janux("trace", "d" * 32, "--data-dir", str(tmp_path / "data"), "--json", timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert len(report["tree"]["nodes"]) == DEPTH and report["delegations"] == DEPTH - 1
