"""Presentation data: DOT collapse and escaping, waterfall, cost audit, compare, formatting."""

from __future__ import annotations

import dataclasses
import re

import pandas as pd
import pytest

from janux.dashboard.views.audit import audit
from janux.dashboard.views.compare import cost_diff, node_paths, tree_diff
from janux.dashboard.views.handoff_chart import handoff_frames
from janux.dashboard.views.timeline import waterfall
from janux.dashboard.views.usage_tables import NO_KEY, TOOL, total_usage, usage_frame
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis import reconstruct
from janux.tracing.sources.protocol import UsageAggregate
from janux.tracing.testing import RoundSpec, build_trace, synthetic_trace
from tests.support.contract_traces import TOTAL_COST, contract_root, contract_trace, plain_trace


def test_money_never_shows_unknown_as_zero() -> None:
    assert fmt.usd(None) == "unpriced"
    assert fmt.usd(0.0) == "$0.000000"
    assert fmt.usd(1.5) == "$1.500000"
    assert fmt.usd(0.002, estimated=True) == "≈ $0.002000 (est.)"
    assert fmt.ms(None) == "open" and fmt.ms(1234.4) == "1,234 ms"


def test_big_tree_is_collapsed_with_counts() -> None:
    view = reconstruct(synthetic_trace(10_000, seed=4))
    frames = handoff_frames(view, max_nodes=100)
    assert (frames.points["kind"] == "loop").sum() == 100
    more = frames.points[frames.points["kind"] == "more"]["detail"]
    assert sum(int(re.sub(r"\D", "", text)) for text in more) == frames.hidden == len(view.nodes) - 100
    assert (handoff_frames(view, max_nodes=len(view.nodes)).points["kind"] != "more").all()


def test_waterfall_handoff_mode_and_row_limit() -> None:
    view = reconstruct(contract_trace())
    handoffs = waterfall(view)
    assert set(handoffs.rows["kind"]) == {"agent", "delegation"}
    assert handoffs.hidden == len(view.index.spans) - len(handoffs.rows)
    every = waterfall(view, mode="all", max_rows=5)
    assert len(every.rows) == 5 and every.hidden == len(view.index.spans) - 5
    assert (every.rows["end_ms"] >= every.rows["start_ms"]).all()


def test_audit_separates_recorded_estimated_and_unpriced() -> None:
    views = [reconstruct(contract_trace(seed=1)), reconstruct(plain_trace())]
    result = audit(views)
    assert result.traces == 2
    assert result.total.cost == pytest.approx(TOTAL_COST)
    assert result.total.estimated_cost is not None and result.total.estimated_cost > 0
    assert result.total.unpriced_tokens == 100 + 400
    agents = result.inclusive_by_agent.set_index("agent")
    assert agents.loc["planner", "loops"] == 2
    assert agents.loc["planner", "inclusive cost USD"] == pytest.approx(TOTAL_COST)
    assert agents.loc["planner", "inclusive estimated USD"] > 0  # the other runtime's planner
    assert agents.loc["researcher", "own cost USD"] == pytest.approx(0.5625)
    assert agents.loc["translator", "inclusive cost USD"] == cells.UNPRICED  # tokens, no price: never $0
    assert list(agents.index[:2]) == ["planner", "researcher"]  # highest inclusive cost first
    assert result.top_delegations.iloc[0]["delegation tool"] == "delegate.researcher"


def test_usage_frame_cells() -> None:
    def group(
        key: str, tokens: tuple[int | None, int | None, int | None], cost: float | None
    ) -> UsageAggregate:
        inputs, outputs, unpriced = tokens
        return UsageAggregate(
            key=key,
            count=1,
            failed=0,
            input_tokens=inputs,
            output_tokens=outputs,
            cost=cost,
            unpriced_tokens=unpriced,
        )

    groups = [
        group("a", (10, 5, 0), 0.5),
        group("", (7, 3, None), None),
        group("c", (None, None, None), None),
    ]
    frame = usage_frame(groups, TOOL).set_index("delegation tool")
    assert frame.loc["a", "cost USD"] == 0.5
    assert frame.loc[NO_KEY, "cost USD"] == cells.UNPRICED  # tokens without a recorded price
    assert pd.isna(frame.loc["c", "cost USD"]) and pd.isna(frame.loc["c", "input tokens"])  # nothing used
    assert frame["input tokens"].dtype == "Int64" and frame["cost USD"].dtype == "float64"
    total = total_usage(groups)
    assert (total.cost, total.input_tokens, total.output_tokens, total.unpriced_tokens) == (0.5, 17, 8, 0)
    assert total_usage(groups[1:]).cost is None  # nothing priced: unknown, not 0


def test_compare_paths_and_changes() -> None:
    a = reconstruct(contract_trace())
    assert list(node_paths(a)) == [
        "planner",
        "planner/delegate.researcher[1]#1",
        "planner/delegate.researcher[1]#2",
        "planner/delegate.writer[1]#1",
        "planner/delegate.translator[1]#1",
    ]
    root = contract_root()
    root.delegations[3].attempts[0].rounds.append(RoundSpec(10, 1, 0.5))
    root.delegations = root.delegations[:4]
    b = reconstruct(build_trace(root, seed=3))
    diff = tree_diff(a, b).set_index("loop")
    assert diff.loc["planner/delegate.translator[1]#1", "change"] == "changed"
    assert diff.loc["planner/delegate.writer[1]#1", "change"] == "same"
    costs = cost_diff(a, b).set_index("measure")
    assert costs.loc["cost", "B − A"] == "+$0.500000"
    assert costs.loc["delegations", "B − A"] == "-1"


def test_unpriced_cost_diff_is_unknown() -> None:
    spans = [dataclasses.replace(s) for s in contract_trace()]
    a = reconstruct(spans)
    b = reconstruct(plain_trace(), estimate=False)
    costs = cost_diff(a, b).set_index("measure")
    assert (costs.loc["cost", "B"], costs.loc["cost", "B − A"]) == (fmt.UNPRICED, fmt.UNPRICED)


def test_waterfall_chart_gives_every_row_room_for_its_label() -> None:
    from janux.dashboard.views.timeline import ERROR_OUTLINE, ROW_STEP_PX, waterfall_chart

    fall = waterfall(reconstruct(contract_trace()), mode="all")
    spec = waterfall_chart(fall).to_dict()
    assert spec["height"] == {"step": ROW_STEP_PX}  # grows with the rows instead of squeezing them
    assert spec["encoding"]["y"]["axis"]["labelOverlap"] is False
    assert spec["encoding"]["stroke"]["condition"]["value"] == ERROR_OUTLINE
    assert len(spec["datasets"][spec["data"]["name"]]) == len(fall.rows)


def test_loop_status_names_the_error_and_the_budget_line() -> None:
    from janux.dashboard.views.tables import nodes_frame

    frame = nodes_frame(reconstruct(contract_trace())).set_index("loop")
    assert frame.loc["    researcher #1", "status"] == "error: timeout"
    assert frame.loc["    writer #1", "status"] == "cut: max_turns"
    assert frame.loc["planner", "status"] == "ok"
