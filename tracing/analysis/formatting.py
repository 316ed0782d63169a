"""Text forms of costs, tokens and durations, shared by every page (unknown is never "$0")."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from decimal import Decimal

from janux.tracing.analysis import figures
from janux.tracing.analysis.trace_parts import Usage

UNPRICED = "unpriced"
"""Shown where no price is known."""


MONEY_DECIMALS = figures.MONEY_DECIMALS
"""Fewest decimals of an exact USD amount (the one rule: `figures.exact_usd`)."""

EXPORT_DECIMALS = figures.EXPORT_DECIMALS
"""Most decimals of an exact USD amount, on a page, in a CSV and in JSON alike."""


def money_decimal(value: float, decimals: int = MONEY_DECIMALS) -> Decimal:
    """An amount by the one money rule (float noise removed first, `figures.rounded_usd`) rounded
    half-even to `decimals` places."""
    return figures.rounded_usd(value, decimals)


def money(value: float) -> float:
    """A USD amount as a raw JSON number: the exact amount (`figures.exact_usd`) as a float, so no
    float noise (`0.03147250000000001`) reaches a file and no audited digit is lost."""
    return float(figures.exact_usd(value))


def dollars(amount: float, digits: int) -> str:
    """`$1,234.5678`: an amount rounded by the one money rule to `digits` decimals."""
    if not math.isfinite(amount):  # no amount to round (a sentinel leaking through): say what it is
        return f"${amount}"
    return f"${money_decimal(amount, digits):,.{digits}f}"


def usd(value: float | None, *, estimated: bool = False) -> str:
    """`$0.0013825`, `≈ $0.001200 (est.)` or `unpriced`: the exact amount (`figures.page_text`)."""
    if value is None:
        return UNPRICED
    if not math.isfinite(value):  # no amount to round (a sentinel leaking through): say what it is
        return f"${value}"
    return figures.page_text(figures.money(value, estimated=estimated))


def exact_usd(value: float | None) -> str:
    """`$0.00007815`: every digit an export keeps, no trailing zeros (a repricing compared to the last
    cent's fraction); `unpriced` when None."""
    if value is None:
        return UNPRICED
    if not math.isfinite(value):
        return f"${value}"
    return f"${format(money_decimal(value, EXPORT_DECIMALS).normalize(), ',f')}"


def compact_usd(value: float | None, *, estimated: bool = False) -> str:
    """A headline's short amount (`figures.chart_label`): `$0.0348`, `$0.000076`, `$12.35`, `$1,234`,
    `$1.23M`. The exact amount (`usd`) goes in the headline's help."""
    if value is None or not math.isfinite(value):
        return usd(value, estimated=estimated)
    return figures.chart_label(figures.money(value, estimated=estimated))


def compact_count(n: int) -> str:
    """A headline's short count (`figures.compact_number`): exact below 10,000 (`1,404`), then
    `31.5K`, `1.2M`, `3.4B`; the exact count goes in the headline's help."""
    return figures.compact_number(n)


NO_USAGE = "—"
"""Shown where no tokens were used at all (nothing to price, so not "unpriced")."""

UNKNOWN = "unknown"
"""Shown where rounds ran but their usage could not be read (never 0, never "—")."""


def usage_cost(usage: Usage) -> str:
    """Cost of a usage, labelled as an estimate when any part of it is; `—` when nothing was used;
    `unknown` when rounds ran whose usage could not be read (`+ unknown` when only some)."""
    if usage.is_unknown:
        return UNKNOWN
    if usage.total_cost is None and usage.total_tokens == 0 and usage.unpriced_tokens == 0:
        return NO_USAGE
    text = usd(usage.total_cost, estimated=usage.is_estimated)
    return f"{text} + {UNKNOWN}" if usage.unread_rounds else text


def usage_cost_full(usage: Usage) -> str:
    """Cost plus the unpriced tokens beside it (`$0.12 + 300 unpriced tokens`): `figures.cost`."""
    if usage.total_cost is None:
        return usage_cost(usage)
    return figures.page_text(figures.cost(usage))


def tokens(usage: Usage) -> str:
    """`1,200 in / 340 out`; `unknown` when rounds ran and no usage was read; `+ N unread` appended
    when some rounds' usage could not be read."""
    if usage.is_unknown:
        return UNKNOWN
    text = f"{usage.input_tokens:,} in / {usage.output_tokens:,} out"
    return text + (f" + {usage.unread_rounds:,} unread" if usage.unread_rounds else "")


def token_pair(usage: Usage) -> str:
    """`1,200 / 340`; `unknown` when rounds ran and no usage was read; `+ unknown` appended when
    some rounds' usage could not be read (their tokens are not in the figures)."""
    if usage.is_unknown:
        return UNKNOWN
    text = f"{usage.input_tokens:,} / {usage.output_tokens:,}"
    return f"{text} + {UNKNOWN}" if usage.unread_rounds else text


def ms(value: float | None) -> str:
    """`1,234 ms`, `1.2 ms`, or `open` when the span has no end (`figures.duration_ms`)."""
    return figures.page_text(figures.duration_ms(value))


def utc(unix_ns: int) -> str:
    """`2025-01-31 09:15:02` (UTC, to the second)."""
    return datetime.fromtimestamp(unix_ns / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def short_id(span_id: str | None) -> str:
    """First 8 characters of an id (full ids live in the inspector)."""
    return (span_id or "")[:8]


def count(n: int, noun: str) -> str:
    """`1 attempt`, `2 attempts`, `0 attempts`."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


MAX_INDENT_DEPTH = 32
"""Deepest level indented in a tree shown as text; deeper ones say their depth instead (a tree
thousands deep would otherwise make lines of tens of kilobytes: 200 MiB for 10,000 loops)."""
INDENT = "    "
"""One level of indentation."""


def indent(depth: int) -> str:
    """Indentation of a tree row at `depth`: one `INDENT` per level, at most `MAX_INDENT_DEPTH`, then
    the depth in words."""
    if depth <= MAX_INDENT_DEPTH:
        return INDENT * depth
    return f"{INDENT * MAX_INDENT_DEPTH}[depth {depth}] "


def clipped(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to `limit` characters, with a note of what was left out; and how many were."""
    if len(text) <= limit:
        return text, 0
    left_out = len(text) - limit
    return f"{text[:limit]}… [{left_out:,} more characters]", left_out


_MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~$:&=")
"""Characters with a meaning in Streamlit markdown (CommonMark, HTML, LaTeX `$`, `:red[...]`
directives, `:emoji:` codes); each may be backslash-escaped."""


def markdown_text(text: str) -> str:
    """`text` shown literally by a markdown element (`st.info`, `st.caption`, ...): every special
    character escaped and line breaks flattened, so a name from a trace cannot become a link, an
    image, a heading or coloured text."""
    flat = " ".join(str(text).splitlines())
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIAL else ch for ch in flat)


MONEY_SUFFIXES = (".cost", ".cost_estimate", "_cost", "_usd")
"""Attribute names (endings) that hold US dollars."""


def attribute_text(key: str, value: object) -> str:
    """An attribute's value as a person reads it: money as `usd` (`$0.003864`, never the float's
    binary noise `0.0038639499999999997`), other floats to 12 significant digits, the rest as is."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if key.endswith(MONEY_SUFFIXES):
        return usd(value)
    return f"{value:.12g}"
