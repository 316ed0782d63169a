"""The documented example, end to end: its process sends OTLP to a real `janux collect` process on
free ports; the traces stored in the embedded store rebuild to the handoff tree, attempts and exact
per-delegation costs, and pass the contract checker and the dashboard's checks."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from janux.tracing import conventions as c
from janux.tracing.analysis import reconstruct
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from tests.support.contract_checker import contract_problems
from tests.support.otlp_build import start_collect
from tests.support.paths import REPO_ROOT
from tests.support.wait import wait_until

EXAMPLE = REPO_ROOT / "docs" / "examples" / "openai_agents_support_desk.py"

PRICES = {"triage": (0.15, 0.60), "researcher": (2.50, 10.00), "billing": (0.15, 0.60)}
"""The example's Cost per agent (USD per million input, output tokens)."""


def _price(agent: str, input_tokens: int, output_tokens: int) -> float:
    per_in, per_out = PRICES[agent]
    return (input_tokens * per_in + output_tokens * per_out) / 1e6


@pytest.mark.slow
def test_example_traces_reach_janux_collect_with_tree_attempts_and_costs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    collector, http_port, _ = start_collect(data, "--workers", "1")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
        done = subprocess.run(
            [sys.executable, str(EXAMPLE), "--endpoint", f"http://127.0.0.1:{http_port}"],
            cwd=tmp_path,  # from anywhere, not only the repository root
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "conv-refund: billing answered 'Done: your $120 refund is on its way.'" in done.stdout
        assert (
            "(2630 input / 92 output tokens)" in done.stdout
            and "(830 input / 59 output tokens)" in done.stdout
        )
        with open_store(data) as store:
            wait_until(lambda: store.count_traces(TraceFilter()) == 2, what="both conversations stored")
            summaries = {s.conversation_id: s for s in store.list_traces(TraceFilter())}
            spans = {conv: store.get_trace(s.trace_id) for conv, s in summaries.items()}
    finally:
        collector.send_signal(signal.SIGTERM)
        collector.communicate(timeout=60)
    for records in spans.values():
        assert contract_problems(records) == []
        assert [check for check in reconstruct(records).checks if not check.ok] == []
    _check_refund(reconstruct(spans["conv-refund"]))
    _check_denied(reconstruct(spans["conv-double-charge"]))
    assert summaries["conv-refund"].service_name == "support-desk"
    assert (summaries["conv-refund"].bill_input_tokens, summaries["conv-refund"].bill_output_tokens) == (
        2630,
        92,
    )


def _check_refund(view: object) -> None:
    """triage -> researcher (delegation, 1 attempt) -> billing (transfer), every cent exact."""
    # A loop that transferred is one node per agent that held the conversation (agent segments):
    # triage, whose delegation the researcher ran, then billing.
    nodes = [(n.agent, n.depth) for n in view.nodes]  # type: ignore[attr-defined]
    assert nodes == [("triage", 0), ("researcher", 1), ("billing", 0)]
    research, transfer = view.delegations  # type: ignore[attr-defined]
    assert (research.kind, research.target, research.status) == ("delegate", "researcher", c.STATUS_COMPLETED)
    assert [a.number for a in research.attempts] == [1]
    assert math.isclose(research.cost.cost, _price("researcher", 420, 9), rel_tol=1e-12)
    assert (transfer.kind, transfer.target, transfer.status) == ("transfer", "billing", c.STATUS_COMPLETED)
    bill = (
        _price("triage", 400, 30)
        + _price("triage", 520, 14)
        + _price("researcher", 420, 9)
        + _price("billing", 610, 18)
        + _price("billing", 680, 21)
    )
    assert math.isclose(view.bill.cost, bill, rel_tol=1e-12)  # type: ignore[attr-defined]
    assert (view.total.input_tokens, view.total.output_tokens) == (2630, 92)  # type: ignore[attr-defined]


def _check_denied(view: object) -> None:
    """The researcher's guardrail refused the card number: a denied delegation, triage answered."""
    (research,) = view.delegations  # type: ignore[attr-defined]
    assert (research.status, research.deny_reason) == (c.STATUS_DENIED, c.DENY_GUARDRAIL)
    assert [f.status for f in view.failures] == [c.STATUS_DENIED]  # type: ignore[attr-defined]
    assert math.isclose(view.bill.cost, _price("triage", 380, 33) + _price("triage", 450, 26), rel_tol=1e-12)  # type: ignore[attr-defined]
