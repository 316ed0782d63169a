"""`janux demo --out`: every scenario the issue lists is in the file, as the contract says, and no server ran.

The command runs in a fresh interpreter where `socket.listen` and gRPC's server constructors refuse
to work and count every attempt, so no OTLP receiver, HTTP or gRPC server can run unnoticed.
The file is then decoded with the same OTLP/JSON decoder the store uses, and each scenario's trace
is checked against every contract rule and for the outcome the scenario stands for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from janux.demo.scenarios import ENDS_BY_DESIGN
from janux.tracing import conventions as c
from janux.tracing.otlp.json_decode import decode_json_bytes
from janux.tracing.records import SpanRecord, attr_int, attr_str
from tests.support.contract_checker import contract_problems

from .helpers import ROOT, report_rows

NO_SERVER = """
import socket, sys
import grpc, grpc.aio
attempts = []
def refuse(*args, **kwargs):
    attempts.append(args)
    raise AssertionError("janux demo --out must not start a server")
socket.socket.listen = refuse  # every Python-level server (asyncio, uvicorn, http.server) listens
grpc.server = grpc.aio.server = refuse  # gRPC's C core binds on its own
from janux.cli.main import main
status = main(sys.argv[1:])
print(f"SERVER-ATTEMPTS:{len(attempts)}", file=sys.stderr)
sys.exit(status)
"""


@dataclass
class Seen:
    """What one scenario's trace shows."""

    spans: list[SpanRecord]
    ends: list[dict[str, object]] = field(default_factory=list)
    error_types: set[str] = field(default_factory=set)
    max_depth: int = 0


def _seen(spans: list[SpanRecord]) -> Seen:
    seen = Seen(spans)
    for span in spans:
        seen.ends += [dict(e.attributes) for e in span.events if e.name == c.EVENT_HANDOFF_END]
        if span.attributes.get(c.ERROR_TYPE):
            seen.error_types.add(str(span.attributes[c.ERROR_TYPE]))
        seen.max_depth = max(seen.max_depth, attr_int(span.attributes, c.JANUX_AGENT_DEPTH) or 0)
    return seen


def _statuses(seen: Seen) -> list[object]:
    return [end[c.JANUX_HANDOFF_STATUS] for end in seen.ends]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Seen]:
    """One `janux demo --out` run: each scenario's decoded trace, by scenario name."""
    out = tmp_path_factory.mktemp("demo") / "demo.jsonl"
    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", NO_SERVER, "demo", "--out", str(out), "--latency-scale", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "SERVER-ATTEMPTS:0" in done.stderr, done.stderr
    rows = report_rows(done.stdout)
    assert all(row.outcome == "ok" for row in rows), done.stdout
    # The summary says which scenarios end in a failure on purpose (issue 19).
    design = {row.name: row.design for row in rows}
    assert design == {name: ENDS_BY_DESIGN.get(name, "-") for name in design}
    assert design["failed_delegation"] == "a failed handoff (rate limited)" and design["delegation"] == "-"
    by_trace: dict[str, list[SpanRecord]] = defaultdict(list)
    for number, line in enumerate(out.read_text(encoding="utf-8").splitlines(), start=1):
        result = decode_json_bytes(line)
        assert result.rejected == 0, f"line {number}: {result.errors}"
        for span in result.spans:
            by_trace[span.trace_id].append(span)
    assert set(by_trace) == {row.trace_id for row in rows}
    return {row.name: _seen(by_trace[row.trace_id]) for row in rows}


REQUIRED = [
    "plain_answer",
    "delegation",
    "parallel_delegations",
    "retry_then_success",
    "timeout_then_fallback",
    *(f"denied_{rule}" for rule in sorted(c.DENY_REASONS)),
    *(f"cut_{line}" for line in sorted(c.STOP_REASONS)),
    "transfer_to_specialist",
    "nested_delegation",
    "unpriced_subagent",
]


def test_every_required_scenario_ran_and_follows_the_contract(demo: dict[str, Seen]) -> None:
    assert set(REQUIRED) <= set(demo)
    problems = {name: contract_problems(seen.spans) for name, seen in demo.items()}
    assert {name: found for name, found in problems.items() if found} == {}
    for name, seen in demo.items():
        roots = [span for span in seen.spans if not span.parent_span_id]
        assert len(roots) == 1 and roots[0].name.startswith(c.OP_INVOKE_AGENT), name
        assert {span.service_name for span in seen.spans} == {"janux-demo"}


def test_plain_delegation_parallel_retry_and_fallback(demo: dict[str, Seen]) -> None:
    assert demo["plain_answer"].ends == [] and len(demo["plain_answer"].spans) == 2
    assert _statuses(demo["delegation"]) == [c.STATUS_COMPLETED]
    parallel = [
        s for s in demo["parallel_delegations"].spans if s.attributes.get(c.GEN_AI_TOOL_TYPE) == "delegate"
    ]
    assert len(parallel) == 2 and len({s.parent_span_id for s in parallel}) == 1
    assert [s.attributes[c.JANUX_HANDOFF_STATUS] for s in parallel] == [c.STATUS_COMPLETED] * 2
    retry = demo["retry_then_success"].ends
    assert [(e[c.JANUX_HANDOFF_STATUS], e[c.JANUX_HANDOFF_ATTEMPTS]) for e in retry] == [("completed", 2)]
    fallback = demo["timeout_then_fallback"]
    assert _statuses(fallback) == [c.STATUS_FALLBACK] and c.ERROR_TIMEOUT in fallback.error_types


@pytest.mark.parametrize("rule", sorted(c.DENY_REASONS))
def test_denial_by_each_rule(demo: dict[str, Seen], rule: str) -> None:
    denied = [e for e in demo[f"denied_{rule}"].ends if e[c.JANUX_HANDOFF_STATUS] == c.STATUS_DENIED]
    assert [e[c.JANUX_HANDOFF_DENY_REASON] for e in denied] == [rule]


@pytest.mark.parametrize("line", sorted(c.STOP_REASONS))
def test_budget_cut_by_each_line(demo: dict[str, Seen], line: str) -> None:
    seen = demo[f"cut_{line}"]
    assert [(e[c.JANUX_HANDOFF_STATUS], e[c.JANUX_HANDOFF_STOP_REASON]) for e in seen.ends] == [("cut", line)]
    attempts = [s for s in seen.spans if c.JANUX_HANDOFF_ATTEMPT in s.attributes]
    assert [s.attributes[c.JANUX_STOP_REASON] for s in attempts] == [line]


def _root(spans: Iterable[SpanRecord]) -> SpanRecord:
    return next(span for span in spans if not span.parent_span_id)


def test_transfer_nested_and_unpriced(demo: dict[str, Seen]) -> None:
    transfer = _root(demo["transfer_to_specialist"].spans).attributes
    assert (transfer[c.JANUX_HANDOFF_FROM], transfer[c.JANUX_HANDOFF_TO]) == ("triage", "billing")
    assert [e[c.JANUX_HANDOFF_KIND] for e in demo["transfer_to_specialist"].ends] == [c.KIND_TRANSFER]
    nested = demo["nested_delegation"]
    assert nested.max_depth == 2 and _statuses(nested) == [c.STATUS_COMPLETED] * 2
    unpriced = demo["unpriced_subagent"].spans
    bill = _root(unpriced).attributes
    assert bill[c.JANUX_BILL_UNPRICED_TOKENS] == 194 and isinstance(bill[c.JANUX_BILL_COST], float)
    checker_rounds = [s for s in unpriced if attr_str(s.attributes, c.GEN_AI_AGENT_NAME) == "fact_checker"]
    assert checker_rounds and all(c.JANUX_ROUND_COST not in s.attributes for s in checker_rounds)


def test_a_failing_scenario_fails_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A built-in scenario that raises is reported and turns the exit status to 1 (spans still written)."""
    import janux.demo.scenarios as scenarios
    from janux.cli.main import main

    async def broken(run: object) -> object:
        raise RuntimeError("scenario bug")

    monkeypatch.setitem(scenarios._SCENARIOS, "plain_answer", broken)
    out = tmp_path / "x.jsonl"
    args = ["demo", "--out", str(out), "--scenario", "plain_answer", "--scenario", "delegation"]
    assert main([*args, "--latency-scale", "0"]) == 1
    captured = capsys.readouterr()
    assert "plain_answer" in captured.err and "RuntimeError: scenario bug" in captured.out
    assert [row.outcome for row in report_rows(captured.out)] == ["error: RuntimeError: scenario bug", "ok"]
    assert out.read_text(encoding="utf-8").strip()
