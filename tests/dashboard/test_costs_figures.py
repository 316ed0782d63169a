"""The Costs page's figures: every table's CSV holds the digits the page shows, and the costliest
delegations say which cost is which (own and inclusive)."""

from __future__ import annotations

import io
import re
from typing import Any

import pandas as pd
from streamlit.testing.v1 import AppTest

from janux.dashboard.views import audit as rebuilt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis.trace_view import TraceView, reconstruct
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from tests.dashboard.app_helpers import OpenPage, chart_data
from tests.dashboard.shown import shown

Demo = tuple[list[Any], dict[str, str]]
SCIENTIFIC = re.compile(r"(^|,)-?[0-9.]+[eE][-+]?[0-9]+(,|$)", re.MULTILINE)
"""A CSV cell in scientific notation (`7.56e-05`): never written."""


def _views(demo: Demo) -> list[TraceView]:
    return [reconstruct([s for s in demo[0] if s.trace_id == t]) for t in demo[1].values()]


def _money_cells_agree(at: AppTest) -> int:
    """Every money cell of every table on the page, against its CSV cell; how many were compared."""
    compared = 0
    for element in at.dataframe:
        frame = element.value
        text = cells.csv_bytes(frame).decode()
        assert not SCIENTIFIC.search(text), text
        csv = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        page = shown(element)
        for column in [c for c in frame.columns if cells.is_money(c)]:
            for on_page, in_file in zip(page[column], csv[column], strict=True):
                if str(on_page).startswith("$"):
                    assert on_page.removeprefix("$").replace(",", "") == in_file, column
                    compared += 1
    return compared


def test_every_costs_table_s_csv_has_the_page_s_digits(open_page: OpenPage, demo: Demo) -> None:
    at = open_page(MemoryTraceSource(demo[0]), "costs.py")
    assert _money_cells_agree(at) > 20


def test_every_agent_map_table_s_csv_has_the_page_s_digits(open_page: OpenPage, demo: Demo) -> None:
    at = open_page(MemoryTraceSource(demo[0]), "agent_map.py")
    at.session_state["map_tab"] = "Tables (the data of the map)"
    at.run()
    assert not at.exception
    assert _money_cells_agree(at) > 0


def test_the_costliest_delegations_say_own_and_inclusive(demo: Demo) -> None:
    # From the issue: "total USD" and "cost USD" were identical on every row, and no own column.
    views = _views(demo)
    top = rebuilt.audit(views).top_delegations
    money = [c for c in top.columns if cells.is_money(c)]
    assert {"own cost USD", "inclusive cost USD"} <= set(money) and "total USD" not in money
    # Every cost column says whose cost it is, and so does its unpriced tokens column: the nested
    # delegation's own and inclusive costs are equal, its unpriced tokens are not (0 vs 221).
    assert all(c.startswith(("own ", "inclusive ")) for c in money)
    assert not top["own unpriced tokens"].equals(top["inclusive unpriced tokens"])
    by_span = {d.tool_span_id: (v, d) for v in views for d in v.delegations}
    for _, row in top.iterrows():
        view, delegation = by_span[row["span"]]
        own = rebuilt.delegation_own(view, delegation)
        assert row["own cost USD"] == cells.total_cell(own)
        assert row["own unpriced tokens"] == own.unpriced_tokens
        assert row["inclusive cost USD"] == cells.total_cell(delegation.cost)


def test_the_agent_map_s_labels_and_panel_round_alike(open_page: OpenPage, demo: Demo) -> None:
    # From the issue: the node label said "own $0.003286" where the panel said "$0.00329", and
    # "44% failed" where the panel said "43.8%".
    source = MemoryTraceSource(demo[0])
    at = open_page(source, "agent_map.py")
    drawn = chart_data(at, "choice", "detail").set_index("choice")
    checked = 0
    for choice in drawn.index:
        at.selectbox(key="map_inspect").set_value(choice).run()
        metrics = {m.label: m.value for m in at.metric}
        label = drawn.loc[choice, "detail"]
        if choice.startswith("agent: "):
            assert f"own {metrics['Own cost']}" in label and f"incl {metrics['Inclusive cost']}" in label
            assert f"{metrics['Error rate']} errors" in label
        else:
            assert f"· {metrics['Failure rate']} failed" in label and metrics["Cost carried"] in label
        checked += 1
    agent_map = source.agent_map(TraceFilter())
    # every node and edge, and the denied-only target (refunds) with its 0 runs
    assert checked == len(agent_map.nodes) + len(agent_map.edges) + 1


def test_compare_carries_unpriced_tokens_with_each_cost(demo: Demo) -> None:
    # From the issue: an attempt read "own $0.003685 = inclusive $0.003685" while its own and
    # inclusive tokens differ (the subagent below it ran unpriced).
    from janux.dashboard.views.compare import tree_diff

    nested = reconstruct([s for s in demo[0] if s.trace_id == demo[1]["nested_delegation"]])
    diff = tree_diff(nested, nested).set_index("loop")
    researcher = diff.loc["triage/delegate.researcher[1]#1"]
    assert researcher["inclusive A"] == "$0.003685 + 221 unpriced tokens"
    assert researcher["own A"] == "$0.003685"


def test_the_agent_map_s_tables_show_rates_as_its_labels_do(open_page: OpenPage, demo: Demo) -> None:
    # The edges table said 0.4375 where the label said "43.8% failed"; its CSV keeps the share.
    source = MemoryTraceSource(demo[0])
    at = open_page(source, "agent_map.py")
    labels = chart_data(at, "choice", "detail").set_index("choice")["detail"]
    at.session_state["map_tab"] = "Tables (the data of the map)"
    at.run()
    (element,) = [e for e in at.dataframe if "failure rate" in e.value.columns]
    page = shown(element)
    csv = pd.read_csv(io.BytesIO(cells.csv_bytes(element.value)))
    for i, row in element.value.iterrows():
        label = labels[f"edge: {row['caller']} → {row['target']} ({row['kind']})"]
        assert f"· {page.loc[i, 'failure rate']} failed" in label
        assert page.loc[i, "failure rate"].endswith("%") and csv.loc[i, "failure rate"] == row["failure rate"]
