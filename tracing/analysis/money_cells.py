"""Money and token cells of the dashboard's tables: numbers that sort, text that never lies.

`st.dataframe` shows every missing value (None/NaN) of a table as one placeholder, so the two
kinds of empty money cell are stored differently, and a money column stays numeric (sortable):

- a price:            the USD amount, shown as `$0.001234` (estimate columns as `≈ $0.001234`);
- `UNPRICED` (-inf):  tokens were used and no price is known, shown as `unpriced` and sorted below
                      every price: unknown is never shown as $0, and never as a bare "None";
- `UNKNOWN` (-1e300):  model calls ran whose usage could not be read, shown as `unknown`: not 0,
                      not `—` (which means no usage);
- None:               nothing to price (no tokens at all, or no estimate made), shown as `—`.

Missing token counts are None and show as `—` too. A money column is one whose name ends in
`USD`. `money_styler` renders these cells for a table; `export_frame` writes them for a CSV
(`unpriced` spelled out, `—` left empty). No Streamlit import here.
"""

from __future__ import annotations

import math
from typing import Any, Final

import pandas as pd
from pandas.io.formats.style import Styler

from janux.tracing.analysis import figures
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_parts import Usage

UNPRICED: Final = float("-inf")
"""Value of a money cell whose price is unknown although tokens were used."""
UNKNOWN: Final = -1e300
"""Value of a money cell whose usage itself could not be read (rounds ran, no usage was read):
shown as `unknown`, sorted just above `UNPRICED`, below every price."""
MISSING: Final = fmt.NO_USAGE
"""Text of a missing value (the tables' placeholder)."""
MONEY_SUFFIX: Final = "USD"
"""Columns whose name ends with this hold money cells."""
ESTIMATED_MARK: Final = "estimated"
"""Money columns whose name contains this hold estimates (shown with `≈`)."""
DELTA_MARK: Final = "Δ"
"""Money columns whose name contains this hold differences (shown with a sign)."""


def cost_cell(cost: float | None, unpriced_tokens: int, *, unknown: bool = False) -> float | None:
    """A cost cell: the amount, `UNPRICED` when tokens went unpriced, `UNKNOWN` when usage could not
    be read (`unknown`), None when no tokens were used."""
    if cost is not None:
        return cost
    if unpriced_tokens:
        return UNPRICED
    return UNKNOWN if unknown else None


def total_cell(usage: Usage) -> float | None:
    """Recorded plus estimated cost of a usage as one money cell."""
    return cost_cell(usage.total_cost, usage.unpriced_tokens, unknown=usage.is_unknown)


def delta_cell(a: float | None, b: float | None) -> float | None:
    """`b - a` of two money cells; a missing side counts as nothing, an unpriced side makes it unpriced."""
    if a is None and b is None:
        return None
    if a == UNKNOWN or b == UNKNOWN:
        return UNKNOWN
    if a == UNPRICED or b == UNPRICED:
        return UNPRICED
    return (b or 0.0) - (a or 0.0)


def is_money(column: object) -> bool:
    """True for a money column (its name ends with `USD`)."""
    return isinstance(column, str) and column.endswith(MONEY_SUFFIX)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def money_text(value: Any, *, estimated: bool = False, signed: bool = False) -> str:
    """`$0.001234`, `≈ $0.001234`, `+$0.000100`, `unpriced` or `—`."""
    if _missing(value):
        return MISSING
    amount = float(value)
    if amount == UNPRICED:
        return fmt.UNPRICED
    if amount == UNKNOWN:
        return fmt.UNKNOWN
    text = figures.page_text(figures.money(abs(amount)))
    sign = ("+" if amount > 0 else "-" if amount < 0 else "") if signed else ("-" if amount < 0 else "")
    return f"≈ {sign}{text}" if estimated else f"{sign}{text}"


def figure(value: Any, *, estimated: bool = False) -> figures.Figure:
    """The figure a money cell holds (`UNPRICED`, `UNKNOWN` and missing cells keep their state)."""
    if _missing(value):
        return figures.money(None)
    amount = float(value)
    if amount == UNKNOWN:
        return figures.money(None, unknown=True)
    if amount == UNPRICED:
        return figures.Figure(figures.Kind.MONEY, figures.State.UNPRICED)
    return figures.money(amount, estimated=estimated)


def money_metric(value: float | None, *, estimated: bool = False) -> str:
    """A money cell as a headline figure (`$0.0373`, `≈ $0.0012 (est.)`, `unpriced`, `—`)."""
    if value is None:
        return MISSING
    if value == UNKNOWN:
        return fmt.UNKNOWN
    return fmt.UNPRICED if value == UNPRICED else fmt.usd(value, estimated=estimated)


TOKENS_SUFFIX: Final = "tokens"
"""Token columns' names end with it; an unknown count in one is `UNKNOWN`, as in money columns."""


def is_tokens(column: object) -> bool:
    """True for a token-count column (its name ends with `tokens`)."""
    return isinstance(column, str) and column.endswith(TOKENS_SUFFIX)


def token_text(value: Any) -> str:
    """`1,200`, `unknown` (`UNKNOWN`) or `—`."""
    if _missing(value):
        return MISSING
    return fmt.UNKNOWN if value == UNKNOWN else f"{int(value):,}"


def with_unknown_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """The token columns holding an `UNKNOWN` count kept as Python numbers (object dtype): pandas
    would turn the column's counts into floats (`840.0`) beside the float sentinel."""
    for col in frame.columns:
        if is_tokens(col) and any(v == UNKNOWN for v in frame[col]):
            frame[col] = pd.Series([_count(v) for v in frame[col]], index=frame.index, dtype=object)
    return frame


def _count(value: Any) -> Any:
    if _missing(value) or value == UNKNOWN:
        return None if _missing(value) else UNKNOWN
    return int(value)


RATE_SUFFIX: Final = "rate"
"""Columns whose name ends with this hold shares (0..1), shown as percentages (`43.8%`)."""


def is_rate(column: object) -> bool:
    """True for a rate column (its name ends with `rate`): a share kept as a number, shown as
    `figures.page_text` shows a rate, so a table reads what the map's labels and panels read."""
    return isinstance(column, str) and column.endswith(RATE_SUFFIX)


def rate_text(value: Any) -> str:
    """`43.8%`, or `—` for a missing share."""
    return MISSING if _missing(value) else figures.page_text(figures.share(float(value)))


def _formatter(column: str) -> Any:
    estimated, signed = ESTIMATED_MARK in column, DELTA_MARK in column
    return lambda value: money_text(value, estimated=estimated, signed=signed)


def money_styler(frame: pd.DataFrame) -> Styler:
    """The frame with its money columns, rate columns, and token columns holding an unknown count,
    rendered as text (the numbers underneath still sort)."""
    money = {col: _formatter(col) for col in frame.columns if is_money(col)}
    counts = {col: token_text for col in frame.columns if is_tokens(col) and frame[col].dtype == object}
    rates = {c: rate_text for c in frame.columns if is_rate(c) and pd.api.types.is_float_dtype(frame[c])}
    return frame.style.format({**money, **counts, **rates})


def without_empty_estimates(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame without estimate columns that are empty on every row (nothing was estimated)."""
    return frame.drop(columns=[c for c in frame.columns if ESTIMATED_MARK in c and frame[c].isna().all()])


def export_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy for CSV, every cell by `figures.csv_value`: money as the exact digits the page shows
    (`0.0000756`, never `7.56e-05`), `unpriced` and `unknown` spelled out, missing cells empty; any
    other float in plain notation too."""
    out = frame.copy()
    for col in out.columns:
        if is_money(col):
            values = [figures.csv_value(figure(v)) for v in out[col]]
            out[col] = pd.Series(values, index=out.index, dtype=object)
        elif is_tokens(col) and out[col].dtype == object:
            out[col] = pd.Series([_export_count(v) for v in out[col]], index=out.index, dtype=object)
        elif pd.api.types.is_float_dtype(out[col]) or out[col].dtype == object:
            out[col] = pd.Series([_export_other(v) for v in out[col]], index=out.index, dtype=object)
    return out


def _export_count(value: Any) -> Any:
    if _missing(value):
        return None
    return fmt.UNKNOWN if value == UNKNOWN else int(value)


def _export_other(value: Any) -> Any:
    """A float of any other column in plain notation (`0.0000756`); other values as they are."""
    if not isinstance(value, float) or math.isinf(value):
        return value
    return None if math.isnan(value) else figures.plain_decimal(value)


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """The frame as a UTF-8 CSV file (see `export_frame`)."""
    text: str = export_frame(frame).to_csv(index=False)
    return text.encode()
