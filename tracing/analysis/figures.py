"""Figures: every number the product shows, as a typed value with a state, and one renderer per medium.

A `Figure` is money, tokens, a count, a duration or a rate, in one of the states a number can be in
(known, estimated, unknown, unpriced, no limit, not run, open, or nothing to show). Pages, charts,
tables, CSV files, the command line and JSON never format a number themselves: they build a figure
here and render it with the function for their medium, so one amount reads the same digits
everywhere:

- `page_text`:   a page's and a table's exact text (`$0.0013825 + 221 unpriced tokens`, `1,520`, `43.8%`);
- `cli_text`:    the command line's text (the page's, so `janux trace` and the page never differ);
- `chart_label`: a short label that is never cut (`$0.00138`, `31.5K`, `43.8%`);
- `csv_value`:   a CSV cell: the exact decimal digits of `page_text` (`0.0000756`, never `7.56e-05`);
- `json_value`:  a raw number for JSON (None when there is none; the unit goes in the key).

Money's one rule (`exact_usd`): the amount rounded to `COST_DECIMALS` (float noise such as
0.00028649999999999997 is 0.0002865), then half-even to `EXPORT_DECIMALS`, shown with at least
`MONEY_DECIMALS` decimals and as many more as the amount has (`$0.001000`, `$0.0013825`,
`$4.378500`), so a column of amounts lines up and the CSV keeps every digit the page shows.
No Streamlit or pandas import here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from enum import StrEnum
from typing import Final

from janux.usage import COST_DECIMALS, Usage

MONEY_DECIMALS: Final = 6
"""Fewest decimals of an exact USD amount (`$0.001000`, `$4.378500`): one column lines up."""
EXPORT_DECIMALS: Final = 10
"""Most decimals of an exact USD amount: a fraction of a micro-dollar per round is kept, and no
float noise survives."""
NOTHING: Final = "—"
"""Text of a figure with nothing to show (no tokens used, no limit set at all)."""


class State(StrEnum):
    """What a figure's number is: its words are what a page shows when there is no number."""

    KNOWN = "known"
    """Measured or recorded: the number is the fact."""
    ESTIMATED = "estimated"
    """Money priced from a price table, not recorded: shown `≈ … (est.)`."""
    UNKNOWN = "unknown"
    """Something ran but its number could not be read: never 0, never `—`."""
    UNPRICED = "unpriced"
    """Tokens were used and no price is known."""
    NO_LIMIT = "no limit"
    """A budget line that was not set."""
    NOT_RUN = "not run"
    """A handoff that never started an attempt (denied, or cut before it ran)."""
    OPEN = "open"
    """A span still running, or whose end never arrived: no duration yet."""
    NONE = "none"
    """Nothing to show: the value does not apply (shown `—`, empty in a CSV)."""


class Kind(StrEnum):
    """What a figure counts (its unit)."""

    MONEY = "usd"
    """US dollars."""
    TOKENS = "tokens"
    """Model tokens."""
    COUNT = "count"
    """Rounds, runs, attempts, delegations, traces, ..."""
    DURATION = "ms"
    """Milliseconds of wall clock."""
    RATE = "fraction"
    """A share of a whole, 0..1, shown as a percentage."""


_WORDS: Final = {
    State.UNKNOWN: "unknown",
    State.UNPRICED: "unpriced",
    State.NO_LIMIT: "no limit",
    State.NOT_RUN: "not run",
    State.OPEN: "open",
    State.NONE: NOTHING,
}
"""The words of the states that carry no number."""


@dataclass(frozen=True, slots=True)
class Figure:
    """One number the product shows, with its state: made by the constructors below, rendered by
    `page_text`, `cli_text`, `chart_label`, `csv_value` and `json_value`."""

    kind: Kind
    """Its unit."""
    state: State
    """Whether there is a number, and what kind of number it is."""
    value: Decimal | None = None
    """The exact number (USD rounded by `exact_usd`, a count, milliseconds, a fraction); None when
    the state carries no number."""
    unpriced_tokens: int = 0
    """Money only: tokens used beside the amount that have no price (they travel with the cost)."""
    partly_unknown: bool = False
    """Money and tokens only: some model calls' usage could not be read, so the number is a floor."""

    @property
    def has_number(self) -> bool:
        """True when there is a number to show (known or estimated)."""
        return self.value is not None


_COST_QUANTUM: Final = Decimal(1).scaleb(-COST_DECIMALS)
_EXPORT_QUANTUM: Final = Decimal(1).scaleb(-EXPORT_DECIMALS)
_MONEY_QUANTUM: Final = Decimal(1).scaleb(-MONEY_DECIMALS)
EXACT_USD_KEPT: Final = 8_192
"""Amounts whose `exact_usd` is kept (a page shows the same amount in several places: a loop's
inclusive cost in its row and in the row's breakdown, in its attempt's and delegation's rows)."""


def noise_free_usd(amount: float | Decimal) -> Decimal:
    """An amount rounded to `COST_DECIMALS`: a float's noise (0.00028649999999999997) removed, an exact
    `Decimal` (a repricing's product) held to the same decimals, so both add up alike."""
    if isinstance(amount, Decimal):
        return amount.quantize(_COST_QUANTUM, rounding=ROUND_HALF_EVEN)
    return Decimal(repr(round(float(amount), COST_DECIMALS)))


def exact_usd(amount: float | Decimal) -> Decimal:
    """The one money rounding rule (see the module's docstring).

    Kept per amount (`EXACT_USD_KEPT`): a 10,000-span trace's first 1,000 tree rows format about
    1,400 amounts, at 6-15 µs each. Zero is not kept: -0.0 equals 0.0 as a key, and keeps its sign."""
    if not amount:
        return _exact_usd(amount)
    return _kept_exact_usd(amount)


def _exact_usd(amount: float | Decimal) -> Decimal:
    noise_free = noise_free_usd(amount)
    exact = noise_free.quantize(_EXPORT_QUANTUM, rounding=ROUND_HALF_EVEN).normalize()
    if exact.as_tuple().exponent > -MONEY_DECIMALS:  # type: ignore[operator]  # finite: an int exponent
        exact = exact.quantize(_MONEY_QUANTUM)
    return exact


# typed: a float and a Decimal of equal value are two keys (each is rounded by its own path); equal
# Decimals of other exponents give one result (each is quantized first).
_kept_exact_usd = functools.lru_cache(maxsize=EXACT_USD_KEPT, typed=True)(_exact_usd)


def rounded_usd(amount: float, decimals: int) -> Decimal:
    """An amount by the one rule (`exact_usd`'s noise removal), rounded half-even to `decimals`."""
    return noise_free_usd(amount).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN)


def plain_decimal(value: float | Decimal) -> str:
    """A number's shortest exact digits in plain notation (`0.0000756`, `31.5`), never `7.56e-05`."""
    number = value if isinstance(value, Decimal) else Decimal(repr(float(value)))
    return format(number, "f")


# Constructors -----------------------------------------------------------------------------------


def money(
    amount: float | Decimal | None,
    *,
    estimated: bool = False,
    unpriced_tokens: int = 0,
    unknown: bool = False,
    partly_unknown: bool = False,
) -> Figure:
    """A USD amount (a float as recorded, or an exact `Decimal`); without one: `unpriced` when tokens
    went unpriced (or the amount is a table's `-inf` unpriced cell), `unknown` when usage could not
    be read, else nothing to show."""
    if amount is None or not math.isfinite(amount):
        if amount == -math.inf:
            return Figure(Kind.MONEY, State.UNPRICED, unpriced_tokens=unpriced_tokens)
        state = State.UNPRICED if unpriced_tokens else State.UNKNOWN if unknown else State.NONE
        return Figure(Kind.MONEY, state, unpriced_tokens=unpriced_tokens)
    state = State.ESTIMATED if estimated else State.KNOWN
    return Figure(Kind.MONEY, state, exact_usd(amount), unpriced_tokens, partly_unknown)


def cost(usage: Usage) -> Figure:
    """The cost of a usage (recorded plus estimated), its unpriced tokens travelling with it;
    `unknown` when rounds ran whose usage could not be read, nothing when nothing was used."""
    if usage.is_unknown:
        return Figure(Kind.MONEY, State.UNKNOWN)
    return money(
        usage.total_cost,
        estimated=usage.is_estimated,
        unpriced_tokens=usage.unpriced_tokens,
        partly_unknown=usage.unread_rounds > 0,
    )


def tokens(n: int | None, *, unknown: bool = False) -> Figure:
    """A token count; `unknown` when it could not be read, nothing when there is none."""
    if n is None:
        return Figure(Kind.TOKENS, State.UNKNOWN if unknown else State.NONE)
    return Figure(Kind.TOKENS, State.KNOWN, Decimal(int(n)))


def usage_tokens(usage: Usage) -> Figure:
    """Input plus output tokens of a usage (`unknown` when rounds ran and none could be read)."""
    if usage.is_unknown:
        return Figure(Kind.TOKENS, State.UNKNOWN)
    partly = usage.unread_rounds > 0
    return Figure(Kind.TOKENS, State.KNOWN, Decimal(usage.total_tokens), partly_unknown=partly)


def count(n: int | None) -> Figure:
    """A count of things (rounds, runs, attempts); nothing to show when None."""
    return Figure(Kind.COUNT, State.NONE) if n is None else Figure(Kind.COUNT, State.KNOWN, Decimal(int(n)))


def duration_ms(value: float | None, *, missing: State = State.OPEN) -> Figure:
    """A wall-clock duration in milliseconds; `open` (or `missing`) when there is none."""
    if value is None or not math.isfinite(value):
        return Figure(Kind.DURATION, missing)
    return Figure(Kind.DURATION, State.KNOWN, Decimal(repr(float(value))))


def rate(part: float, whole: float) -> Figure:
    """`part / whole` as a share; nothing to show when the whole is 0."""
    if not whole:
        return Figure(Kind.RATE, State.NONE)
    return share(part / whole)


def share(fraction: float | None) -> Figure:
    """A share already divided (0..1); nothing to show when None."""
    if fraction is None or not math.isfinite(fraction):
        return Figure(Kind.RATE, State.NONE)
    return Figure(Kind.RATE, State.KNOWN, Decimal(repr(float(fraction))))


# Renderers --------------------------------------------------------------------------------------


def _unpriced_note(figure: Figure, number: str) -> str:
    return f" + {number} unpriced tokens" if figure.unpriced_tokens and figure.has_number else ""


def _money_text(figure: Figure, amount: str) -> str:
    sign = "-" if amount.startswith("-") else ""
    body = f"{sign}${amount.lstrip('-')}"
    text = f"≈ {body} (est.)" if figure.state is State.ESTIMATED else body
    return text + (" + unknown" if figure.partly_unknown else "")


def _duration_text(value: Decimal) -> str:
    ms = float(value)
    return f"{ms:,.1f} ms" if abs(ms) < 10 else f"{ms:,.0f} ms"


def _percent(value: Decimal) -> str:
    return f"{float(value) * 100:,.1f}%"


def page_text(figure: Figure) -> str:
    """The exact text of a figure on a page or in a table: `$0.0013825 + 221 unpriced tokens`,
    `≈ $0.002000 (est.)`, `1,520`, `31 ms`, `43.8%`, or its state's word (`unpriced`, `—`)."""
    if figure.value is None:
        return _WORDS.get(figure.state, figure.state.value)
    if figure.kind is Kind.MONEY:
        digits = f"{figure.value:,f}"
        return _money_text(figure, digits) + _unpriced_note(figure, f"{figure.unpriced_tokens:,}")
    if figure.kind is Kind.DURATION:
        return _duration_text(figure.value)
    if figure.kind is Kind.RATE:
        return _percent(figure.value)
    text = f"{int(figure.value):,}"
    return text + (" + unknown" if figure.partly_unknown else "")


def cli_text(figure: Figure) -> str:
    """The command line's text of a figure: the page's (`page_text`), so they never differ."""
    return page_text(figure)


def compact_usd_text(amount: Decimal | float) -> str:
    """A short amount: three significant digits below $1 (`$0.0348`, `$0.000076`), cents up to
    $1,000 (`$12.35`), whole dollars up to a million (`$1,234`), then `$1.23M`; by the one rule."""
    value = float(amount)
    sign, size = ("-" if value < 0 else ""), abs(value)
    if size >= 1_000_000:
        return f"{sign}${rounded_usd(size / 1_000_000, 2):,.2f}M"
    if size >= 1_000:
        return f"{sign}${rounded_usd(size, 0):,.0f}"
    if size >= 1 or size == 0:
        return f"{sign}${rounded_usd(size, 2):,.2f}"
    digits = max(2, min(MONEY_DECIMALS, 2 - math.floor(math.log10(size))))
    return f"{sign}${rounded_usd(size, digits):,.{digits}f}"


def compact_number(n: int) -> str:
    """A short count: exact below 10,000 (`1,404`), then `31.5K`, `1.2M`, `3.4B`."""
    for scale, suffix in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "K")):
        if abs(n) >= 10_000 and round(abs(n) / scale, 1) >= 1:
            return f"{n / scale:,.1f}{suffix}"
    return f"{n:,}"


def chart_label(figure: Figure) -> str:
    """A short label for a chart or a headline, never cut: `$0.00138 + 221 unpriced`, `31.5K`,
    `43.8%`, `31 ms`; the exact figure (`page_text`) goes in its tooltip or help."""
    if figure.value is None:
        return _WORDS.get(figure.state, figure.state.value)
    if figure.kind is Kind.MONEY:
        text = compact_usd_text(figure.value)
        text = f"≈ {text} (est.)" if figure.state is State.ESTIMATED else text
        unpriced = f" + {compact_number(figure.unpriced_tokens)} unpriced" if figure.unpriced_tokens else ""
        return text + unpriced + (" + unknown" if figure.partly_unknown else "")
    if figure.kind is Kind.DURATION:
        return _duration_text(figure.value)
    if figure.kind is Kind.RATE:
        return _percent(figure.value)
    return compact_number(int(figure.value)) + (" + unknown" if figure.partly_unknown else "")


def csv_value(figure: Figure) -> str | int | None:
    """A CSV cell: money as the exact decimal digits of `page_text` (`0.0013825`, never `7.56e-05`),
    counts as integers, durations in ms and rates as fractions in plain notation; a state's word
    (`unpriced`, `unknown`, `no limit`) where there is no number, and an empty cell for nothing."""
    if figure.value is None:
        return None if figure.state is State.NONE else _WORDS.get(figure.state, figure.state.value)
    if figure.kind in (Kind.TOKENS, Kind.COUNT):
        return int(figure.value)
    return plain_decimal(figure.value)


def json_value(figure: Figure) -> float | int | None:
    """A raw JSON number (money in USD, durations in ms, rates as fractions); None without one."""
    if figure.value is None:
        return None
    if figure.kind in (Kind.TOKENS, Kind.COUNT):
        return int(figure.value)
    return float(figure.value)
