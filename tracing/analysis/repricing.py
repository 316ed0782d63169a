"""What a range of traces would have cost if one agent had run at another price.

"This range if researcher ran on gpt-4o-mini": every agent's own usage over the range (the
`agent` groups of `usage_by`, each token and cent counted once, the same on every source) is shown
as recorded and repriced. The picked agent's tokens are priced at the what-if's flat price; the
other agents keep what was recorded. Money is exact: recorded costs enter as `Decimal` by the one
money rule (`figures.noise_free_usd`), repriced ones are products of whole token counts and
decimal prices, and every sum is a `Decimal` sum.

Unpriced tokens are kept apart: an agent whose rounds had no price stays unpriced, unless it is the
agent the what-if prices (its tokens are then counted in `newly_priced_tokens`), and usage that
could not be read stays unknown, never 0. No Streamlit or pandas import here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from janux.errors import JanuxError
from janux.tracing.analysis import figures
from janux.tracing.analysis.facts import UsageAggregate
from janux.tracing.prices import TokenPrice

NO_AGENT_NAME: Final = ""
"""Key of the loops without `gen_ai.agent.name` (`usage_by`'s empty key)."""


class RepricingError(JanuxError, ValueError):
    """A what-if naming an agent the range does not hold, or a negative price."""


@dataclass(frozen=True, slots=True)
class AgentRepricing:
    """One agent's own usage over the range, as recorded and as the what-if prices it."""

    agent: str
    """Agent name (`NO_AGENT_NAME` for loops without one)."""
    loops: int
    """Its loops (or agent segments) in the range."""
    input_tokens: figures.Figure
    """Its input tokens (`unknown` when none could be read)."""
    output_tokens: figures.Figure
    """Its output tokens."""
    recorded: figures.Figure
    """What was recorded: the priced part, its unpriced tokens travelling with it."""
    repriced: figures.Figure
    """The same usage under the what-if (the recorded figure for every agent but the picked one)."""
    picked: bool
    """True for the agent the what-if reprices."""
    newly_priced_tokens: int
    """Tokens that had no recorded price and the what-if prices (the picked agent's only)."""


@dataclass(frozen=True, slots=True)
class RangeRepricing:
    """The range's own usage per agent, recorded and repriced, and the totals of both."""

    agent: str
    """The agent the what-if reprices."""
    price: TokenPrice
    """Its what-if price."""
    rows: tuple[AgentRepricing, ...]
    """One row per agent, in the source's order (most expensive first, unpriced last)."""
    recorded: figures.Figure
    """Sum of the recorded figures (unpriced tokens beside the amount)."""
    repriced: figures.Figure
    """Sum of the repriced figures."""
    difference: figures.Figure
    """Repriced minus recorded amount; tokens the what-if prices for the first time add their whole
    new cost to it."""
    newly_priced_tokens: int
    """Tokens that had no recorded price and the what-if prices."""
    still_unpriced: tuple[str, ...]
    """Agents whose tokens stay without a price after the what-if."""
    unread: tuple[str, ...]
    """Agents with model calls whose usage could not be read: their figures are floors."""


@dataclass(slots=True)
class _Sum:
    """A running money sum: exact amount (None until something is priced) and unpriced tokens."""

    amount: Decimal | None = None
    unpriced: int = 0
    partly_unknown: bool = False

    def add(self, amount: Decimal | None, unpriced: int, partly_unknown: bool) -> None:
        if amount is not None:
            self.amount = amount if self.amount is None else self.amount + amount
        self.unpriced += unpriced
        self.partly_unknown |= partly_unknown

    def figure(self, *, unknown: bool = False) -> figures.Figure:
        return figures.money(
            self.amount, unpriced_tokens=self.unpriced, unknown=unknown, partly_unknown=self.partly_unknown
        )


def _recorded_amount(group: UsageAggregate) -> Decimal | None:
    return None if group.cost is None else figures.noise_free_usd(group.cost)


def _read_nothing(group: UsageAggregate) -> bool:
    """True when the agent's loops ran model calls and none of their usage could be read."""
    return bool(group.unread) and group.input_tokens is None and group.output_tokens is None


def _row(group: UsageAggregate, picked: bool, price: TokenPrice, totals: tuple[_Sum, _Sum]) -> AgentRepricing:
    """One agent's row; adds its recorded and repriced money to `totals`."""
    unknown = _read_nothing(group)
    partly = bool(group.unread) and not unknown
    recorded = _Sum()
    recorded.add(_recorded_amount(group), group.unpriced_tokens or 0, partly)
    repriced, newly_priced = recorded, 0
    if picked and not unknown:
        repriced = _Sum()
        amount = figures.noise_free_usd(price.cost(group.input_tokens or 0, group.output_tokens or 0))
        repriced.add(amount, 0, partly)
        newly_priced = group.unpriced_tokens or 0
    for total, part in zip(totals, (recorded, repriced), strict=True):
        total.add(part.amount, part.unpriced, part.partly_unknown)
    return AgentRepricing(
        agent=group.key,
        loops=group.count,
        input_tokens=figures.tokens(group.input_tokens, unknown=unknown),
        output_tokens=figures.tokens(group.output_tokens, unknown=unknown),
        recorded=recorded.figure(unknown=unknown),
        repriced=repriced.figure(unknown=unknown),
        picked=picked,
        newly_priced_tokens=newly_priced,
    )


def reprice_agent(agents: Sequence[UsageAggregate], agent: str, price: TokenPrice) -> RangeRepricing:
    """The range's own usage per agent (`usage_by("agent", ...)` groups) with `agent`'s tokens priced
    at `price`; raise `RepricingError` when the groups hold no such agent or a price is negative."""
    if price.input_per_mtok < 0 or price.output_per_mtok < 0:
        raise RepricingError(f"price {price.name!r}: USD per million tokens must be >= 0")
    if all(group.key != agent for group in agents):
        known = ", ".join(sorted(g.key or "(none)" for g in agents)) or "none"
        raise RepricingError(f"the range has no agent {agent or '(none)'!r} (agents: {known})")
    totals = (_Sum(), _Sum())
    rows = tuple(_row(group, group.key == agent, price, totals) for group in agents)
    recorded, repriced = totals
    difference = None
    if recorded.amount is not None or repriced.amount is not None:
        difference = (repriced.amount or Decimal(0)) - (recorded.amount or Decimal(0))
    return RangeRepricing(
        agent=agent,
        price=price,
        rows=rows,
        recorded=recorded.figure(),
        repriced=repriced.figure(),
        difference=figures.money(difference),
        newly_priced_tokens=sum(row.newly_priced_tokens for row in rows),
        still_unpriced=tuple(row.agent for row in rows if row.repriced.unpriced_tokens),
        unread=tuple(group.key for group in agents if group.unread),
    )
