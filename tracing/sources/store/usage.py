"""Usage rows: the one place that says what a span adds to `TraceSource.usage_by`, and how groups end.

`span_usage` turns one span into its usage row (or None): the embedded store keeps these rows in
`span_usage` at write time, and in-memory sources aggregate them directly with `aggregate_usage`,
so both follow the same accounting rule (see `janux.tracing.sources.protocol.UsageAggregate`). The ClickHouse
source computes the same rows in SQL; `finish` rounds and orders the groups of every source alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from janux.tracing import conventions as c
from janux.tracing.records import STATUS_ERROR, SpanRecord, attr_float, attr_int, attr_str
from janux.tracing.sources.columns import positions
from janux.tracing.sources.protocol import USAGE_DIMENSIONS, UsageAggregate, UsageDimension

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


USAGE_ROW_COLUMNS: Final = {
    "dimension": "Dim", "key": "Key", "input_tokens": "InputTokens", "output_tokens": "OutputTokens",
    "cost": "Cost", "unpriced_tokens": "Unpriced", "failed": "Failed",
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


def span_usage(op: str, attributes: dict[str, Any], status_code: str) -> UsageRow | None:
    """The usage row of a span with operation `op`, or None when it adds to no dimension."""
    if op == _AGENT:
        values = (
            "agent",
            _key(attributes, c.GEN_AI_AGENT_NAME),
            _count(attributes, c.JANUX_TURN_INPUT_TOKENS),
            _count(attributes, c.JANUX_TURN_OUTPUT_TOKENS),
            _money(attributes, c.JANUX_TURN_COST),
            _count(attributes, c.JANUX_TURN_UNPRICED_TOKENS),
            status_code == STATUS_ERROR,
        )
    elif op in _INFERENCE:
        inputs = _count(attributes, c.GEN_AI_USAGE_INPUT_TOKENS)
        outputs = _count(attributes, c.GEN_AI_USAGE_OUTPUT_TOKENS)
        cost = _money(attributes, c.JANUX_ROUND_COST)
        unpriced = unpriced_of_round(inputs, outputs, cost)
        model = _key(attributes, c.GEN_AI_REQUEST_MODEL)
        values = ("model", model, inputs, outputs, cost, unpriced, status_code == STATUS_ERROR)
    elif op == _TOOL and attributes.get(c.GEN_AI_TOOL_TYPE) == c.TOOL_TYPE_DELEGATE:
        failing = attr_str(attributes, c.JANUX_HANDOFF_STATUS) in c.FAILING_STATUSES
        values = ("tool", _key(attributes, c.GEN_AI_TOOL_NAME), None, None, None, None, failing)
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


def _plus(a: Any, b: Any) -> Any:
    """Sum where None means "nothing reported" (SQL `sum` semantics)."""
    if a is None:
        return b
    return a if b is None else a + b


@dataclass(slots=True)
class _Group:
    """Running totals of one group (the fields of `UsageAggregate` but the key)."""

    count: int = 0
    failed: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    unpriced_tokens: int | None = None

    def add_usage(self, inputs: Any, outputs: Any, cost: Any, unpriced: Any) -> None:
        """Add one contribution (None: nothing reported)."""
        self.input_tokens = _plus(self.input_tokens, inputs)
        self.output_tokens = _plus(self.output_tokens, outputs)
        self.cost = _plus(self.cost, cost)
        self.unpriced_tokens = _plus(self.unpriced_tokens, unpriced)

    def add_row(self, row: UsageRow) -> None:
        """Add what one span reported."""
        self.add_usage(row.input_tokens, row.output_tokens, row.cost, row.unpriced_tokens)


GROUP_COLUMNS: Final = (
    "group_key", "group_count", "group_failed", "input_sum", "output_sum", "cost_sum", "unpriced_sum",
)  # fmt: skip
"""Columns of a grouped usage row, as every source's `usage_by` query selects them (see `group_select`):
key, count, failed, input tokens, output tokens, cost, unpriced tokens."""

_G = positions(GROUP_COLUMNS)
_G_KEY, _G_COUNT, _G_FAILED = _G["group_key"], _G["group_count"], _G["group_failed"]
_G_IN, _G_OUT, _G_COST, _G_UNPRICED = _G["input_sum"], _G["output_sum"], _G["cost_sum"], _G["unpriced_sum"]

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


def turn_sums(spans: Sequence[SpanRecord]) -> UsageSums:
    """The summed `janux.turn.*` of every `invoke_agent` span among `spans`."""
    group = _Group()
    for _, row in _rows(spans):
        if row.dimension == "agent":
            group.add_row(row)
    return UsageSums(group.input_tokens, group.output_tokens, group.cost, group.unpriced_tokens)


def _op(span: SpanRecord) -> str:
    value = span.attributes.get(c.GEN_AI_OPERATION_NAME)
    return value if isinstance(value, str) else ""


def _rows(spans: Sequence[SpanRecord]) -> list[tuple[SpanRecord, UsageRow]]:
    found = []
    for span in spans:
        row = span_usage(_op(span), span.attributes, span.status_code)
        if row is not None:
            found.append((span, row))
    return found


def aggregate_usage(
    dimension: str, traces: Iterable[Sequence[SpanRecord]], limit: int = 100
) -> list[UsageAggregate]:
    """`usage_by` over in-memory traces (each a list of its spans, each span once)."""
    wanted = check_dimension(dimension)
    groups: dict[str, _Group] = {}
    for spans in traces:
        if wanted == "conversation":
            _add_conversation(spans, groups)
        elif wanted == "tool":
            _add_tools(spans, groups)
        else:
            for _, row in _rows(spans):
                if row.dimension == wanted:
                    group = groups.setdefault(row.key, _Group())
                    group.count += 1
                    group.failed += row.failed
                    group.add_row(row)
    return finish(_group_rows(groups), limit)


def _group_rows(groups: dict[str, _Group]) -> list[tuple[Any, ...]]:
    rows = []
    for key, g in groups.items():
        values = {
            "group_key": key, "group_count": g.count, "group_failed": g.failed, "input_sum": g.input_tokens,
            "output_sum": g.output_tokens, "cost_sum": g.cost, "unpriced_sum": g.unpriced_tokens,
        }  # fmt: skip
        rows.append(tuple(values[name] for name in GROUP_COLUMNS))
    return rows


def _add_tools(spans: Sequence[SpanRecord], groups: dict[str, _Group]) -> None:
    """Each delegate tool span, with the own usage of its direct attempts."""
    rows = _rows(spans)
    attempts: dict[str, list[UsageRow]] = {}
    for span, row in rows:
        if row.dimension == "agent":
            attempts.setdefault(span.parent_span_id, []).append(row)
    for span, row in rows:
        if row.dimension != "tool":
            continue
        group = groups.setdefault(row.key, _Group())
        group.count += 1
        group.failed += row.failed
        for attempt in attempts.get(span.span_id, []):
            group.add_row(attempt)


def _add_conversation(spans: Sequence[SpanRecord], groups: dict[str, _Group]) -> None:
    """One trace: its root's bill, or (no bill) the sum of its inference spans."""
    if not spans:
        return
    roots = [s for s in spans if not s.parent_span_id]
    root = min(roots, key=lambda s: s.start_ns) if roots else None
    attrs = root.attributes if root is not None else {}
    group = groups.setdefault(_key(attrs, c.GEN_AI_CONVERSATION_ID), _Group())
    group.count += 1
    group.failed += any(s.status_code == STATUS_ERROR for s in spans)
    if any(attrs.get(key) is not None for key in c.BILL_KEYS):
        group.add_usage(*bill_sums(attrs))
        return
    for _, row in _rows(spans):
        if row.dimension == "model":
            group.add_row(row)
