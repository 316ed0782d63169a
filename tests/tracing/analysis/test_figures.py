"""One figure, one rendering per medium: the page, the CSV, the chart, the CLI and JSON agree."""

from __future__ import annotations

import math
from decimal import Decimal

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from janux.tracing.analysis import figures
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.usage import Usage

AMOUNTS = st.floats(min_value=0, max_value=1e7, allow_nan=False, allow_infinity=False)
"""Any amount in USD a trace may carry, tiny ones (7.56e-05) included."""


@given(AMOUNTS)
def test_a_csv_never_writes_scientific_notation(amount: float) -> None:
    frame = pd.DataFrame({"cost USD": [amount, cells.UNPRICED, None], "share": [amount, 1e-9, math.nan]})
    text = cells.csv_bytes(frame).decode()
    assert "e-" not in text.lower() and "e+" not in text.lower(), text


@given(AMOUNTS)
def test_the_page_and_the_csv_show_the_same_digits(amount: float) -> None:
    page = fmt.usd(amount)
    csv = cells.csv_bytes(pd.DataFrame({"cost USD": [amount]})).decode().splitlines()[1]
    assert page == cells.money_text(amount) == figures.cli_text(figures.money(amount))
    assert page.removeprefix("$").replace(",", "") == csv
    assert figures.json_value(figures.money(amount)) == float(csv)


def test_the_issue_s_amounts_read_one_way() -> None:
    # From the issue: the page said $0.001382 where the CSV said 0.0013825; the CSV said 7.56e-05.
    assert fmt.usd(0.0013825) == "$0.0013825"
    assert cells.csv_bytes(pd.DataFrame({"cost USD": [0.0013825, 7.56e-05]})).decode().split() == [
        "cost",
        "USD",
        "0.0013825",
        "0.0000756",
    ]
    # One column lines up: $4.3785 beside $0.001000 read with the same decimals.
    assert (fmt.usd(4.3785), fmt.usd(0.001)) == ("$4.378500", "$0.001000")


def test_unpriced_tokens_travel_with_the_cost() -> None:
    usage = Usage(1_520, 52, 0.003685, 221)
    assert figures.page_text(figures.cost(usage)) == "$0.003685 + 221 unpriced tokens"
    assert fmt.usage_cost_full(usage) == "$0.003685 + 221 unpriced tokens"
    assert figures.chart_label(figures.cost(usage)) == "$0.00368 + 221 unpriced"  # half-even
    assert figures.page_text(figures.cost(Usage(10, 0, None, 10))) == "unpriced"


def test_every_state_has_its_word_and_its_file_form() -> None:
    cases = [
        (figures.cost(Usage(unread_rounds=2)), "unknown", "unknown", None),
        (figures.money(None, unpriced_tokens=3), "unpriced", "unpriced", None),
        (figures.money(None), "—", None, None),
        (figures.duration_ms(None), "open", "open", None),
        (figures.duration_ms(None, missing=figures.State.NOT_RUN), "not run", "not run", None),
        (figures.Figure(figures.Kind.TOKENS, figures.State.NO_LIMIT), "no limit", "no limit", None),
        (figures.money(0.002, estimated=True), "≈ $0.002000 (est.)", "0.002000", 0.002),
        (figures.tokens(31_452), "31,452", 31_452, 31_452),
        (figures.duration_ms(7.56), "7.6 ms", "7.56", 7.56),
    ]
    for figure, text, csv, raw in cases:
        rendered = figures.page_text(figure), figures.csv_value(figure), figures.json_value(figure)
        assert rendered == (text, csv, raw)


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=10_000))
def test_a_rate_reads_the_same_on_a_label_and_a_panel(part: int, whole: int) -> None:
    # From the issue: the agent map's label said "44% failed" where its panel said "43.8%".
    figure = figures.rate(min(part, whole), whole)
    assert figures.chart_label(figure) == figures.page_text(figure)
    assert figures.page_text(figures.rate(7, 16)) == "43.8%"


@given(AMOUNTS)
def test_a_headline_and_a_chart_label_round_alike(amount: float) -> None:
    # From the issue: the map's node label said "own $0.003286" where its panel said "$0.00329".
    assert fmt.compact_usd(amount) == figures.chart_label(figures.money(amount))


def test_a_kept_amount_reads_as_one_computed_anew() -> None:
    """`exact_usd` keeps the amounts it rounded: a second call, a Decimal of the same value and a
    zero of the other sign each still read as if rounded for the first time."""
    for amount in (0.00028649999999999997, 1.5, 1e-11):
        assert (
            str(figures.exact_usd(amount))
            == str(figures.exact_usd(amount))
            == str(figures._exact_usd(amount))
        )
    assert str(figures.exact_usd(Decimal("0.10"))) == str(figures._exact_usd(Decimal("0.1")))
    assert str(figures.exact_usd(0.0)) == "0.000000"
    assert str(figures.exact_usd(-0.0)) == "-0.000000"  # equal to 0.0 as a key: never kept
