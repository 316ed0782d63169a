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


GroupRow = tuple[str, int, int, int | None, int | None, float | None, int | None]
"""(key, count, failed, input tokens, output tokens, cost, unpriced tokens), as the queries return."""


def finish(rows: Iterable[Sequence[Any]], limit: int) -> list[UsageAggregate]:
    """Groups as `UsageAggregate`s: costs rounded, most expensive first (unpriced last), then by
    tokens and key, at most `limit`."""
    out = [
        UsageAggregate(
            key=str(row[0] or ""),
            count=int(row[1]),
            failed=int(row[2] or 0),
            input_tokens=None if row[3] is None else int(row[3]),
            output_tokens=None if row[4] is None else int(row[4]),
            cost=None if row[5] is None else round(float(row[5]), COST_DECIMALS),
            unpriced_tokens=None if row[6] is None else int(row[6]),
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


UsageSums = tuple[int | None, int | None, float | None, int | None]
"""(input tokens, output tokens, cost, unpriced tokens); None where nothing was reported."""


def bill_reconciled(has_bill: bool, bill: UsageSums, turns: UsageSums) -> bool | None:
    """Invariant 2: the bill equals the summed turns (tokens exactly, cost within 1e-9 relative);
    None without a bill. Every source compares with this one function."""
    if not has_bill:
        return None
    if bill[0] != turns[0] or bill[1] != turns[1] or bill[3] != turns[3]:
        return False
    if bill[2] is None or turns[2] is None:
        return bill[2] is None and turns[2] is None
    return math.isclose(bill[2], turns[2], rel_tol=1e-9, abs_tol=1e-12)


def bill_sums(attributes: dict[str, Any]) -> UsageSums:
    """The `janux.bill.*` of a root span's attributes."""
    return (
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
    return group.input_tokens, group.output_tokens, group.cost, group.unpriced_tokens


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


def _group_rows(groups: dict[str, _Group]) -> list[GroupRow]:
    return [
        (key, g.count, g.failed, g.input_tokens, g.output_tokens, g.cost, g.unpriced_tokens)
        for key, g in groups.items()
    ]


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
