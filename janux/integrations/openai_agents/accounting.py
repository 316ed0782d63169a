"""Tokens and cost of agent loops, and the price of one model round.

A round is priced by its agent's Janux `Cost` when one is given (exact); otherwise, when
estimates are on, by the genai-prices table (`janux.tracing.prices`, the dashboard's estimator:
an estimate, kept in its own attributes and never added to the recorded cost). A round priced
neither way counts as unpriced: unknown is never zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from janux.runtime.definitions import Cost
from janux.tracing.prices import estimate_round_cost


@dataclass(slots=True, eq=False)
class Totals:
    """Tokens and cost of a set of rounds (one loop's own, or a loop and everything below it)."""

    input_tokens: int = 0
    """Input tokens."""
    output_tokens: int = 0
    """Output tokens."""
    cost: float | None = None
    """USD of the rounds priced by a Janux `Cost`; None when no round was."""
    unpriced_tokens: int = 0
    """Tokens of rounds without a Janux `Cost` (estimated or not)."""
    rounds: int = 0
    """Rounds counted."""
    estimate: float | None = None
    """USD estimated from the price table for unpriced rounds; None when none was estimated."""

    def add_round(
        self, input_tokens: int, output_tokens: int, cost: float | None, estimate: float | None
    ) -> None:
        """Count one round with its price: exact (`cost`), else estimated (`estimate`), else neither."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.rounds += 1
        if cost is not None:
            self.cost = cost if self.cost is None else self.cost + cost
            return
        self.unpriced_tokens += input_tokens + output_tokens
        if estimate is not None:
            self.estimate = estimate if self.estimate is None else self.estimate + estimate

    def add(self, other: Totals) -> None:
        """Fold `other` in (None + x = x)."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.unpriced_tokens += other.unpriced_tokens
        self.rounds += other.rounds
        if other.cost is not None:
            self.cost = other.cost if self.cost is None else self.cost + other.cost
        if other.estimate is not None:
            self.estimate = other.estimate if self.estimate is None else self.estimate + other.estimate


RoundPrice = tuple[float | None, float | None]
"""The price of one round: (USD from the agent's Janux `Cost`, else None; USD estimated from the
price table, only when there is no `Cost` and the table knows the model, else None)."""

UNPRICED: RoundPrice = (None, None)
"""A round nobody can price."""


class Pricing:
    """Prices rounds by agent name (Janux `Cost`), else estimates them by model name.

    The agents' rates are read once, and the price table is probed once per model
    (`janux.tracing.prices`): pricing a round on the agent's thread is a dictionary lookup and
    a few multiplications.
    """

    __slots__ = ("_estimate", "_provider", "_rates")

    def __init__(self, costs: Mapping[str, Cost] | None, *, estimate: bool, provider: str) -> None:
        self._rates = {agent: (cost.input, cost.output) for agent, cost in (costs or {}).items()}
        self._estimate = estimate
        self._provider = provider

    def price(self, agent: str, model: str | None, input_tokens: int, output_tokens: int) -> RoundPrice:
        """The price of one round of `agent`'s loop on `model`."""
        rates = self._rates.get(agent)
        if rates is not None:
            return (input_tokens * rates[0] + output_tokens * rates[1]) / 1e6, None
        if not self._estimate or not model:
            return UNPRICED
        return None, estimate_round_cost(model, self._provider, input_tokens, output_tokens)
