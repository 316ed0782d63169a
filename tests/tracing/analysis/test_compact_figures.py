"""Headline figures: short enough for any column, rounded by the one money rule."""

from __future__ import annotations

import pytest

from janux.tracing.analysis import formatting as fmt


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (0.0348123, "$0.0348"),
        (0.000076, "$0.000076"),
        (0.0002865, "$0.000286"),  # the money rule's half-even rounding, as `usd` reads it
        (0.0, "$0.00"),
        (12.3456, "$12.35"),
        (1234.5, "$1,234"),
        (2_345_678.9, "$2.35M"),
        (None, fmt.UNPRICED),
    ],
)
def test_compact_usd(amount: float | None, shown: str) -> None:
    assert fmt.compact_usd(amount) == shown
    assert len(shown) <= 9  # fits a fifth of the page's width


def test_compact_usd_marks_estimates() -> None:
    assert fmt.compact_usd(0.0012, estimated=True) == "≈ $0.00120 (est.)"


@pytest.mark.parametrize(
    ("n", "shown"),
    [
        (57, "57"),
        (9_999, "9,999"),
        (10_000, "10.0K"),
        (31_500, "31.5K"),
        (999_950, "1.0M"),
        (3_400_000_000, "3.4B"),
    ],
)
def test_compact_count(n: int, shown: str) -> None:
    assert fmt.compact_count(n) == shown
