"""`janux check`: rules over the demo traces in a real embedded store and on ClickHouse (chdb)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from janux.cli.commands.check import EXIT_CROSSED, EXIT_OK, EXIT_USAGE, check
from janux.cli.main import build_parser
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from tests.cli.helpers import janux
from tests.support.demo_traces import demo_traces

CROSSING = """
rules:
  - name: researcher keeps failing
    edge_failure_rate: {caller: triage, target: researcher, max: 0.1, min_count: 2}
  - name: books balance
    unreconciled_traces: {max: 0}
"""
CALM = """
rules:
  - name: researcher mostly works
    edge_failure_rate: {caller: triage, target: researcher, max: 0.9}
  - name: budgets cut rarely
    budget_cut_rate: {max: 0.9}
  - name: turns stay cheap
    cost_per_turn_p95: {max_usd: 100}
"""


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("store")
    with open_store(data_dir) as store:
        store.write(list(demo_traces().spans))
    return data_dir


def _run(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(["check", *argv])
    out, err = io.StringIO(), io.StringIO()
    return check(args, out, err), out.getvalue(), err.getvalue()


def _rules(tmp_path: Path, text: str) -> str:
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_crossed_edge_rule_exits_1_with_a_table(tmp_path: Path, store_dir: Path) -> None:
    with open_store(store_dir) as store:
        edge = store.agent_map(TraceFilter()).edge("triage", "researcher")
    assert edge is not None and edge.failure_rate > 0.1
    status, out, _ = _run("--rules", _rules(tmp_path, CROSSING), "--data-dir", str(store_dir))
    assert status == EXIT_CROSSED
    crossed = next(line for line in out.splitlines() if "researcher keeps failing" in line)
    assert crossed.startswith("CROSSED") and f"{edge.failure_rate:.1%}" in crossed
    assert f"{edge.failed} of {edge.count} delegations failed" in crossed
    books = next(line for line in out.splitlines() if "books balance" in line)
    assert books.startswith("ok")  # the demo's bills reconcile


def test_calm_rules_exit_0(tmp_path: Path, store_dir: Path) -> None:
    status, out, _ = _run("--rules", _rules(tmp_path, CALM), "--data-dir", str(store_dir))
    assert status == EXIT_OK, out
    assert "0 of" in out and "CROSSED" not in out


def test_a_range_with_no_traces_judges_nothing(tmp_path: Path, store_dir: Path) -> None:
    status, out, _ = _run(
        "--rules", _rules(tmp_path, CROSSING), "--data-dir", str(store_dir), "--service", "nobody"
    )
    assert status == EXIT_OK, out
    assert "books balance" in out  # the range-wide rule still reports (0 traces)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("rules:\n  - name: x\n    budget_cut_rate: {max: 2}\n", "rules.0.budget_cut_rate.max"),
        ("rules:\n  - name: x\n    edge_failure_rate: {maximum: 0.1}\n", "rules.0.edge_failure_rate.max"),
        ("rules:\n  - name: x\n", "rules.0"),
        ("rules: [\n", "not valid YAML"),
        ("{}\n", "rules"),
    ],
)
def test_bad_rules_exit_2_naming_the_field(tmp_path: Path, store_dir: Path, text: str, field: str) -> None:
    status, out, err = _run("--rules", _rules(tmp_path, text), "--data-dir", str(store_dir))
    assert status == EXIT_USAGE and out == ""
    assert field in err


def test_bad_options_exit_2(tmp_path: Path, store_dir: Path) -> None:
    rules = _rules(tmp_path, CALM)
    assert "--since" in _run("--rules", rules, "--data-dir", str(store_dir), "--since", "yesterday")[2]
    assert "JANUX_SOURCE" in _run("--rules", rules, "--source", "mongo")[2]
    assert "no such file" in _run("--rules", str(tmp_path / "missing.yaml"))[2].lower()


def test_the_installed_command_exits_1_on_a_crossed_rule(tmp_path: Path, store_dir: Path) -> None:
    done = janux("check", "--rules", _rules(tmp_path, CROSSING), "--data-dir", str(store_dir))
    assert done.returncode == EXIT_CROSSED, done.stderr
    assert "CROSSED" in done.stdout


def test_a_rule_below_its_min_count_is_listed_as_skipped(tmp_path: Path, store_dir: Path) -> None:
    with open_store(store_dir) as store:
        edge = store.agent_map(TraceFilter()).edge("triage", "researcher")
    assert edge is not None
    quiet = f"""
rules:
  - name: needs more data
    edge_failure_rate: {{caller: triage, target: researcher, max: 0.1, min_count: {edge.count + 1}}}
  - name: nobody calls this
    edge_failure_rate: {{caller: triage, target: nobody, max: 0.1}}
"""
    status, out, _ = _run("--rules", _rules(tmp_path, quiet), "--data-dir", str(store_dir))
    assert status == EXIT_OK, out
    below = next(line for line in out.splitlines() if "needs more data" in line)
    assert below.startswith("skipped")
    assert f"skipped: below min_count {edge.count + 1} ({edge.count} delegations)" in below
    none = next(line for line in out.splitlines() if "nobody calls this" in line)
    assert none.startswith("skipped") and "no edge in the range matches" in none
    assert "0 of 2 checks crossed (2 skipped: nothing to judge)." in out
