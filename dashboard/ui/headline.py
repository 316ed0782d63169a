"""Headline figures that are never cut: a short value (`$0.0348`, `31.5K`), what qualifies it on a
small line below (`+ 415 unpriced tokens`), the exact figure in the help.

`st.metric` cuts a value wider than its column with "…"; a short value fits any column.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from janux.tracing.analysis import figures
from janux.tracing.analysis import formatting as fmt
from janux.usage import Usage


def _help(exact: str, note: str | None) -> str:
    return f"Exact: {exact}" + (f"\n\n{note}" if note else "")


def _show(col: Any, label: str, value: str, qualifier: str | None, help_text: str) -> None:
    if qualifier:
        col.metric(label, value, delta=qualifier, delta_color="off", delta_arrow="off", help=help_text)
    else:
        col.metric(label, value, help=help_text)


def cost(col: Any, label: str, usage: Usage, note: str | None = None) -> None:
    """A cost: `$0.0348` (`≈ … (est.)` when estimated), with `+ N unpriced tokens` or `+ unknown`
    below it; `unpriced`, `unknown` or `—` when there is no amount. Help: the exact amount."""
    amount = usage.total_cost
    if amount is None or usage.is_unknown:
        _show(col, label, fmt.usage_cost(usage), None, _help(fmt.usage_cost_full(usage), note))
        return
    value = fmt.compact_usd(amount, estimated=usage.is_estimated)
    qualifiers = []
    if usage.unpriced_tokens:
        qualifiers.append(f"+ {fmt.compact_count(usage.unpriced_tokens)} unpriced tokens")
    if usage.unread_rounds:
        qualifiers.append(f"+ {fmt.UNKNOWN}")
    _show(col, label, value, " ".join(qualifiers) or None, _help(fmt.usage_cost_full(usage), note))


def figure(col: Any, label: str, value: figures.Figure, note: str | None = None) -> None:
    """Any figure by its short label (`figures.chart_label`), with its unpriced tokens on the line
    below (`+ 1,900 unpriced tokens`). Help: the exact figure (`figures.page_text`)."""
    short = figures.chart_label(replace(value, unpriced_tokens=0))
    qualifier = None
    if value.unpriced_tokens:  # beside an amount, or the whole of an `unpriced` figure
        more = "+ " if value.has_number else ""
        qualifier = f"{more}{figures.compact_number(value.unpriced_tokens)} unpriced tokens"
    _show(col, label, short, qualifier, _help(figures.page_text(value), note))


def amount(
    col: Any, label: str, value: float | None, *, estimated: bool = False, note: str | None = None
) -> None:
    """A bare amount (`$0.0348`); `—` when there is none (nothing to show, not "unpriced"). Help:
    the exact amount."""
    if value is None:
        _show(col, label, fmt.NO_USAGE, None, note or "Nothing to show.")
        return
    exact = fmt.usd(value, estimated=estimated)
    _show(col, label, fmt.compact_usd(value, estimated=estimated), None, _help(exact, note))


def count(col: Any, label: str, n: int, note: str | None = None) -> None:
    """A count: exact below 10,000, then `31.5K`. Help: the exact count."""
    _show(col, label, fmt.compact_count(n), None, _help(f"{n:,}", note))


def tokens(col: Any, label: str, input_tokens: int, output_tokens: int, note: str | None = None) -> None:
    """Tokens in (`31.5K in`) over tokens out on the line below (`1,404 out`), so the two never
    share one line too narrow for them. Help: both exact."""
    value, below = f"{fmt.compact_count(input_tokens)} in", f"{fmt.compact_count(output_tokens)} out"
    _show(col, label, value, below, _help(f"{input_tokens:,} in / {output_tokens:,} out", note))


def usage_tokens(col: Any, label: str, usage: Usage) -> None:
    """Tokens of a `Usage`, exact and never cut: `790,241 in` over `195,862 out` on the line below
    (`+ unknown` appended there when some model calls' usage could not be read); `unknown` alone
    when none could. Help: the pair on one line."""
    if usage.is_unknown:
        _show(col, label, fmt.UNKNOWN, None, "No model call's usage could be read: unknown, never 0.")
        return
    below = f"{usage.output_tokens:,} out" + (f" + {fmt.UNKNOWN}" if usage.unread_rounds else "")
    _show(col, label, f"{usage.input_tokens:,} in", below, _help(fmt.token_pair(usage), None))


def durations(col: Any, label: str, p50: str, p95: str) -> None:
    """A p50 over its p95 (`36 ms`, below it `p95 64 ms`): two durations in one column, never cut."""
    _show(col, label, p50, f"p95 {p95}", f"p50 {p50} · p95 {p95}")
