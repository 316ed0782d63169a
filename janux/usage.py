"""The project's one usage value: tokens and cost of a set of model rounds, and how they add up.

Used from the runtime's accounting (a loop's own rounds, a turn's bill) and the integrations'
writers to the analysis layer, the sources and every page, so a token or a cent means the same
everywhere. Unknown cost is None, never 0 (`plus` keeps it so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

COST_DECIMALS = 12
"""Sums of costs are rounded to this many decimals, so float sums taken in another order agree."""

Number = TypeVar("Number", int, float)


def plus(total: Number | None, value: Number | None) -> Number | None:
    """The one sum where None means "nothing reported" (SQL `sum`): None + x is x and None + None
    stays None, so an unknown cost or count never becomes 0."""
    if value is None:
        return total
    return value if total is None else total + value


@dataclass(slots=True)
class Usage:
    """Tokens and cost of some set of model rounds: the project's one usage value, from the
    runtime's accounting of a loop (`janux.turn.*`) and a turn's bill (`janux.bill.*`) to a range of
    traces on the agent map.

    Unknown cost is None, never 0; `+` and `add` treat None + x as x. The first four fields are the
    ones every writer records and every source stores (tokens in and out, recorded cost, unpriced
    tokens); the rest are the detail of a trace read back (estimates, rounds, rounds whose usage
    could not be read)."""

    input_tokens: int = 0
    """Input tokens."""
    output_tokens: int = 0
    """Output tokens."""
    cost: float | None = None
    """USD recorded by the runtime (`janux.*`); None when nothing was priced."""
    unpriced_tokens: int = 0
    """Tokens without a recorded price. As a writer records it (`add_round`, `janux.*.unpriced_tokens`)
    that includes estimated rounds; a trace read back by the analysis layer moves the tokens of its
    estimated rounds out (`estimated_tokens`), so there it counts tokens with no price at all."""
    estimated_cost: float | None = None
    """USD estimated for rounds with no recorded cost: recorded in the trace by an integration
    (`janux.*.cost_estimate`) or priced here from the price table; None when none was."""
    rounds: int = 0
    """Model rounds counted."""
    unread_rounds: int = 0
    """Rounds whose usage could not be read (under names Janux does not read, or absent): their
    tokens and cost are unknown, never counted as 0."""
    estimated_tokens: int = 0
    """Tokens of the rounds priced by `estimated_cost` (never in `cost`)."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def total_cost(self) -> float | None:
        """Recorded plus estimated USD; None when neither is known."""
        if self.cost is None:
            return self.estimated_cost
        if self.estimated_cost is None:
            return self.cost
        return self.cost + self.estimated_cost

    @property
    def is_unknown(self) -> bool:
        """True when nothing was read although rounds ran: the usage is unknown, not zero."""
        return self.unread_rounds > 0 and self.total_tokens == 0 and self.total_cost is None

    @property
    def is_estimated(self) -> bool:
        """True when any part of the cost comes from the price table."""
        return self.estimated_cost is not None

    def add(self, other: Usage) -> None:
        """Add `other` into this usage in place (None + x = x, None + None = None)."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.unpriced_tokens += other.unpriced_tokens
        self.rounds += other.rounds
        self.unread_rounds += other.unread_rounds
        self.estimated_tokens += other.estimated_tokens
        self.cost = plus(self.cost, other.cost)
        self.estimated_cost = plus(self.estimated_cost, other.estimated_cost)

    def add_round(
        self, input_tokens: int, output_tokens: int, cost: float | None, estimate: float | None = None
    ) -> None:
        """Count one round as a writer records it: priced (`cost`, USD), else unpriced; a round
        without a price may carry an estimate (`estimate`, USD from a price table), which is kept
        apart from `cost` and whose tokens also count in `estimated_tokens`."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.rounds += 1
        if cost is not None:
            self.cost = plus(self.cost, cost)
            return
        self.unpriced_tokens += input_tokens + output_tokens
        if estimate is not None:
            self.estimated_cost = plus(self.estimated_cost, estimate)
            self.estimated_tokens += input_tokens + output_tokens

    def copy(self) -> Usage:
        """An independent copy."""
        return Usage(
            self.input_tokens,
            self.output_tokens,
            self.cost,
            self.unpriced_tokens,
            self.estimated_cost,
            self.rounds,
            self.unread_rounds,
            self.estimated_tokens,
        )

    def __add__(self, other: Usage) -> Usage:
        """A new usage holding both (None + x = x)."""
        total = self.copy()
        total.add(other)
        return total

    def rounded(self) -> Usage:
        """A copy with the money rounded to `COST_DECIMALS`, so sums taken in another order agree."""
        copy = self.copy()
        copy.cost = None if self.cost is None else round(self.cost, COST_DECIMALS)
        if self.estimated_cost is not None:
            copy.estimated_cost = round(self.estimated_cost, COST_DECIMALS)
        return copy
