"""Tokens and cost of agent loops, and the price of one model round.

A round is priced by its agent's Janux `Cost` when one is given (exact); otherwise, when
estimates are on, by the genai-prices table (an estimate, kept in its own attributes and never
added to the recorded cost). A round priced neither way counts as unpriced: unknown is never zero.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from janux.runtime.definitions import Cost

_log = logging.getLogger("janux.integrations")


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

    def add_round(self, input_tokens: int, output_tokens: int, price: RoundPrice) -> None:
        """Count one round with its price."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.rounds += 1
        if price.cost is not None:
            self.cost = price.cost if self.cost is None else self.cost + price.cost
            return
        self.unpriced_tokens += input_tokens + output_tokens
        if price.estimate is not None:
            self.estimate = price.estimate if self.estimate is None else self.estimate + price.estimate

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


@dataclass(slots=True, frozen=True)
class RoundPrice:
    """The price of one round: exact from a Janux `Cost`, or estimated, or neither."""

    cost: float | None
    """USD from the agent's `Cost`; None when the agent has none."""
    estimate: float | None
    """USD from the price table, only when there is no `Cost`; None when the model is unknown."""


UNPRICED = RoundPrice(None, None)
"""A round nobody can price."""


class Pricing:
    """Prices rounds by agent name (Janux `Cost`), else estimates them by model name."""

    __slots__ = ("_costs", "_estimate", "_provider")

    def __init__(self, costs: Mapping[str, Cost] | None, *, estimate: bool, provider: str) -> None:
        self._costs = dict(costs or {})
        self._estimate = estimate
        self._provider = provider

    def price(self, agent: str, model: str | None, input_tokens: int, output_tokens: int) -> RoundPrice:
        """The price of one round of `agent`'s loop on `model`."""
        cost = self._costs.get(agent)
        if cost is not None:
            return RoundPrice((input_tokens * cost.input + output_tokens * cost.output) / 1e6, None)
        if not self._estimate or not model:
            return UNPRICED
        return RoundPrice(None, estimate_round(model, self._provider, input_tokens, output_tokens))


@lru_cache(maxsize=4096)
def estimate_round(model: str, provider: str, input_tokens: int, output_tokens: int) -> float | None:
    """USD of one round at genai-prices' current list price; None when the table does not know the model."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # pragma: no cover - genai-prices is a core dependency
        return None
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    for provider_id in (provider or None, None):
        try:
            return float(calc_price(usage, model, provider_id=provider_id).total_price)
        except LookupError:
            continue
        except Exception as exc:  # third-party data must never break a run
            _log.warning("price lookup failed for model %r: %r", model, exc)
            return None
    return None


def price_source() -> str:
    """Name and version of the price table, the label of every estimate."""
    try:
        from genai_prices import __version__
    except ImportError:  # pragma: no cover
        return "genai-prices"
    return f"genai-prices {__version__}"
