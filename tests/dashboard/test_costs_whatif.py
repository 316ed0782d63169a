"""The Costs page's what-if ("this range if researcher ran on X"), driven through its controls.

The range is the contract trace and another runtime's trace (tests/support/contract_traces.py);
the amounts are the ones tests/tracing/analysis/test_repricing.py works out by hand. The page
shows the same table on the embedded store and on ClickHouse's derived tables (chdb).
"""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from janux.dashboard.views.repricing_table import repricing_csv
from janux.tracing.analysis.repricing import reprice_agent
from janux.tracing.prices import TokenPrice
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from tests.dashboard.app_helpers import OpenPage
from tests.dashboard.shown import rendered
from tests.support.contract_traces import contract_trace, plain_trace
from tests.support.three_sources import derived_clickhouse

WHAT_IF_COLUMNS = ["agent", "what-if cost", "what if"]


@pytest.fixture
def costs(open_page: OpenPage) -> AppTest:
    return open_page(MemoryTraceSource(contract_trace() + plain_trace()), "costs.py")


def _pick(at: AppTest, **values: object) -> AppTest:
    """Set the what-if's controls one after another, as a person would (each change reruns)."""
    widgets = {"agent": at.selectbox, "model": at.selectbox, "kind": at.radio}
    for name, value in values.items():
        elements = widgets.get(name, at.number_input)
        elements(key=f"costs_whatif_{name}").set_value(value).run()
        assert not at.exception, at.exception
    return at


def _help(at: AppTest, label: str) -> str:
    (metric,) = [m for m in at.metric if rendered(m.label) == label]
    return str(metric.proto.help)


def _captions(at: AppTest) -> list[str]:
    return [rendered(c.value) for c in at.caption]


def _what_if(at: AppTest) -> pd.DataFrame:
    (table,) = [d.value for d in at.dataframe if set(WHAT_IF_COLUMNS) <= set(d.value.columns)]
    return table.set_index("agent")


def test_a_model_from_the_price_table_reprices_the_agent(costs: AppTest) -> None:
    at = _pick(costs, agent="researcher", kind="A model from the price table", model="openai · gpt-4o-mini")
    assert _help(at, "Recorded") == "Exact: $1.062500 + 2,660 unpriced tokens"
    repriced = _help(at, "If researcher ran at openai · gpt-4o-mini")
    assert repriced.startswith("Exact: $0.500240 + 1,900 unpriced tokens")
    assert _help(at, "Difference") == "Exact: -$0.562260"
    table = _what_if(at)
    assert table.loc["researcher", "what-if cost"] == "$0.000240"
    assert table.loc["researcher", "recorded cost"] == "$0.562500 + 760 unpriced tokens"
    assert table.loc["writer", "what-if cost"] == "$0.125000"
    assert table.loc["translator", "what-if cost"] == "unpriced"
    captions = _captions(at)
    assert "Priced by the what-if: 760 tokens of researcher that had no recorded price." in captions
    assert (
        "Still unpriced: planner (1,800 tokens), translator (100 tokens). No price was recorded for "
        "them; pick one to price it." in captions
    )


def test_a_custom_price_prices_an_unpriced_agent(costs: AppTest) -> None:
    at = _pick(costs, agent="translator", kind="A custom price", input=0.15, output=0.6)
    repriced = _help(at, "If translator ran at a custom price")
    assert repriced.startswith("Exact: $1.0625285 + 2,560 unpriced tokens")
    assert _help(at, "Difference") == "Exact: $0.0000285"
    table = _what_if(at)
    assert table.loc["translator", "recorded cost"] == "unpriced"
    assert table.loc["translator", "what-if cost"] == "$0.0000285"
    assert table.loc["translator", "what if"] == "repriced by the what-if"
    assert "What-if price of translator: custom, $0.150000 in / $0.600000 out per 1M tokens." in _captions(at)
    assert "Priced by the what-if: 100 tokens of translator that had no recorded price." in _captions(at)


def test_the_what_if_csv_keeps_the_page_s_digits(costs: AppTest) -> None:
    at = _pick(costs, agent="translator", kind="A custom price", input=0.15, output=0.6)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download the what-if (CSV)" in labels
    # The button offers `repricing_csv` of the result on the page: the same what-if, read back.
    agents = MemoryTraceSource(contract_trace() + plain_trace()).usage_by("agent", TraceFilter())
    result = reprice_agent(agents, "translator", TokenPrice("custom", Decimal("0.15"), Decimal("0.6")))
    csv = pd.read_csv(io.BytesIO(repricing_csv(result)), dtype=str, keep_default_na=False).set_index("agent")
    page = _what_if(at)
    for agent in page.index:
        for column in ("recorded cost", "what-if cost"):
            on_page, in_file = page.loc[agent, column], csv.loc[agent, column]
            if on_page.startswith("$"):
                assert on_page.removeprefix("$").split(" + ")[0] == in_file, (agent, column)
            else:
                assert on_page == in_file, (agent, column)
    assert csv.loc["translator", "what-if cost"] == "0.0000285"
    assert csv.loc["planner", "unpriced (what-if)"] == "1800"


def test_the_page_shows_the_same_what_if_on_the_store_and_on_clickhouse(
    open_page: OpenPage, tmp_path: Path
) -> None:
    spans = contract_trace() + plain_trace()
    shown_on: dict[str, pd.DataFrame] = {}
    with open_store(tmp_path / "store") as store:
        store.write(spans)
        at = _pick(
            open_page(store, "costs.py"), agent="researcher", kind="A custom price", input=0.15, output=0.6
        )
        shown_on["store"] = _what_if(at)
    with derived_clickhouse(spans, tmp_path) as (clickhouse, _):
        at = _pick(
            open_page(clickhouse, "costs.py"),
            agent="researcher",
            kind="A custom price",
            input=0.15,
            output=0.6,
        )
        shown_on["clickhouse"] = _what_if(at)
    assert shown_on["store"].loc["researcher", "what-if cost"] == "$0.000240"
    pd.testing.assert_frame_equal(shown_on["clickhouse"], shown_on["store"])
