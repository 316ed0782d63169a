"""Every table on every page reads as text a person understands: no "None", no "nan", no "-inf".

Unknown cost reads `unpriced`, a missing count `—`, and money columns keep numbers underneath
so they sort by amount. Checked on the demo scenarios and on the contract and plain fixtures.
"""

from __future__ import annotations

import io
from typing import Any

import pandas as pd
import pytest

from janux.dashboard.views.audit import audit
from janux.tracing.analysis import TraceView, reconstruct
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import OpenPage
from tests.dashboard.shown import shown
from tests.support.contract_traces import contract_trace, plain_trace

Demo = tuple[list[SpanRecord], dict[str, str]]
BAD = {"None", "none", "nan", "NaN", "<NA>", "NaT", "-inf", "inf", "-Infinity", ""}
"""Cell texts that mean the table leaked a raw missing value (empty text included)."""


def _bad_cells(at: Any) -> list[tuple[list[str], str, str]]:
    found = []
    for element in at.dataframe:
        text = shown(element)
        for col in text.columns:
            for value in text[col]:
                if str(value).strip() in BAD and not _blank_allowed(col, value):
                    found.append((list(text.columns)[:3], str(col), repr(value)))
    return found


FREE_TEXT = {"error", "reason", "stop reason", "error.type", "cut by", "attempt errors", "message",
             "expected", "actual", "conversation", "caller", "span", "failure"}  # fmt: skip
"""Columns where empty text is a fine answer (no error message, no stop reason, ...)."""


def _blank_allowed(column: str, value: object) -> bool:
    return value == "" and column in FREE_TEXT


@pytest.fixture(scope="module")
def source(demo: Demo) -> MemoryTraceSource:
    return MemoryTraceSource(demo[0] + contract_trace() + plain_trace())


def test_list_pages_show_no_raw_missing_values(open_page: OpenPage, source: MemoryTraceSource) -> None:
    for page in ("traces.py", "costs.py", "failures.py"):
        at = open_page(source, page)
        assert at.dataframe, page
        assert _bad_cells(at) == [], page


def test_trace_pages_show_no_raw_missing_values(
    open_page: OpenPage, source: MemoryTraceSource, demo: Demo
) -> None:
    ids = [*demo[1].values(), contract_trace()[0].trace_id, plain_trace()[0].trace_id]
    for trace_id in ids:
        at = open_page(source, "trace.py", trace_id=trace_id)
        assert _bad_cells(at) == [], trace_id


def test_compare_page_shows_no_raw_missing_values(
    open_page: OpenPage, source: MemoryTraceSource, demo: Demo
) -> None:
    ids = demo[1]
    pairs = [
        (ids["nested_delegation"], ids["unpriced_subagent"]),
        (contract_trace()[0].trace_id, plain_trace()[0].trace_id),
    ]
    for a, b in pairs:
        at = open_page(source, "compare.py", a=a, b=b)
        assert _bad_cells(at) == [], (a, b)
        tree = shown(next(e for e in at.dataframe if "change" in e.value.columns)).set_index("loop")
        assert set(tree["inclusive Δ USD"]) <= {fmt.UNPRICED, cells.MISSING} | {
            v for v in tree["inclusive Δ USD"] if v.startswith(("+$", "-$", "$"))
        }


def test_unknown_cost_reads_unpriced_and_sorts_as_a_number(open_page: OpenPage, demo: Demo) -> None:
    spans, ids = demo
    at = open_page(MemoryTraceSource(spans), "costs.py")
    element = next(e for e in at.dataframe if {"agent", "failed loops"} <= set(e.value.columns))
    raw, text = element.value.set_index("agent"), shown(element).set_index("agent")
    # fact_checker runs on a model without a price in the demo: its tokens are unpriced.
    assert text.loc["fact_checker", "own cost USD"] == fmt.UNPRICED
    assert raw.loc["fact_checker", "own unpriced tokens"] > 0
    assert pd.api.types.is_float_dtype(raw["own cost USD"])
    assert raw.loc["fact_checker", "own cost USD"] < raw["own cost USD"][raw["own cost USD"] > 0].min()
    # The denied delegation of a contract trace's tool runs no loop: see test_costs_exact.
    assert ids  # the demo ran


def test_rebuilt_cost_csv_keeps_empty_estimates_empty(demo: Demo) -> None:
    """The inclusive table's file keeps its estimate columns: an empty cell where nothing was
    estimated (never 0), `unpriced` where no price is known."""
    spans, _ = demo
    result = audit(_views(spans))
    frame = result.inclusive_by_agent
    by_agent = pd.read_csv(io.BytesIO(cells.csv_bytes(frame)), keep_default_na=False)
    assert list(by_agent.columns) == list(frame.columns)  # estimate columns kept in the file
    rows = by_agent.set_index("agent")
    assert rows.loc["fact_checker", "own cost USD"] == fmt.UNPRICED
    assert float(rows.loc["triage", "inclusive cost USD"]) == pytest.approx(
        frame.set_index("agent").loc["triage", "inclusive cost USD"]
    )
    assert rows.loc["triage", "own estimated USD"] == ""  # nothing estimated: an empty cell, not 0
    top = pd.read_csv(io.BytesIO(cells.csv_bytes(result.top_delegations)))
    assert len(top) == len(result.top_delegations) > 0


def _views(spans: list[SpanRecord]) -> list[TraceView]:
    by_trace: dict[str, list[SpanRecord]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    return [reconstruct(group) for group in by_trace.values()]


def test_one_money_rule_for_the_pages_and_the_cli() -> None:
    # Summing rounds' float costs gives 0.00028649999999999997 where the amount is 0.0002865;
    # `janux trace --json` carries it without the noise. Every text of it reads the same exact
    # digits (at least six decimals, so a column lines up), and a CSV keeps those digits.
    noisy = 0.00028649999999999997
    rounded = round(noisy, 12)
    texts = {fmt.usd(noisy), fmt.usd(rounded), cells.money_text(noisy), cells.money_text(rounded)}
    assert texts == {"$0.0002865"}
    assert fmt.usd(1234.56785) == "$1,234.567850" and cells.money_text(-0.0000015) == "-$0.0000015"
    assert fmt.usd(float("inf")) == "$inf"  # never an exception from the rounding
