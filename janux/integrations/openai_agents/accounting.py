"""Tokens and cost of agent loops, and the price of one model round.

A round is priced by its agent's Janux `Cost` when one is given (exact); otherwise, when
estimates are on, by the genai-prices table (`janux.tracing.prices`, the dashboard's estimator:
an estimate, kept in its own attributes and never added to the recorded cost). A round priced
neither way counts as unpriced: unknown is never zero.
"""

from __future__ import annotations

from collections.abc import Mapping

from janux.runtime.definitions import Cost
from janux.tracing.prices import estimate_round_cost

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
