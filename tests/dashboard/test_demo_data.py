"""Reconstruction and pages on real runtime traces: the demo scenarios, traced in memory.

The runtime writes, the dashboard reads: these tests fail when the two drift apart.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from janux.tracing import conventions as c
from janux.tracing.analysis import TraceView, reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import OpenPage, graph_text, show_section
from tests.dashboard.shown import rendered

Demo = tuple[list[SpanRecord], dict[str, str]]


@pytest.fixture(scope="module")
def views(demo: Demo) -> dict[str, TraceView]:
    spans, ids = demo
    by_trace: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    return {name: reconstruct(by_trace[trace_id]) for name, trace_id in ids.items()}


def test_every_scenario_reconciles(views: dict[str, TraceView]) -> None:
    for name, view in views.items():
        assert view.is_janux and view.bill is not None, name
        assert view.failed_checks == [], (name, view.failed_checks)
        assert view.issues.count() == 0, (name, view.issues)
        assert view.total.cost == pytest.approx(view.computed.cost), name


def test_retry_shows_two_attempts(views: dict[str, TraceView]) -> None:
    (delegation,) = views["retry_then_success"].delegations
    assert delegation.status == c.STATUS_COMPLETED
    assert [(a.number, a.status) for a in delegation.attempts] == [(1, "error"), (2, "ok")]
    assert delegation.attempts[0].error_type == c.ERROR_MODEL


def test_timeout_then_fallback(views: dict[str, TraceView]) -> None:
    (failure,) = views["timeout_then_fallback"].failures
    assert (failure.kind, failure.reason, failure.timeouts) == (c.STATUS_FALLBACK, c.ERROR_TIMEOUT, 1)
    assert failure.status == c.STATUS_FALLBACK
    assert (
        failure.has_kind("timeout") and failure.has_kind(c.STATUS_FALLBACK) and not failure.has_kind("failed")
    )


@pytest.mark.parametrize("rule", sorted(c.DENY_REASONS))
def test_each_deny_rule_is_named(views: dict[str, TraceView], rule: str) -> None:
    denied = [f for f in views[f"denied_{rule}"].failures if f.kind == c.STATUS_DENIED]
    assert [f.reason for f in denied] == [rule]
    assert denied[0].attempts == 0


@pytest.mark.parametrize("line", sorted(c.STOP_REASONS))
def test_each_budget_cut_is_named_with_its_burn(views: dict[str, TraceView], line: str) -> None:
    view = views[f"cut_{line}"]
    (failure,) = view.failures
    assert (failure.kind, failure.reason) == (c.STATUS_CUT, line)
    burns = [b for b in view.budgets if b.stop_reason == line]
    assert len(burns) == 1


def test_transfer_is_its_own_edge_kind(views: dict[str, TraceView]) -> None:
    view = views["transfer_to_specialist"]
    (transfer,) = view.delegations
    assert transfer.kind == "transfer" and transfer.status == c.STATUS_COMPLETED
    # One node per agent that held the conversation: triage, then billing after the transfer.
    caller, target = view.nodes
    assert (caller.agent, caller.transferred_to, target.agent, target.transferred_from) == (
        "triage", "billing", transfer.target, "triage",
    )  # fmt: skip
    assert [a.node for a in transfer.attempts] == [target.index] and view.attempts == 0


def test_nested_delegation_inclusive_cost(views: dict[str, TraceView]) -> None:
    view = views["nested_delegation"]
    assert [n.depth for n in view.nodes] == [0, 1, 2]
    top, middle, leaf = view.nodes
    assert middle.inclusive.total_tokens == middle.own.total_tokens + leaf.own.total_tokens
    assert top.inclusive.total_tokens == view.bill.total_tokens  # type: ignore[union-attr]


def test_unpriced_subagent_stays_unpriced(views: dict[str, TraceView]) -> None:
    view = views["unpriced_subagent"]
    sub = next(n for n in view.nodes if n.depth == 1)
    assert sub.own.cost is None and sub.own.unpriced_tokens == sub.own.total_tokens > 0
    assert view.total.unpriced_tokens == sub.own.unpriced_tokens
    assert not view.total.is_estimated


def _demo_store(tmp_path: Path, demo: Demo) -> Path:
    from janux.tracing.sources.store import open_store

    data_dir = tmp_path / "data"
    with open_store(data_dir) as store:
        store.write(demo[0])
    return data_dir


def test_pages_on_demo_data_in_the_embedded_store(
    open_page: OpenPage, demo: Demo, tmp_path: Path, monkeypatch: Any
) -> None:
    _, ids = demo
    monkeypatch.setenv("JANUX_DATA_DIR", str(_demo_store(tmp_path, demo)))
    at = open_page(None)
    table = next(e.value for e in at.dataframe if "checks" in e.value.columns)
    assert len(table) == min(len(ids), 50)
    assert set(table["checks"]) == {"✓ ok"}

    at = open_page(None, "trace.py", trace_id=ids["retry_then_success"])
    show_section(at, "Delegations & attempts")
    attempts = next(e.value for e in at.dataframe if "error.type" in e.value.columns)
    assert list(attempts["attempt"]) == [1, 2] and attempts["error.type"].tolist()[0] == c.ERROR_MODEL
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Attempts"] == "2"

    at = open_page(None, "failures.py")
    failures = next(e.value for e in at.dataframe if "task" in e.value.columns)
    denied = failures[failures["kind"] == "denied"]
    assert set(denied["reason"]) == set(c.DENY_REASONS)
    cut = failures[failures["kind"] == "cut"]
    assert set(cut["reason"]) == set(c.STOP_REASONS)

    at = open_page(None, "costs.py")
    assert {m.label: m.value for m in at.metric}["Traces"] == str(len(ids))


def test_pages_on_demo_data_in_memory(open_page: OpenPage, demo: Demo) -> None:
    spans, ids = demo
    source = MemoryTraceSource(spans)
    for page in ("traces.py", "costs.py", "failures.py"):
        open_page(source, page)
    open_page(source, "compare.py", a=ids["delegation"], b=ids["retry_then_success"])
    for name in ("dispatch_synthesize", "transfer_to_specialist", "nested_delegation"):
        at = open_page(source, "trace.py", trace_id=ids[name])
        assert [s.value for s in at.success] == ["All reconciliation checks pass."]


def test_failures_page_finds_the_timeout_that_ended_in_a_fallback(open_page: OpenPage, demo: Demo) -> None:
    spans, ids = demo
    at = open_page(MemoryTraceSource(spans), "failures.py")
    metrics = {m.label: m.value for m in at.metric}
    timed_out = [n for n, v in _views_of(spans).items() if any(f.timeouts for f in v.failures)]
    assert ids["timeout_then_fallback"] in timed_out
    assert metrics["timeout"] == str(len(timed_out)) != "0"
    assert "Timed out: 1 attempt in 1 handoff; final status: fallback 1." in [
        rendered(c.value) for c in at.caption
    ]
    table = next(e.value for e in at.dataframe if "timed-out attempts" in e.value.columns)
    row = table[table["trace"] == ids["timeout_then_fallback"]].iloc[0]
    assert (row["kind"], row["final status"], row["reason"], row["timed-out attempts"]) == (
        c.STATUS_FALLBACK,
        c.STATUS_FALLBACK,
        c.ERROR_TIMEOUT,
        1,
    )
    # Asking for timeouts only still finds it, although its kind is fallback.
    at.multiselect(key="failures_kinds").set_value(["timeout"]).run()
    table = next(e.value for e in at.dataframe if "timed-out attempts" in e.value.columns)
    assert list(table["trace"]) == [ids["timeout_then_fallback"]]


def _views_of(spans: list[SpanRecord]) -> dict[str, TraceView]:
    by_trace: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    return {trace_id: reconstruct(group) for trace_id, group in by_trace.items()}


def test_budget_burn_counts_the_rounds_the_loop_recorded(views: dict[str, TraceView]) -> None:
    view = views["timeout_then_fallback"]
    (burn,) = view.budgets
    attempt = view.nodes[burn.node]
    span = view.span(attempt.span_id)
    assert span is not None
    # The only round of the timed-out attempt never finished: the runtime records 0 rounds that
    # answered, and the tree shows the round that failed: a failed round is a round.
    assert span.attributes[c.JANUX_TURN_ROUNDS] == 0 and len(attempt.chat_spans) == 1
    assert burn.turns_used == 1
    for name in ("cut_max_turns", "cut_max_tokens", "cut_max_time", "delegation"):
        for burn in views[name].budgets:
            node = views[name].nodes[burn.node]
            recorded = views[name].span(node.span_id).attributes  # type: ignore[union-attr]
            assert burn.turns_used == max(recorded[c.JANUX_TURN_ROUNDS], len(node.chat_spans)), name


def test_trace_page_names_who_transferred_and_why_no_attempt(open_page: OpenPage, demo: Demo) -> None:
    spans, ids = demo
    at = open_page(MemoryTraceSource(spans), "trace.py", trace_id=ids["transfer_to_specialist"])
    show_section(at, "Delegations & attempts")
    delegations = next(e.value for e in at.dataframe if "attempt errors" in e.value.columns)
    # The loop's span carries the target's name after the transfer; the caller is the one handing off.
    assert list(delegations["caller"]) == ["triage"] and list(delegations["target"]) == ["billing"]
    assert any("transfer hands the conversation to billing" in rendered(i.value) for i in at.info)
    dot = graph_text(at)
    assert "completed · transfer" in dot and "1 attempt" not in dot
    (failure,) = [f for f in _views_of(spans)[ids["denied_max_depth"]].failures if f.kind == "denied"]
    assert failure.caller == "researcher"
