"""`usage_by` over traces held in memory, by the same rows the embedded store keeps.

Per span (`sources.usage.span_usage`): model calls under any convention read, Janux loops
(`janux.turn.*`) and Janux delegate tools. Per trace read structurally (`derived`): the loops and
delegations of traces without Janux accounting. Groups end in `sources.usage.finish`, as in every
source.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from janux.tracing import conventions as c
from janux.tracing.analysis.derived_rows import DerivedRow, trace_rows
from janux.tracing.analysis.facts import USAGE_DIMENSIONS, UsageAggregate, UsageDimension
from janux.tracing.analysis.readers.structure import is_read_whole, structure_facts
from janux.tracing.analysis.trace_parts import plus
from janux.tracing.analysis.usage_rows import (
    GROUP_COLUMNS,
    UsageRow,
    UsageSums,
    bill_sums,
    check_dimension,
    finish,
    span_usage,
)
from janux.tracing.records import SpanRecord


@dataclass(slots=True)
class _Group:
    """Running totals of one group (the fields of `UsageAggregate` but the key)."""

    count: int = 0
    failed: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    unpriced_tokens: int | None = None
    unread: int = 0

    def add_usage(self, inputs: Any, outputs: Any, cost: Any, unpriced: Any) -> None:
        """Add one contribution (None: nothing reported)."""
        self.input_tokens = plus(self.input_tokens, inputs)
        self.output_tokens = plus(self.output_tokens, outputs)
        self.cost = plus(self.cost, cost)
        self.unpriced_tokens = plus(self.unpriced_tokens, unpriced)

    def add_row(self, row: UsageRow) -> None:
        """Add what one span reported."""
        self.add_usage(row.input_tokens, row.output_tokens, row.cost, row.unpriced_tokens)

    def count_row(self, row: UsageRow) -> None:
        """Count one item with its failure and unknown-usage flags, and add its usage."""
        self.count += 1
        self.failed += row.failed
        self.unread += bool(row.unread)
        self.add_row(row)

    def as_row(self, key: str) -> tuple[Any, ...]:
        values = {
            "group_key": key, "group_count": self.count, "group_failed": self.failed,
            "input_sum": self.input_tokens, "output_sum": self.output_tokens, "cost_sum": self.cost,
            "unpriced_sum": self.unpriced_tokens, "unread_sum": self.unread,
        }  # fmt: skip
        return tuple(values[name] for name in GROUP_COLUMNS)


def _op(span: SpanRecord) -> str:
    value = span.attributes.get(c.GEN_AI_OPERATION_NAME)
    return value if isinstance(value, str) else ""


def span_rows(spans: Sequence[SpanRecord]) -> list[tuple[SpanRecord, UsageRow]]:
    """Each span's own usage row (spans that add to no dimension on their own left out)."""
    found = []
    for span in spans:
        row = span_usage(_op(span), span.attributes, span.status_code, span.name)
        if row is not None:
            found.append((span, row))
    return found


def turn_sums(spans: Sequence[SpanRecord], rows: SpanRows | None = None) -> UsageSums:
    """The summed `janux.turn.*` of every Janux loop among `spans` (`rows`: their `span_rows`,
    when the caller has them)."""
    group = _Group()
    for _, row in span_rows(spans) if rows is None else rows:
        if row.dimension == "agent":
            group.add_row(row)
    return UsageSums(group.input_tokens, group.output_tokens, group.cost, group.unpriced_tokens)


def _structural(
    spans: Sequence[SpanRecord], wanted: str, groups: dict[str, _Group], rows: list[DerivedRow] | None = None
) -> None:
    """Agent loops or delegations of a trace without Janux accounting, read from its structure
    (`rows`: its derived rows, when the caller has them)."""
    if rows is None:
        _, rows = trace_rows(spans)
    if wanted == "agent":
        for _, _, row in rows:
            if row.dimension == "agent":
                groups.setdefault(row.key, _Group()).count_row(row)
        return
    attempts: dict[str, list[UsageRow]] = {}
    for _, parent, row in rows:
        if row.dimension == "agent":
            attempts.setdefault(parent, []).append(row)
    for span_id, _, row in rows:
        if row.dimension == "tool":
            group = groups.setdefault(row.key, _Group())
            group.count_row(row)
            for attempt in attempts.get(span_id, []):
                group.add_row(attempt)


SpanRows = list[tuple[SpanRecord, UsageRow]]
"""Each span's own usage row (`span_rows`)."""


def _janux_tools(
    spans: Sequence[SpanRecord], groups: dict[str, _Group], rows: SpanRows | None = None
) -> None:
    """Each Janux delegate tool span, with the own usage of its direct attempts."""
    rows = span_rows(spans) if rows is None else rows
    attempts: dict[str, list[UsageRow]] = {}
    for span, row in rows:
        if row.dimension == "agent":
            attempts.setdefault(span.parent_span_id, []).append(row)
    for span, row in rows:
        if row.dimension != "tool":
            continue
        group = groups.setdefault(row.key, _Group())
        group.count_row(row)
        for attempt in attempts.get(span.span_id, []):
            group.add_row(attempt)


def _conversation(
    spans: Sequence[SpanRecord], groups: dict[str, _Group], failed_handoffs: int, rows: SpanRows | None = None
) -> None:
    """One trace: its root's bill, or (no bill) the sum of its model calls; it counts as failed when
    it holds a failed handoff (`failed_handoffs`, the Traces list's column), never for error spans
    alone (a retried attempt's error is not a failure of the trace)."""
    if not spans:
        return
    roots = [s for s in spans if not s.parent_span_id]
    root = min(roots, key=lambda s: s.start_ns) if roots else None
    attrs = root.attributes if root is not None else {}
    key = attrs.get(c.GEN_AI_CONVERSATION_ID)
    group = groups.setdefault(key if isinstance(key, str) else "", _Group())
    group.count += 1
    group.failed += failed_handoffs > 0
    if any(attrs.get(name) is not None for name in c.BILL_KEYS):
        group.add_usage(*bill_sums(attrs))
        return
    unread = False
    for _, row in span_rows(spans) if rows is None else rows:
        if row.dimension == "model":
            group.add_row(row)
            unread = unread or bool(row.unread)
    group.unread += unread


def group_rows(dimension: str, traces: Iterable[Sequence[SpanRecord]]) -> list[tuple[Any, ...]]:
    """`usage_by` groups (`GROUP_COLUMNS` rows, unordered) over in-memory traces."""
    wanted = check_dimension(dimension)
    groups: dict[str, _Group] = {}
    for spans in traces:
        if wanted == "conversation":
            _conversation(spans, groups, structure_facts(spans).failed_handoffs)
        elif wanted != "model" and is_read_whole(spans):
            _structural(spans, wanted, groups)
        elif wanted == "tool":
            _janux_tools(spans, groups)
        else:
            for _, row in span_rows(spans):
                if row.dimension == wanted:
                    groups.setdefault(row.key, _Group()).count_row(row)
    return [group.as_row(key) for key, group in groups.items()]


def trace_groups(
    spans: Sequence[SpanRecord],
    whole: bool,
    derived: list[DerivedRow],
    failed_handoffs: int,
    rows: SpanRows | None = None,
) -> list[tuple[UsageDimension, tuple[Any, ...]]]:
    """What one trace adds to `usage_by` in every dimension: (dimension, `GROUP_COLUMNS` row) pairs.

    `whole` says whether the trace is read whole (`is_read_whole`), `derived` are its structural rows
    (`derived_rows`) and `failed_handoffs` its count of failed handoffs, all read once by the
    caller, as `rows` (its `span_rows`) may be; the rules are `group_rows`'s, per dimension."""
    rows = span_rows(spans) if rows is None else rows
    found: list[tuple[UsageDimension, tuple[Any, ...]]] = []
    for dimension in USAGE_DIMENSIONS:
        groups: dict[str, _Group] = {}
        if dimension == "conversation":
            _conversation(spans, groups, failed_handoffs, rows)
        elif dimension != "model" and whole:
            _structural(spans, dimension, groups, derived)
        elif dimension == "tool":
            _janux_tools(spans, groups, rows)
        else:
            for _, row in rows:
                if row.dimension == dimension:
                    groups.setdefault(row.key, _Group()).count_row(row)
        found += [(dimension, group.as_row(key)) for key, group in groups.items()]
    return found


def merge_groups(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Groups of several partial results (`GROUP_COLUMNS` rows) added up by key."""
    at = {name: i for i, name in enumerate(GROUP_COLUMNS)}
    groups: dict[str, _Group] = {}
    for row in rows:
        group = groups.setdefault(str(row[at["group_key"]] or ""), _Group())
        group.count += int(row[at["group_count"]] or 0)
        group.failed += int(row[at["group_failed"]] or 0)
        group.unread += int(row[at["unread_sum"]] or 0)
        usage = (row[at["input_sum"]], row[at["output_sum"]], row[at["cost_sum"]], row[at["unpriced_sum"]])
        group.add_usage(*usage)
    return [group.as_row(key) for key, group in groups.items()]


def aggregate_usage(
    dimension: str, traces: Iterable[Sequence[SpanRecord]], limit: int = 100
) -> list[UsageAggregate]:
    """`usage_by` over in-memory traces (each a list of its spans, each span once)."""
    return finish(group_rows(dimension, traces), limit)
