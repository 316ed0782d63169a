"""The Costs page's exact figures: the source's `usage_by` aggregates agree with the rebuilt traces.

On the demo scenarios (real runtime traces) the store's aggregates over the whole range must give
the same numbers as rebuilding every trace: totals equal the sum of the bills, each agent's own
usage equals its rebuilt loops', each delegation tool's usage equals its attempts' own usage, each
model's usage equals its rounds'. The page then shows those exact figures even when it rebuilds
only the newest few traces.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from janux.dashboard.views.usage_tables import AGENT, total_usage, usage_frame
from janux.tracing import conventions as c
from janux.tracing.analysis import TraceView, Usage, reconstruct
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis.costs import rounds_usage
from janux.tracing.records import SpanRecord, attr_str
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter, TraceSource, UsageAggregate
from tests.dashboard.app_helpers import OpenPage
from tests.dashboard.shown import rendered, shown
from tests.support.contract_traces import TOTAL_COST, contract_trace, plain_trace

Demo = tuple[list[SpanRecord], dict[str, str]]
ALL = TraceFilter()


@pytest.fixture(scope="module")
def rebuilt(demo: Demo) -> list[TraceView]:
    by_trace: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in demo[0]:
        by_trace[span.trace_id].append(span)
    return [reconstruct(spans) for spans in by_trace.values()]


@pytest.fixture(scope="module", params=["memory", "store"])
def demo_source(
    request: pytest.FixtureRequest, demo: Demo, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TraceSource]:
    """The demo traces in an in-memory source and in the embedded store."""
    if request.param == "memory":
        yield MemoryTraceSource(demo[0])
        return
    from janux.tracing.sources.store import open_store

    with open_store(tmp_path_factory.mktemp("costs-store")) as store:
        store.write(demo[0])
        yield store


def _same_usage(group: UsageAggregate, usage: Usage, what: str) -> None:
    """A group's sums equal a rebuilt usage (a missing count is 0 there, a missing cost None)."""
    assert (group.input_tokens or 0, group.output_tokens or 0) == (usage.input_tokens, usage.output_tokens), (
        what
    )
    assert (group.unpriced_tokens or 0) == usage.unpriced_tokens, what
    if usage.cost is None:
        assert group.cost is None, what
    else:
        assert group.cost is not None and math.isclose(group.cost, usage.cost, rel_tol=1e-9), what


def test_totals_equal_the_sum_of_the_rebuilt_bills(
    demo_source: TraceSource, rebuilt: list[TraceView]
) -> None:
    groups = demo_source.usage_by("conversation", ALL, limit=10_000)
    bills = Usage()
    for view in rebuilt:
        assert view.bill is not None  # every demo scenario is a janux turn with a bill
        bills.add(view.bill)
    total = total_usage(groups)
    assert sum(g.count for g in groups) == len(rebuilt)
    assert (total.input_tokens, total.output_tokens, total.unpriced_tokens) == (
        bills.input_tokens,
        bills.output_tokens,
        bills.unpriced_tokens,
    )
    assert total.cost == pytest.approx(bills.cost, rel=1e-9)
    assert bills.unpriced_tokens > 0  # the demo has an unpriced subagent: the check is not vacuous


def test_own_usage_by_agent_equals_the_rebuilt_loops(
    demo_source: TraceSource, rebuilt: list[TraceView]
) -> None:
    own: dict[str, Usage] = defaultdict(Usage)
    loops: dict[str, int] = defaultdict(int)
    for view in rebuilt:
        for node in view.nodes:
            own[node.agent].add(node.own)
            loops[node.agent] += 1
    groups = {g.key: g for g in demo_source.usage_by("agent", ALL)}
    assert set(groups) == set(own) and len(groups) > 3
    for agent, usage in own.items():
        assert groups[agent].count == loops[agent], agent
        _same_usage(groups[agent], usage, agent)


def test_usage_by_tool_equals_the_attempts_own_usage(
    demo_source: TraceSource, rebuilt: list[TraceView]
) -> None:
    per_tool: dict[str, Usage] = defaultdict(Usage)
    calls: dict[str, int] = defaultdict(int)
    for view in rebuilt:
        for d in view.delegations:
            if d.kind != c.KIND_DELEGATE or d.tool_span_id is None:
                continue
            calls[d.tool] += 1
            for attempt in d.attempts:
                per_tool[d.tool].add(view.nodes[attempt.node].own)
    groups = {g.key: g for g in demo_source.usage_by("tool", ALL)}
    assert set(groups) == set(calls) and len(groups) > 1
    for tool, count in calls.items():
        assert groups[tool].count == count, tool
        _same_usage(groups[tool], per_tool[tool], tool)


def test_usage_by_model_equals_the_rounds(demo_source: TraceSource, rebuilt: list[TraceView]) -> None:
    rounds: dict[str, list[int]] = defaultdict(list)
    per_model: dict[str, Usage] = {}
    for view in rebuilt:
        positions: dict[str, list[int]] = defaultdict(list)
        for node in view.nodes:
            for pos in node.chat_spans:
                span = view.index.spans[pos]
                positions[attr_str(span.attributes, c.GEN_AI_REQUEST_MODEL) or ""].append(pos)
        for model, found in positions.items():
            rounds[model] += found
            per_model.setdefault(model, Usage()).add(rounds_usage(view.index, found, estimate=False))
    groups = {g.key: g for g in demo_source.usage_by("model", ALL)}
    assert set(groups) == set(per_model) and len(groups) > 1
    for model, usage in per_model.items():
        assert groups[model].count == len(rounds[model]), model
        _same_usage(groups[model], usage, model)


def _metrics(at: Any) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _helps(at: Any) -> dict[str, str]:
    return {m.label: m.proto.help for m in at.metric}


def _table(at: Any, *columns: str) -> Any:
    found = [e for e in at.dataframe if set(columns) <= set(e.value.columns)]
    assert len(found) == 1, columns
    return found[0]


def test_page_totals_cover_traces_older_than_the_rebuilt_ones(
    open_page: OpenPage, demo: Demo, rebuilt: list[TraceView]
) -> None:
    """Rebuilding only the newest 5 traces leaves the exact figures whole, and says so."""
    source = MemoryTraceSource(demo[0])
    at = open_page(source, "costs.py")
    at.number_input(key="costs_limit").set_value(5).run()
    assert not at.exception
    metrics = _metrics(at)
    bills = Usage()
    for view in rebuilt:
        bills.add(view.total)
    assert metrics["Traces"] == str(len(rebuilt))
    # Nothing estimated (the demo's unpriced model is in no price table): "—", never "unpriced".
    assert all(view.total.estimated_cost is None for view in rebuilt)
    assert metrics["Estimated cost (rounds without a recorded price)"] == cells.MISSING
    # Headlines read short (never cut with "…"), the exact figure in their help.
    helps = _helps(at)
    assert metrics["Recorded cost"] == fmt.compact_usd(bills.cost) == "$0.0396"
    assert helps["Recorded cost"].startswith(f"Exact: {fmt.usd(bills.cost)}")
    assert metrics["Unpriced tokens"] == fmt.compact_count(bills.unpriced_tokens)
    assert metrics["Tokens"] == "32.9K in" and bills.input_tokens == 32_870
    assert helps["Tokens"] == f"Exact: {bills.input_tokens:,} in / {bills.output_tokens:,} out"
    notes = [rendered(i.value) for i in at.info]
    assert any(f"Rebuilt from the newest 5 of {len(rebuilt)} traces in the range" in n for n in notes)
    # The own-cost table is the store's, over every trace; the inclusive one only the newest 5.
    by_agent = _table(at, "agent", "failed loops").value.set_index("agent")
    expected = usage_frame(source.usage_by("agent", ALL, limit=1_000), AGENT).set_index("agent")
    pd.testing.assert_frame_equal(by_agent, expected)
    inclusive = _table(at, "agent", "inclusive cost USD").value
    assert inclusive["loops"].sum() < by_agent["loops"].sum()


def test_page_separates_priced_unpriced_and_estimated(open_page: OpenPage) -> None:
    source = MemoryTraceSource(
        contract_trace(seed=1) + contract_trace(seed=5, conversation_id="conv-2") + plain_trace()
    )
    at = open_page(source, "costs.py")
    metrics = _metrics(at)
    assert metrics["Recorded cost"] == fmt.compact_usd(2 * TOTAL_COST)
    # The other runtime's rounds record no price: unpriced in the exact totals, estimated apart.
    plain_tokens = sum(r.input_tokens + r.output_tokens for r in _plain_rounds())
    assert metrics["Unpriced tokens"] == f"{2 * 100 + plain_tokens:,}"
    assert metrics["Estimated cost (rounds without a recorded price)"].startswith("≈ $")
    agents = shown(_table(at, "agent", "failed loops")).set_index("agent")
    assert agents.loc["translator", "own cost USD"] == fmt.UNPRICED
    assert agents.loc["planner", "own cost USD"] == cells.money_text(2 * 0.375)
    tools = shown(_table(at, "delegation tool", "delegations")).set_index("delegation tool")
    # A denied delegation runs no loop: nothing used, so "—" and not "unpriced" or "$0".
    assert tools.loc["delegate.coder", "cost USD"] == cells.MISSING
    assert tools.loc["delegate.coder", "input tokens"] == cells.MISSING
    assert tools.loc["delegate.translator", "cost USD"] == fmt.UNPRICED
    assert tools.loc["delegate.translator", "unpriced tokens"] == "200"
    models = shown(_table(at, "model", "rounds")).set_index("model")
    assert models.loc["local-llm", "cost USD"] == fmt.UNPRICED
    conversations = _table(at, "conversation", "traces").value.set_index("conversation")
    assert conversations.loc["conv-2", "cost USD"] == TOTAL_COST
    top = _table(at, "delegation tool", "inclusive cost USD").value
    assert top.iloc[0]["delegation tool"] == "delegate.researcher"
    estimated = shown(_table(at, "agent", "inclusive cost USD")).set_index("agent")
    assert estimated.loc["planner", "inclusive estimated USD"].startswith("≈ $")


def _plain_rounds() -> list[Any]:
    from tests.support.contract_traces import plain_root

    root = plain_root()
    found = list(root.rounds)
    for d in root.delegations:
        for attempt in d.attempts:
            found += attempt.rounds
    return found


def test_every_table_has_a_csv_that_spells_out_unpriced(open_page: OpenPage, demo: Demo) -> None:
    at = open_page(MemoryTraceSource(demo[0]), "costs.py")
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == [
        "Download by agent (own) (CSV)",
        "Download by delegation tool (CSV)",
        "Download by model (CSV)",
        "Download by conversation (CSV)",
        "Download cost over time by agent (CSV)",
        "Download tokens over time by agent (CSV)",
        "Download inclusive cost and tokens by delegation path (CSV)",
        "Download inclusive cost by agent (CSV)",
        "Download most expensive delegations (CSV)",
        "Download the what-if (CSV)",
    ]
    # The buttons offer `cells.csv_bytes(table)`; read one back as a spreadsheet would.
    frame = _table(at, "agent", "failed loops").value
    rows = pd.read_csv(io.BytesIO(cells.csv_bytes(frame)), keep_default_na=False).set_index("agent")
    assert rows.loc["fact_checker", "own cost USD"] == fmt.UNPRICED  # no price known: never 0
    assert float(rows.loc["triage", "own cost USD"]) == pytest.approx(
        frame.set_index("agent").loc["triage", "own cost USD"]
    )
    tools = _table(at, "delegation tool", "delegations").value
    assert len(pd.read_csv(io.BytesIO(cells.csv_bytes(tools)))) == len(tools)


def test_empty_range_says_so(open_page: OpenPage) -> None:
    at = open_page(MemoryTraceSource([]), "costs.py")
    assert _metrics(at)["Traces"] == "0"
    assert _metrics(at)["Recorded cost"] == cells.MISSING
    assert [i.value for i in at.info].count("Nothing in this range.") == 5


@pytest.mark.parametrize("kind", ["memory", "store"])
def test_costs_and_traces_count_the_same_failed_traces(
    open_page: OpenPage, demo: Demo, kind: str, tmp_path: Any
) -> None:
    """One meaning per number: a failed trace holds a failed handoff (`outcomes.is_failed_handoff`);
    the Costs page's count, per conversation and in total, is the Traces list's. A retried handoff
    that completed (error spans, no failed handoff) is not a failed trace; a cut one (no error span)
    is."""
    spans, names = demo
    if kind == "memory":
        source: Any = MemoryTraceSource(spans)
    else:
        from janux.tracing.sources.store import open_store

        source = open_store(tmp_path)
        source.write(spans)
    traces = _table(open_page(source, "traces.py"), "conversation", "failed handoffs", "status").value
    listed = traces.assign(failed=traces["failed handoffs"] > 0).groupby("conversation")["failed"].sum()
    assert (traces["status"] == "failed").sum() == listed.sum()  # the list's status says the same
    costs = open_page(source, "costs.py")
    by_conversation = _table(costs, "conversation", "traces with failed handoffs").value
    counted = by_conversation.set_index("conversation")["traces with failed handoffs"]
    assert counted.sort_index().to_dict() == listed.sort_index().astype(int).to_dict()
    assert _metrics(costs)["Traces with failed handoffs"] == str(listed.sum())
    conversation_of = dict(zip(traces["trace"], traces["conversation"], strict=True))
    assert counted[conversation_of[names["retry_then_success"]]] == 0
    assert counted[conversation_of[names["cut_max_tokens"]]] == 1
    if kind == "store":
        source.close()
