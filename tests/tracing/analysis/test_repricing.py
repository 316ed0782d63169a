"""The range repricing ("this range if researcher ran on X"), hand-computed on a small range.

The range is the contract trace (planner, researcher with two attempts, writer, translator without
a price) and another runtime's trace with nothing priced (planner and researcher again). Every
amount below is worked out from the fixture's round specs, not read back from the code.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from janux.tracing.analysis import figures
from janux.tracing.analysis.facts import UsageAggregate
from janux.tracing.analysis.repricing import RepricingError, reprice_agent
from janux.tracing.prices import TokenPrice, flat_list_prices
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from tests.support.contract_traces import contract_trace, plain_trace

CUSTOM = TokenPrice("custom", Decimal("0.15"), Decimal("0.60"))
# Own usage per agent, from the round specs of tests/support/contract_traces.py:
# researcher: contract 200+300 in, 0+40 out (priced $0.0625 + $0.5);
# other runtime 400+300 in, 0+60 out (unpriced)
RESEARCHER_IN, RESEARCHER_OUT, RESEARCHER_UNPRICED = 500 + 700, 40 + 60, 700 + 60
# planner: contract 1000+500 in, 100+50 out ($0.25 + $0.125); other runtime 1500 in, 300 out (unpriced)
PLANNER_UNPRICED = 1500 + 300
WRITER_COST = Decimal("0.125")  # two rounds of $0.0625
TRANSLATOR_IN, TRANSLATOR_OUT = 70, 30  # no price
RECORDED = Decimal("0.0625") + Decimal("0.5") + Decimal("0.25") + Decimal("0.125") + WRITER_COST


@pytest.fixture(scope="module")
def agents() -> list[UsageAggregate]:
    return MemoryTraceSource(contract_trace() + plain_trace()).usage_by("agent", TraceFilter())


def test_the_picked_agent_is_priced_in_full_and_the_rest_kept_as_recorded(
    agents: list[UsageAggregate],
) -> None:
    result = reprice_agent(agents, "researcher", CUSTOM)
    researcher = (
        Decimal(RESEARCHER_IN) * Decimal("0.15") / 10**6 + Decimal(RESEARCHER_OUT) * Decimal("0.60") / 10**6
    )
    assert researcher == Decimal("0.00024")
    unpriced = RESEARCHER_UNPRICED + PLANNER_UNPRICED + TRANSLATOR_IN + TRANSLATOR_OUT
    assert result.recorded == figures.money(RECORDED, unpriced_tokens=unpriced)
    assert result.recorded.value == Decimal("1.062500")
    kept = RECORDED - Decimal("0.5625")  # researcher's recorded cost leaves the bill
    assert result.repriced == figures.money(kept + researcher, unpriced_tokens=PLANNER_UNPRICED + 100)
    assert result.repriced.value == Decimal("0.500240")
    assert result.difference.value == Decimal("-0.562260")
    # The researcher's tokens of the other runtime had no price: the what-if prices them.
    assert result.newly_priced_tokens == RESEARCHER_UNPRICED
    assert result.still_unpriced == ("planner", "translator")
    rows = {row.agent: row for row in result.rows}
    assert rows["researcher"].picked and rows["researcher"].repriced == figures.money(researcher)
    assert rows["researcher"].recorded == figures.money(
        Decimal("0.5625"), unpriced_tokens=RESEARCHER_UNPRICED
    )
    for name in ("planner", "writer", "translator"):
        assert rows[name].repriced == rows[name].recorded and not rows[name].picked
    assert figures.page_text(rows["translator"].repriced) == "unpriced"
    assert figures.page_text(result.repriced) == "$0.500240 + 1,900 unpriced tokens"


def test_an_unpriced_agent_is_priced_only_by_the_what_if(agents: list[UsageAggregate]) -> None:
    result = reprice_agent(agents, "translator", CUSTOM)
    translator = Decimal("0.0000105") + Decimal("0.000018")  # 70 x 0.15 + 30 x 0.60, per million
    assert result.repriced.value == RECORDED + translator == Decimal("1.0625285")
    assert result.newly_priced_tokens == TRANSLATOR_IN + TRANSLATOR_OUT
    assert result.still_unpriced == ("researcher", "planner")
    assert result.repriced.unpriced_tokens == RESEARCHER_UNPRICED + PLANNER_UNPRICED


def test_amounts_are_exact_where_floats_are_not(agents: list[UsageAggregate]) -> None:
    # 0.1 and 0.3 have no exact binary form: writer's 200 in and 20 out priced per round in floats
    # come to 2.6000000000000002e-05.
    assert 200 * 0.1 / 1e6 + 20 * 0.3 / 1e6 != 0.000026
    result = reprice_agent(agents, "writer", TokenPrice("custom", Decimal("0.1"), Decimal("0.3")))
    writer = next(row for row in result.rows if row.agent == "writer")
    assert writer.repriced.value == Decimal("0.000026")
    assert figures.csv_value(writer.repriced) == "0.000026"


def test_usage_that_could_not_be_read_stays_unknown() -> None:
    unread = UsageAggregate(
        key="scout", count=1, failed=0, input_tokens=None, output_tokens=None, cost=None,
        unpriced_tokens=None, unread=1,
    )  # fmt: skip
    priced = UsageAggregate(
        key="triage", count=2, failed=0, input_tokens=1000, output_tokens=100, cost=0.25, unpriced_tokens=0
    )
    result = reprice_agent([priced, unread], "scout", CUSTOM)
    scout = next(row for row in result.rows if row.agent == "scout")
    assert scout.repriced.state is figures.State.UNKNOWN and scout.recorded.state is figures.State.UNKNOWN
    assert scout.input_tokens.state is figures.State.UNKNOWN
    assert result.unread == ("scout",) and result.repriced.value == Decimal("0.250000")


def test_a_price_from_the_table_is_its_list_price() -> None:
    (mini,) = [p for p in flat_list_prices() if p.name == "openai · gpt-4o-mini"]
    assert (mini.input_per_mtok, mini.output_per_mtok) == (Decimal("0.15"), Decimal("0.6"))
    assert mini.cost(1_000_000, 1_000_000) == Decimal("0.75")


def test_bad_what_ifs_are_named(agents: list[UsageAggregate]) -> None:
    with pytest.raises(RepricingError, match="the range has no agent 'nobody'"):
        reprice_agent(agents, "nobody", CUSTOM)
    with pytest.raises(RepricingError, match="must be >= 0"):
        reprice_agent(agents, "writer", TokenPrice("custom", Decimal("-1"), Decimal("0")))
