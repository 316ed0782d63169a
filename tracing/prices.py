"""Estimated prices of model rounds, from the maintained `genai-prices` table.

Shared by the dashboard (rounds of other runtimes that record no cost) and by the integrations
(the `janux.*.cost_estimate` they record for agents without a price), so both give the same figure.
Every figure is an estimate and is labelled so; an unknown model yields None (unpriced), never 0.

A table lookup costs ~50 µs, too slow to run per round on a 10,000-span trace or on an agent's
thread. So each (model, provider) is probed once: when its price is linear in input and output
tokens (checked at two further points, large enough to cross the usual long-context tiers), rounds
are priced by the fitted rates; otherwise every round is looked up (cached).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from decimal import Decimal
from functools import cache, lru_cache

from janux.errors import JanuxError

_log = logging.getLogger(__name__)

_MTOK = 1_000_000
_CHECK_POINTS = ((300_000, 70_000), (2_000_000, 500_000))
"""Extra (input, output) points where a linear fit must hold, past common tier thresholds."""

Rates = tuple[float, float, float]
"""(USD per request, USD per input token, USD per output token)."""


def _lookup(model: str, provider: str, input_tokens: int, output_tokens: int) -> float | None:
    """One price-table lookup; None when the model is unknown."""
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    except ImportError:  # pragma: no cover - genai-prices is a declared dependency
        _log.warning("genai-prices is not installed: estimates are off")
        return None
    usage = PriceUsage(input_tokens=input_tokens, output_tokens=output_tokens)
    for provider_id in (provider or None, None):
        try:
            result = calc_price(usage, model, provider_id=provider_id)
        except LookupError:
            # The provider may be named differently in the table; retry by model alone once.
            if provider_id is None:
                return None
            continue
        except Exception:  # third-party data: never let it break a page
            _log.exception("price lookup failed for model %r", model)
            return None
        return float(result.total_price)
    return None


@lru_cache(maxsize=4096)
def _plan(model: str, provider: str) -> Rates | bool:
    """Linear rates for the model, True when it must be looked up per round, False when unknown."""
    base = _lookup(model, provider, 0, 0)
    per_in = _lookup(model, provider, _MTOK, 0)
    per_out = _lookup(model, provider, 0, _MTOK)
    if base is None or per_in is None or per_out is None:
        return False
    rates = (base, (per_in - base) / _MTOK, (per_out - base) / _MTOK)
    for tokens_in, tokens_out in _CHECK_POINTS:
        actual = _lookup(model, provider, tokens_in, tokens_out)
        if actual is None or not math.isclose(actual, _linear(rates, tokens_in, tokens_out), rel_tol=1e-9):
            return True
    return rates


def _linear(rates: Rates, input_tokens: int, output_tokens: int) -> float:
    return rates[0] + rates[1] * input_tokens + rates[2] * output_tokens


@lru_cache(maxsize=65536)
def _exact(model: str, provider: str, input_tokens: int, output_tokens: int) -> float | None:
    return _lookup(model, provider, input_tokens, output_tokens)


def estimate_round_cost(model: str, provider: str, input_tokens: int, output_tokens: int) -> float | None:
    """USD estimate of one inference round at current list prices, None when the model is unknown."""
    if not model:
        return None
    plan = _plan(model, provider)
    if plan is False:
        return None
    if plan is True:
        return _exact(model, provider, input_tokens, output_tokens)
    assert not isinstance(plan, bool)
    return _linear(plan, input_tokens, output_tokens)


class TieredPrice(JanuxError, ValueError):
    """A model whose list price is not one rate per input and one per output token (tiers, a fee per
    request), so it cannot be written as a per-million `Cost`."""


def per_million_prices(model: str, provider: str = "") -> tuple[float, float] | None:
    """USD per million input and output tokens of `model` in the price table (what `Cost` takes), None
    when the table does not know it; raise `TieredPrice` when its price is not linear."""
    if not model:
        return None
    plan = _plan(model, provider)
    if plan is False:
        return None
    if plan is True or plan[0] != 0:
        raise TieredPrice(
            f"{model!r} is priced in tiers or per request in {price_source()}, not as one rate per token"
        )
    # Read at one million tokens rather than scaling the fitted per-token rates: exact table figures.
    per_input = _exact(model, provider, _MTOK, 0)
    per_output = _exact(model, provider, 0, _MTOK)
    if per_input is None or per_output is None:  # pragma: no cover - _plan found the same model
        return None
    return per_input, per_output


def clear_price_cache() -> None:
    """Forget every cached lookup (benchmarks measure the cold path with it)."""
    _plan.cache_clear()
    _exact.cache_clear()


@cache
def price_source() -> str:
    """Name and version of the price table, for the "estimated" label (fixed for the process)."""
    try:
        from genai_prices import __version__
    except ImportError:  # pragma: no cover
        return "no price table"
    return f"genai-prices {__version__}"


@dataclass(frozen=True, slots=True)
class TokenPrice:
    """A flat price in USD per million input and output tokens: a model's list price from the table,
    or one typed by hand (a what-if's "if researcher ran on X")."""

    name: str
    """What the price is: `openai · gpt-4o-mini` for a table entry, `custom` for a typed one."""
    input_per_mtok: Decimal
    """USD per million input tokens."""
    output_per_mtok: Decimal
    """USD per million output tokens."""

    def cost(self, input_tokens: int, output_tokens: int) -> Decimal:
        """The exact USD price of these tokens (no float on the way)."""
        amount = Decimal(input_tokens) * self.input_per_mtok + Decimal(output_tokens) * self.output_per_mtok
        return amount / _MTOK


@cache
def flat_list_prices() -> tuple[TokenPrice, ...]:
    """Every model of the price table with one flat price per input and per output token (its
    standard tier), in the table's order (grouped by provider). Models priced by tiers, by date
    ranges or per request are left out: no single $/1M describes them."""
    try:
        from genai_prices.data import providers
        from genai_prices.types import ModelPrice
    except ImportError:  # pragma: no cover - genai-prices is a declared dependency
        return ()
    found = []
    for provider in providers:
        for model in provider.models:
            price = model.prices
            if not isinstance(price, ModelPrice):
                continue
            rate_in, rate_out = getattr(price, "input_mtok", None), getattr(price, "output_mtok", None)
            if getattr(price, "requests_kcount", None):
                continue  # a price per request as well: not one $/1M
            if isinstance(rate_in, Decimal) and isinstance(rate_out, Decimal):
                found.append(TokenPrice(f"{provider.id} · {model.id}", rate_in, rate_out))
    return tuple(found)
