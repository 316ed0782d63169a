"""Estimated prices for traces from other runtimes, from the maintained `genai-prices` table.

Used only where the trace records no cost (`janux.round.cost`); every figure it yields is shown
as an estimate. An unknown model yields None (unpriced), never 0. Results are cached per
(model, provider, tokens) because the table lookup costs ~50 µs and rounds repeat.
"""

from __future__ import annotations

import logging
from functools import lru_cache

_log = logging.getLogger(__name__)


@lru_cache(maxsize=65536)
def estimate_round_cost(model: str, provider: str, input_tokens: int, output_tokens: int) -> float | None:
    """USD estimate of one inference round at current list prices, None when the model is unknown."""
    if not model:
        return None
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
        except Exception:  # the table is third-party data: never let it break a page
            _log.exception("price lookup failed for model %r", model)
            return None
        return float(result.total_price)
    return None


def price_source() -> str:
    """Name and version of the price table, for the "estimated" label."""
    try:
        from genai_prices import __version__
    except ImportError:  # pragma: no cover
        return "no price table"
    return f"genai-prices {__version__}"
