"""Recorded cost estimates (`janux.*.cost_estimate`, written by integrations) in the reconstruction.

The contract trace's translator has no price; here a writer recorded an estimate for its round, its
loop and the bill. The estimate is shown as one (never as recorded cost, never as $0), its tokens
move from unpriced to estimated, and the checks hold the estimates to the accounting rule.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from janux.tracing import conventions as c
from janux.tracing.analysis import TraceView, reconstruct
from janux.tracing.analysis.report import trace_report
from janux.tracing.records import SpanRecord
from tests.support.contract_traces import TOTAL_COST, TOTAL_UNPRICED, contract_trace
from tests.support.demo_traces import demo_traces

ESTIMATE = 0.25
"""The translator round's recorded estimate (exact in binary floating point)."""
SOURCE = "genai-prices 9.9.9"


def _with_estimates(
    round_value: Any = ESTIMATE, turn_value: Any = ESTIMATE, bill_value: Any = ESTIMATE
) -> list[SpanRecord]:
    """The contract trace with the translator's estimates recorded as an integration writes them."""
    spans = contract_trace()
    translator = next(s for s in spans if s.name == "invoke_agent translator")
    out = []
    for span in spans:
        attrs = dict(span.attributes)
        if span.parent_span_id == translator.span_id and span.name.startswith("chat"):
            attrs.update({c.JANUX_ROUND_COST_ESTIMATE: round_value, c.JANUX_PRICE_SOURCE: SOURCE})
        elif span.span_id == translator.span_id:
            attrs[c.JANUX_TURN_COST_ESTIMATE] = turn_value
        elif not span.parent_span_id:
            attrs[c.JANUX_BILL_COST_ESTIMATE] = bill_value
        out.append(dataclasses.replace(span, attributes=attrs))
    return out


def _translator(view: TraceView) -> Any:
    return next(d for d in view.delegations if d.target == "translator")


def test_a_recorded_estimate_is_an_estimate_and_its_tokens_are_not_unpriced() -> None:
    view = reconstruct(_with_estimates())
    assert [chk for chk in view.checks if not chk.ok] == []
    usage = _translator(view).cost
    assert (usage.cost, usage.estimated_cost, usage.estimated_tokens, usage.unpriced_tokens) == (
        None, ESTIMATE, 100, 0,
    )  # fmt: skip
    node = view.nodes[view.delegations[_translator(view).index].attempts[0].node]
    assert node.own_source == "recorded" and node.own.estimated_cost == ESTIMATE
    total = view.total
    assert total is view.bill
    assert total.cost == pytest.approx(TOTAL_COST)  # the recorded cost is untouched
    assert (total.estimated_cost, total.estimated_tokens) == (ESTIMATE, 100)
    assert total.unpriced_tokens == TOTAL_UNPRICED - 100
    assert view.price_sources == [f"{SOURCE}, recorded in the trace"]
    report = trace_report(view)
    assert report["cost_kind"] == "estimated" and report["estimated_cost_usd"] == ESTIMATE
    assert report["recorded_cost_usd"] == pytest.approx(TOTAL_COST)


@pytest.mark.parametrize("damaged", [float("nan"), -1.0, "cheap", True, float("inf")])
def test_a_damaged_estimate_is_no_estimate_and_its_tokens_stay_unpriced(damaged: Any) -> None:
    view = reconstruct(_with_estimates(damaged, damaged, damaged))
    assert [chk for chk in view.checks if not chk.ok] == []
    usage = _translator(view).cost
    assert (usage.estimated_cost, usage.estimated_tokens, usage.unpriced_tokens) == (None, 0, 100)
    assert view.total.estimated_cost is None and view.total.unpriced_tokens == TOTAL_UNPRICED
    assert view.price_sources == []


def test_the_checks_hold_estimates_to_the_accounting_rule() -> None:
    view = reconstruct(_with_estimates(turn_value=0.5, bill_value=0.5))
    failed = {chk.name: chk for chk in view.checks if not chk.ok}
    assert set(failed) == {"turn_vs_rounds"}  # the bill equals the (wrong) turn: only the turn is off
    assert failed["turn_vs_rounds"].message.endswith("in cost_estimate")
    assert "estimate $0.250000" in failed["turn_vs_rounds"].expected
    assert "estimate $0.500000" in failed["turn_vs_rounds"].actual
    bill_off = reconstruct(_with_estimates(bill_value=1.0))
    assert {chk.name for chk in bill_off.checks if not chk.ok} == {"bill_vs_turns"}


def test_janux_runtime_traces_carry_no_estimate_at_all() -> None:
    """The runtime's own traces (demo data, contract trace): nothing estimated, unpriced as recorded."""
    demo = demo_traces()
    traces = [[s for s in demo.spans if s.trace_id == trace_id] for trace_id in demo.trace_ids.values()]
    views = [reconstruct(spans) for spans in [*traces, contract_trace()]]
    for view in views:
        assert view.price_sources == []
        for usage in [view.total, *(n.own for n in view.nodes), *(d.cost for d in view.delegations)]:
            assert usage.estimated_cost is None and usage.estimated_tokens == 0
        if view.bill is not None:
            (root,) = [s for s in view.index.spans if not s.parent_span_id]
            assert view.total.unpriced_tokens == root.attributes.get(c.JANUX_BILL_UNPRICED_TOKENS)
