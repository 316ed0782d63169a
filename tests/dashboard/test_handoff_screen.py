"""AppTest of the failed-handoff screen on the demo traces: every kind explained the same way."""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import OpenPage
from tests.dashboard.shown import rendered

Demo = tuple[list[Any], dict[str, str]]

BANNERS = {
    "failed_delegation": "Decided by error: rate_limited (attempt 1)",
    "denied_denied_tools": "Decided by rule: denied_tools",
    "cut_max_turns": "Decided by budget line: max_turns (attempt 1)",
    "timeout_then_fallback": "Decided by error: timeout (attempt 1)",
    "retry_then_success": "Decided by error: model_error (attempt 1)",
}
"""The banner each demo scenario's handoff gets (from the issue: only the budget cut had one)."""


def _open(open_page: OpenPage, demo: Demo, scenario: str) -> AppTest:
    trace_id = demo[1][scenario]
    view = reconstruct([s for s in demo[0] if s.trace_id == trace_id])
    span_id = view.delegations[-1].tool_span_id
    assert span_id is not None
    return open_page(MemoryTraceSource(demo[0]), "handoff.py", trace_id=trace_id, span_id=span_id)


@pytest.mark.parametrize("scenario", sorted(BANNERS))
def test_every_kind_of_failed_handoff_gets_a_decided_by_banner(
    open_page: OpenPage, demo: Demo, scenario: str
) -> None:
    at = _open(open_page, demo, scenario)
    banners = [rendered(e.value) for e in at.error]
    assert len(banners) == 1 and banners[0].startswith(BANNERS[scenario]), banners


def test_a_cut_attempt_reads_cut_and_an_edge_without_other_failures_says_so(
    open_page: OpenPage, demo: Demo
) -> None:
    at = _open(open_page, demo, "cut_max_turns")
    attempts = next(e.value for e in at.dataframe if {"attempt", "status"} <= set(e.value.columns))
    assert list(attempts["status"]) == ["cut: max_turns"]  # was "ok"
    assert any("No other failures of this edge" in rendered(c.value) for c in at.caption)
    assert not [e for e in at.dataframe if {"started (UTC)", "trace"} <= set(e.value.columns)]


def test_a_failed_round_without_usage_says_so(open_page: OpenPage, demo: Demo) -> None:
    at = _open(open_page, demo, "failed_delegation")
    rounds = [t.value for t in at.text if t.value.startswith("model ")]
    assert rounds == ["model gpt-4o · tokens: no usage reported"]  # was "tokens in — · out —"


def test_an_attempt_without_a_time_budget_reads_its_own_time(open_page: OpenPage, demo: Demo) -> None:
    # From the issue: attempt 1 (7.6 ms) and attempt 2 (12 ms) both read the delegation's "20 (no limit)".
    trace_id = demo[1]["retry_then_success"]
    view = reconstruct([s for s in demo[0] if s.trace_id == trace_id])
    delegation = view.delegations[0]
    nodes = {a.node: a for a in delegation.attempts}
    burns = [b for b in view.budgets if b.node in nodes and b.max_ms is None]
    assert burns, "the demo's retried delegation has a budget without a time limit"
    for burn in burns:
        assert burn.ms_used == nodes[burn.node].duration_ms
