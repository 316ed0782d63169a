"""The Costs page's exact tables: the source's `usage_by` aggregates over a whole time range.

These come from one query per dimension (`TraceSource.usage_by`), so they cover every trace in
the range, however many there are, and follow the contract's accounting rule (each token and
cent counted once). Money cells follow `janux.tracing.analysis.money_cells`: a cost where one was recorded,
`UNPRICED` where tokens were used without a recorded price, None where nothing was used.
No Streamlit import here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.sources.protocol import TraceFilter, TraceSource, UsageAggregate, UsageDimension

NO_KEY: Final = "(none)"
"""Shown for the group of spans or traces without the grouping attribute."""
TABLE_LIMIT: Final = 1_000
"""Groups fetched for the agent, delegation tool and model tables (most expensive first)."""
CONVERSATION_LIMIT: Final = 100_000
"""Conversation groups fetched: the headline totals are summed over them, so they are exact
unless a range holds more conversations than this (the page then says so)."""


@dataclass(frozen=True, slots=True)
class TableSpec:
    """How one dimension's groups become a table: column names of the key and of the counts."""

    dimension: UsageDimension
    """The `usage_by` dimension."""
    key: str
    """Column of the group key."""
    count: str
    """Column of `UsageAggregate.count`."""
    failed: str
    """Column of `UsageAggregate.failed`."""
    prefix: str = ""
    """Put before the usage columns' names (`own ` for agents)."""


AGENT: Final = TableSpec("agent", "agent", "loops", "failed loops", "own ")
"""Each agent's own loops (`janux.turn.*`)."""
TOOL: Final = TableSpec("tool", "delegation tool", "delegations", "failing")
"""Each delegation tool, with the own usage of its direct attempts."""
MODEL: Final = TableSpec("model", "model", "rounds", "failed rounds")
"""Each requested model, from the inference spans."""
CONVERSATION: Final = TableSpec("conversation", "conversation", "traces", "traces with failed handoffs")
"""Each conversation: the bill of each of its traces."""


def money_cell(group: UsageAggregate) -> float | None:
    """The group's cost; `UNPRICED` when it used tokens without a recorded price; None when it
    used none (a transfer or a denied delegation runs no loop of its own)."""
    if group.cost is not None:
        return group.cost
    used = (group.input_tokens or 0) + (group.output_tokens or 0) + (group.unpriced_tokens or 0)
    if used:
        return cells.UNPRICED
    return cells.UNKNOWN if group.unread else None


def usage_frame(groups: Sequence[UsageAggregate], spec: TableSpec) -> pd.DataFrame:
    """One row per group, in the source's order (most expensive first, unpriced last)."""
    p = spec.prefix
    rows: list[dict[str, Any]] = [
        {
            spec.key: g.key or NO_KEY,
            spec.count: g.count,
            spec.failed: g.failed,
            f"{p}cost USD": money_cell(g),
            f"{p}unpriced tokens": g.unpriced_tokens,
            f"{p}input tokens": g.input_tokens,
            f"{p}output tokens": g.output_tokens,
            "unread": g.unread,
        }
        for g in groups
    ]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    # Nullable integers: a group that reported no tokens shows `—`, the others stay whole numbers.
    for name in ("unpriced tokens", "input tokens", "output tokens"):
        frame[p + name] = frame[p + name].astype("Int64")
    money = frame[f"{p}cost USD"]
    frame[f"{p}cost USD"] = money.astype("float64")  # numeric even when every cell is missing
    return frame


def total_usage(groups: Sequence[UsageAggregate]) -> Usage:
    """Tokens and cost summed over groups (cost None when nothing was priced, never 0)."""
    total = Usage()
    for g in groups:
        total.add(
            Usage(
                input_tokens=g.input_tokens or 0,
                output_tokens=g.output_tokens or 0,
                cost=g.cost,
                unpriced_tokens=g.unpriced_tokens or 0,
            )
        )
    return total


@dataclass(slots=True)
class RangeUsage:
    """Everything the Costs page shows exactly for a range: totals and one table per dimension."""

    total: Usage
    """Sum of every trace's bill (its inference spans when it has none)."""
    traces: int
    """Traces in the range."""
    failed_traces: int
    """Traces in the range with at least one failed handoff (`UsageAggregate.failed` of the
    conversation groups)."""
    complete: bool
    """False when the range holds more conversations than were fetched (totals then fall short)."""
    unread_traces: int
    """Traces in the range with usage that could not be read (unknown, not counted as 0)."""
    unread_calls: int
    """Model calls in the range whose usage could not be read."""
    tables: dict[UsageDimension, pd.DataFrame]
    """agent, tool, model and conversation tables (see the `TableSpec`s)."""
    agents: list[UsageAggregate]
    """The agent groups the agent table was made from (the what-if reprices them)."""


def range_usage(source: TraceSource, flt: TraceFilter) -> RangeUsage:
    """One `usage_by` query per dimension over every trace matching `flt`."""
    conversations = source.usage_by("conversation", flt, limit=CONVERSATION_LIMIT)
    specs = (AGENT, TOOL, MODEL)
    groups = {spec.dimension: source.usage_by(spec.dimension, flt, limit=TABLE_LIMIT) for spec in specs}
    tables = {spec.dimension: usage_frame(groups[spec.dimension], spec) for spec in specs}
    tables["conversation"] = usage_frame(conversations, CONVERSATION)
    return RangeUsage(
        total=total_usage(conversations),
        traces=sum(g.count for g in conversations),
        failed_traces=sum(g.failed for g in conversations),
        complete=len(conversations) < CONVERSATION_LIMIT,
        tables=tables,
        unread_traces=sum(g.unread for g in conversations),
        unread_calls=sum(g.unread for g in groups["model"]),
        agents=groups["agent"],
    )
