"""Price estimates agree with the price table, and unknown models stay unpriced."""

from __future__ import annotations

import pytest
from genai_prices import Usage, calc_price

from janux.tracing.prices import clear_price_cache, estimate_round_cost, price_source


@pytest.mark.parametrize(
    ("model", "provider"),
    [("gpt-4o", "openai"), ("gpt-4o-mini", "openai"), ("gemini-2.5-pro", "google"), ("gpt-4o", "")],
)
@pytest.mark.parametrize(("tokens_in", "tokens_out"), [(0, 0), (1234, 567), (250_000, 4_000)])
def test_estimate_matches_the_table(model: str, provider: str, tokens_in: int, tokens_out: int) -> None:
    clear_price_cache()
    table = float(
        calc_price(
            Usage(input_tokens=tokens_in, output_tokens=tokens_out), model, provider_id=provider or None
        ).total_price
    )
    assert estimate_round_cost(model, provider, tokens_in, tokens_out) == pytest.approx(
        table, rel=1e-9, abs=1e-15
    )


def test_unknown_model_is_unpriced_not_zero() -> None:
    assert estimate_round_cost("no-such-model-xyz", "acme", 1000, 10) is None
    assert estimate_round_cost("", "openai", 1000, 10) is None


def test_unknown_provider_falls_back_to_the_model() -> None:
    assert estimate_round_cost("gpt-4o", "no-such-provider", 1_000_000, 0) == pytest.approx(2.5)


def test_price_source_names_the_table() -> None:
    assert price_source().startswith("genai-prices ")


def test_a_model_is_probed_once_then_priced_without_table_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    """Integrations price rounds on the agent's thread: after one probe per model, a round with new
    token counts costs no table lookup (a lookup costs ~50 µs), and the figure stays the table's."""
    import genai_prices

    clear_price_cache()
    lookups = 0
    real = genai_prices.calc_price

    def counting(*args: object, **kwargs: object) -> object:
        nonlocal lookups
        lookups += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(genai_prices, "calc_price", counting)
    estimate_round_cost("gpt-4o-mini", "openai", 1, 1)
    probes = lookups
    prices = [estimate_round_cost("gpt-4o-mini", "openai", 400 + n, 30 + n) for n in range(50)]
    assert lookups == probes  # no lookup per round
    monkeypatch.setattr(genai_prices, "calc_price", real)
    for n, price in enumerate(prices):
        table = float(
            real(
                Usage(input_tokens=400 + n, output_tokens=30 + n), "gpt-4o-mini", provider_id="openai"
            ).total_price
        )
        assert price == pytest.approx(table, rel=1e-9)
