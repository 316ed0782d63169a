"""Usage rows: the one place that says what a span adds to `TraceSource.usage_by`, and how groups end.

`span_usage` turns one span into its usage row (or None): the embedded store keeps these rows in
`span_usage` at write time, and in-memory sources aggregate them directly with `aggregate_usage`,
so both follow the same accounting rule (see `janux.tracing.analysis.facts.UsageAggregate`). The ClickHouse
source computes the same rows in SQL; `finish` rounds and orders the groups of every source alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Final, NamedTuple

from janux.tracing import conventions as c
from janux.tracing.analysis.facts import USAGE_DIMENSIONS, UsageAggregate, UsageDimension
from janux.tracing.analysis.readers.spans import MODEL_KEYS, classify, read_usage
from janux.tracing.columns import positions
from janux.tracing.records import STATUS_ERROR, attr_float, attr_int, attr_str

COST_DECIMALS = 12
"""Costs are rounded to this many decimals, so float sums taken in another order agree."""


class UsageRow(NamedTuple):
    """What one span adds to one dimension."""

    dimension: UsageDimension
    """`agent` (invoke_agent), `model` (inference) or `tool` (delegate tool span)."""
    key: str
    """Agent name, request model or tool name ("" when absent)."""
    input_tokens: int | None
    """Input tokens the span reports (None for tool spans: their usage is their attempts')."""
    output_tokens: int | None
    """Output tokens the span reports."""
    cost: float | None
    """USD the span reports."""
    unpriced_tokens: int | None
    """Tokens without a price."""
    failed: bool
    """ERROR loop or round, or a delegation whose final handoff status is failing."""
    unread: bool | None = None
    """Model calls: False when usage was read, True when it is unknown (under names Janux does not
    read, or absent), None for a failed call that returned none. Loops and delegations: True when
    some of their calls are unknown."""


USAGE_ROW_COLUMNS: Final = {
    "dimension": "Dim", "key": "Key", "input_tokens": "InputTokens", "output_tokens": "OutputTokens",
    "cost": "Cost", "unpriced_tokens": "Unpriced", "failed": "Failed", "unread": "Unread",
}  # fmt: skip
"""`span_usage` column of each `UsageRow` field."""

USAGE_COLUMNS: Final = (
    "TraceId", "SpanId", "ParentSpanId", *(USAGE_ROW_COLUMNS[field] for field in UsageRow._fields),
)  # fmt: skip
"""Columns of `span_usage`, in table order: a span's ids, then its `UsageRow`, field by field."""

USAGE_AT: Final = positions(USAGE_COLUMNS)
"""Column name -> position in a `span_usage` row."""

MAX_COUNT = 2**40
"""Largest token count believed: larger (or infinite) values count as absent, so that sums over
millions of spans stay within 64-bit integers in every source."""


def safe_int(attributes: dict[str, Any], key: str) -> int | None:
    """`attr_int` for token counts: infinities (which `int()` refuses) and counts beyond
    `MAX_COUNT` are treated as absent."""
    try:
        value = attr_int(attributes, key)
    except OverflowError:
        return None
    return value if value is not None and -MAX_COUNT <= value <= MAX_COUNT else None


def safe_float(attributes: dict[str, Any], key: str) -> float | None:
    """`attr_float`, with NaN and infinities treated as absent."""
    value = attr_float(attributes, key)
    return value if value is not None and math.isfinite(value) else None


def _key(attributes: dict[str, Any], name: str) -> str:
    value = attributes.get(name)
    if type(value) is str:  # the common case, on the write path's hot loop
        return value
    return attr_str(attributes, name) or ""


def _count(attributes: dict[str, Any], key: str) -> int | None:
    """`safe_int` with the common cases (absent, a plain int) first."""
    value = attributes.get(key)
    if value is None:
        return None
    if type(value) is int:
        return value if -MAX_COUNT <= value <= MAX_COUNT else None
    return safe_int(attributes, key)


def _money(attributes: dict[str, Any], key: str) -> float | None:
    """`safe_float` with the common cases (absent, a finite float) first."""
    value = attributes.get(key)
    if value is None:
        return None
    if type(value) is float and math.isfinite(value):
        return value
    return safe_float(attributes, key)


_AGENT: Final = c.OP_INVOKE_AGENT
_INFERENCE: Final = c.INFERENCE_OPERATIONS
_TOOL: Final = c.OP_EXECUTE_TOOL
_row = tuple.__new__  # builds a UsageRow without NamedTuple's Python-level __new__ (hot loop)


def _role(op: str, attributes: dict[str, Any], name: str) -> str:
    """The span's role; Janux's own operations first (the write path's common case)."""
    if op == _AGENT:
        return "agent"
    if op in _INFERENCE:
        return "inference"
    if op == _TOOL:
        return "tool"
    return classify(attributes, name)[0]


def _model_key(attributes: dict[str, Any]) -> str:
    for key in MODEL_KEYS:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _inference_row(attributes: dict[str, Any], status_code: str) -> tuple[Any, ...]:
    inputs = _count(attributes, c.GEN_AI_USAGE_INPUT_TOKENS)
    outputs = _count(attributes, c.GEN_AI_USAGE_OUTPUT_TOKENS)
    if inputs is None and outputs is None:  # older or other conventions' names, or unknown
        state, inputs, outputs = read_usage(attributes, status_code)
        unread = None if state == "failed" else state != "read"
    else:
        unread = False
    cost = _money(attributes, c.JANUX_ROUND_COST)
    unpriced = unpriced_of_round(inputs, outputs, cost)
    model = _key(attributes, c.GEN_AI_REQUEST_MODEL) or _model_key(attributes)
    return ("model", model, inputs, outputs, cost, unpriced, status_code == STATUS_ERROR, unread)


def span_usage(op: str, attributes: dict[str, Any], status_code: str, name: str = "") -> UsageRow | None:
    """The usage row of a span with operation `op` (and span `name`, for conventions that name
    their kinds otherwise), or None when it adds to no dimension on its own.

    An agent span adds its `janux.turn.*` (other runtimes' agents record none: their own calls are
    summed from the trace's structure, `analysis.readers.structure`); a model call its usage under
    any name read; a Janux delegate tool span its count."""
    role = _role(op, attributes, name)
    if role == "agent":
        values = (
            "agent",
            _key(attributes, c.GEN_AI_AGENT_NAME),
            _count(attributes, c.JANUX_TURN_INPUT_TOKENS),
            _count(attributes, c.JANUX_TURN_OUTPUT_TOKENS),
            _money(attributes, c.JANUX_TURN_COST),
            _count(attributes, c.JANUX_TURN_UNPRICED_TOKENS),
            status_code == STATUS_ERROR,
            None,
        )
    elif role == "inference":
        values = _inference_row(attributes, status_code)
    elif role == "tool" and attributes.get(c.GEN_AI_TOOL_TYPE) == c.TOOL_TYPE_DELEGATE:
        failing = attr_str(attributes, c.JANUX_HANDOFF_STATUS) in c.FAILING_STATUSES
        values = ("tool", _key(attributes, c.GEN_AI_TOOL_NAME), None, None, None, None, failing, None)
    else:
        return None
    return _row(UsageRow, values)


def unpriced_of_round(inputs: int | None, outputs: int | None, cost: float | None) -> int | None:
    """0 for a priced round, its tokens for an unpriced one, None when it reports no usage."""
    if cost is not None:
        return 0
    if inputs is None and outputs is None:
        return None
    return (inputs or 0) + (outputs or 0)


GROUP_COLUMNS: Final = (
    "group_key", "group_count", "group_failed", "input_sum", "output_sum", "cost_sum", "unpriced_sum",
    "unread_sum",
)  # fmt: skip
"""Columns of a grouped usage row, as every source's `usage_by` query selects them (see `group_select`):
key, count, failed, input tokens, output tokens, cost, unpriced tokens, items with unknown usage."""

_G = positions(GROUP_COLUMNS)
_G_KEY, _G_COUNT, _G_FAILED = _G["group_key"], _G["group_count"], _G["group_failed"]
_G_IN, _G_OUT, _G_COST, _G_UNPRICED = _G["input_sum"], _G["output_sum"], _G["cost_sum"], _G["unpriced_sum"]
_G_UNREAD = _G["unread_sum"]


def group_select(expressions: dict[str, str]) -> str:
    """The SELECT list of a grouped usage query: `expression AS name` for every `GROUP_COLUMNS` name."""
    return ", ".join(f"{expressions[name]} AS {name}" for name in GROUP_COLUMNS)


def finish(rows: Iterable[Sequence[Any]], limit: int) -> list[UsageAggregate]:
    """Groups (`GROUP_COLUMNS` rows) as `UsageAggregate`s: costs rounded, most expensive first
    (unpriced last), then by tokens and key, at most `limit`."""
    out = [
        UsageAggregate(
            key=str(row[_G_KEY] or ""),
            count=int(row[_G_COUNT]),
            failed=int(row[_G_FAILED] or 0),
            input_tokens=None if row[_G_IN] is None else int(row[_G_IN]),
            output_tokens=None if row[_G_OUT] is None else int(row[_G_OUT]),
            cost=None if row[_G_COST] is None else round(float(row[_G_COST]), COST_DECIMALS),
            unpriced_tokens=None if row[_G_UNPRICED] is None else int(row[_G_UNPRICED]),
            unread=int(row[_G_UNREAD] or 0),
        )
        for row in rows
    ]
    out.sort(
        key=lambda g: (
            g.cost is None,
            -(g.cost or 0.0),
            -((g.input_tokens or 0) + (g.output_tokens or 0)),
            g.key,
        )
    )
    return out[: max(0, limit)]


def check_dimension(dimension: str) -> UsageDimension:
    """`dimension` if it is a known one; raises ValueError naming the parameter otherwise."""
    for known in USAGE_DIMENSIONS:
        if dimension == known:
            return known
    raise ValueError(f"dimension: expected one of {', '.join(USAGE_DIMENSIONS)}, got {dimension!r}")


class UsageSums(NamedTuple):
    """Summed usage; None where nothing was reported."""

    input_tokens: int | None
    """Input tokens."""
    output_tokens: int | None
    """Output tokens."""
    cost: float | None
    """USD."""
    unpriced_tokens: int | None
    """Tokens without a price."""


def bill_reconciled(has_bill: bool, bill: UsageSums, turns: UsageSums) -> bool | None:
    """Invariant 2: the bill equals the summed turns (tokens exactly, cost within 1e-9 relative);
    None without a bill. Every source compares with this one function."""
    if not has_bill:
        return None
    if (
        bill.input_tokens != turns.input_tokens
        or bill.output_tokens != turns.output_tokens
        or bill.unpriced_tokens != turns.unpriced_tokens
    ):
        return False
    if bill.cost is None or turns.cost is None:
        return bill.cost is None and turns.cost is None
    return math.isclose(bill.cost, turns.cost, rel_tol=1e-9, abs_tol=1e-12)


def bill_sums(attributes: dict[str, Any]) -> UsageSums:
    """The `janux.bill.*` of a root span's attributes."""
    return UsageSums(
        safe_int(attributes, c.JANUX_BILL_INPUT_TOKENS),
        safe_int(attributes, c.JANUX_BILL_OUTPUT_TOKENS),
        safe_float(attributes, c.JANUX_BILL_COST),
        safe_int(attributes, c.JANUX_BILL_UNPRICED_TOKENS),
    )


