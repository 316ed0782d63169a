"""The Costs page's what-if: "this range if researcher ran on X".

Pick an agent and a price (a model's list price from the price table, or a custom $/1M in and out)
and the range's own usage per agent is shown as recorded and repriced, exactly
(`janux.tracing.analysis.repricing`), with the tokens that had no price kept apart and named.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Final

import streamlit as st

from janux.dashboard.ui import headline
from janux.dashboard.ui.table import show_table
from janux.dashboard.views.repricing_table import repricing_csv, repricing_frame
from janux.dashboard.views.usage_tables import NO_KEY
from janux.tracing.analysis import figures
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.facts import UsageAggregate
from janux.tracing.analysis.repricing import RangeRepricing, RepricingError, reprice_agent
from janux.tracing.prices import TokenPrice, flat_list_prices, price_source

FROM_TABLE: Final = "A model from the price table"
"""The price choice that lists the table's models."""
CUSTOM: Final = "A custom price"
"""The price choice with two typed prices."""
DEFAULT_MODEL: Final = "openai · gpt-4o-mini"
"""The model chosen first (when the table has it)."""
CUSTOM_NAME: Final = "custom"
"""`TokenPrice.name` of a typed price."""
SCOPE_NOTE: Final = (
    "Each agent's own model rounds over the range (as the By agent table counts them): the picked "
    "agent's input and output tokens are priced at the what-if price, every other agent keeps what "
    "was recorded. Amounts are exact (decimal arithmetic, no float rounding)."
)


def _per_mtok(price: TokenPrice) -> str:
    money = (figures.page_text(figures.money(p)) for p in (price.input_per_mtok, price.output_per_mtok))
    return "{} in / {} out per 1M tokens".format(*money)


def _table_price() -> TokenPrice | None:
    prices = {p.name: p for p in flat_list_prices()}
    if not prices:
        st.info("The price table is not available: type a custom price instead.")
        return None
    names = list(prices)
    chosen = st.selectbox(
        f"Model ({price_source()}; flat prices only)", names,
        index=names.index(DEFAULT_MODEL) if DEFAULT_MODEL in prices else 0,
        format_func=lambda name: f"{name} · {_per_mtok(prices[name])}", key="costs_whatif_model",
    )  # fmt: skip
    return prices[chosen] if chosen is not None else None


def _typed_price(col: Any, side: str) -> float:
    value = col.number_input(
        f"{side} USD per 1M tokens", min_value=0.0, value=0.0, step=0.01, format="%.4f",
        key=f"costs_whatif_{side.lower()}",
    )  # fmt: skip
    return float(value)


def _custom_price() -> TokenPrice:
    left, right = st.columns(2)
    typed = [_typed_price(col, side) for col, side in ((left, "Input"), (right, "Output"))]
    # The typed digits as the field shows them (0.15, never 0.1499999999999999944...).
    return TokenPrice(CUSTOM_NAME, *(Decimal(repr(float(value))) for value in typed))


def _which(result: RangeRepricing) -> None:
    """Say which tokens the what-if priced and which stay unpriced, by agent."""
    picked = result.agent or NO_KEY
    if result.newly_priced_tokens:
        st.caption(
            fmt.markdown_text(
                f"Priced by the what-if: {result.newly_priced_tokens:,} tokens of {picked} that had "
                "no recorded price."
            )
        )
    unpriced = {row.agent: row.repriced.unpriced_tokens for row in result.rows}
    if result.still_unpriced:
        names = ", ".join(f"{a or NO_KEY} ({unpriced[a]:,} tokens)" for a in result.still_unpriced)
        st.caption(
            fmt.markdown_text(
                f"Still unpriced: {names}. No price was recorded for them; pick one to price it."
            )
        )
    if result.unread:
        names = ", ".join(a or NO_KEY for a in result.unread)
        st.warning(
            fmt.markdown_text(
                f"Partly unread: {names} ran model calls whose usage could not be read; their "
                "figures are floors (unknown, never 0)."
            )
        )


def render(agents: Sequence[UsageAggregate]) -> None:
    """Draw the what-if for the range's agent groups (`usage_by("agent", ...)`)."""
    st.subheader("What if an agent ran at another price")
    st.caption(SCOPE_NOTE)
    if not agents:
        st.info("No agent ran in this range.")
        return
    left, right = st.columns([1, 2])
    agent = left.selectbox(
        "Agent", [g.key for g in agents], format_func=lambda k: k or NO_KEY, key="costs_whatif_agent"
    )
    with right:
        kind = st.radio("Price", [FROM_TABLE, CUSTOM], horizontal=True, key="costs_whatif_kind")
        price = _table_price() if kind == FROM_TABLE else _custom_price()
    if agent is None or price is None:
        return
    try:
        result = reprice_agent(agents, agent, price)
    except RepricingError as exc:
        st.error(fmt.markdown_text(str(exc)))
        return
    name = agent or NO_KEY
    at = "a custom price" if price.name == CUSTOM_NAME else price.name
    cols = st.columns(3)
    headline.figure(cols[0], "Recorded", result.recorded)
    headline.figure(cols[1], fmt.markdown_text(f"If {name} ran at {at}"), result.repriced, _per_mtok(price))
    headline.figure(cols[2], "Difference", result.difference)
    st.caption(fmt.markdown_text(f"What-if price of {name}: {price.name}, {_per_mtok(price)}."))
    _which(result)
    show_table(repricing_frame(result), key="costs_whatif_table")
    st.download_button(
        "Download the what-if (CSV)", repricing_csv(result), file_name="janux-costs-what-if.csv",
        mime="text/csv", key="costs_dl_whatif",
    )  # fmt: skip
