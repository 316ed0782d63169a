"""Cost audit over many traces: by agent, delegation tool, model and conversation.

Recorded cost (`janux.*`), estimated cost (price table, other runtimes) and unpriced tokens are
kept in separate columns: an unknown price is never added in as $0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from dashboard.reconstruct import spanread as sr
from dashboard.reconstruct.costs import rounds_usage
from dashboard.reconstruct.model import Usage
from dashboard.reconstruct.rebuild import TraceView
from dashboard.views import cells
from tracing import conventions as c

NO_CONVERSATION = "(none)"
"""Conversation key of traces without `gen_ai.conversation.id`."""


def usage_columns(usage: Usage) -> dict[str, Any]:
    """The cost and token columns every audit table shares (money cells as in `views.cells`)."""
    return {
        "cost USD": cells.cost_cell(usage.cost, usage.unpriced_tokens),
        "estimated USD": usage.estimated_cost,
        "unpriced tokens": usage.unpriced_tokens,
        "input tokens": usage.input_tokens,
        "output tokens": usage.output_tokens,
    }


@dataclass(slots=True)
class _Group:
    usage: Usage = field(default_factory=Usage)
    extra: Usage = field(default_factory=Usage)
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n


def _frame(
    groups: dict[Any, _Group], key_names: tuple[str, ...], row: Callable[[_Group], dict[str, Any]]
) -> pd.DataFrame:
    rows = []
    for key, group in groups.items():
        keys = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(key_names, keys, strict=True)), **row(group)})
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values(by=list(key_names)).reset_index(drop=True)
    return frame


@dataclass(slots=True)
class CostAudit:
    """Every table of the Costs page."""

    traces: int
    """Traces audited."""
    total: Usage
    """Sum over traces (each trace's bill when recorded, else its computed usage)."""
    by_agent: pd.DataFrame
    """agent, loops, own and inclusive usage."""
    by_tool: pd.DataFrame
    """delegation tool, delegations, attempts, failing, usage."""
    by_model: pd.DataFrame
    """provider, model, rounds, usage."""
    by_conversation: pd.DataFrame
    """conversation, traces, usage."""
    top_delegations: pd.DataFrame
    """The most expensive delegations, with their trace."""


def _by_agent(views: list[TraceView]) -> pd.DataFrame:
    groups: dict[str, _Group] = {}
    for view in views:
        for node in view.nodes:
            group = groups.setdefault(node.agent, _Group())
            group.usage.add(node.own)
            group.extra.add(node.inclusive)
            group.count("loops")

    def row(g: _Group) -> dict[str, Any]:
        return {
            "loops": g.counts["loops"],
            **{f"own {k}": v for k, v in usage_columns(g.usage).items()},
            **{f"inclusive {k}": v for k, v in usage_columns(g.extra).items()},
        }

    return _frame(groups, ("agent",), row)


def _by_tool(views: list[TraceView]) -> pd.DataFrame:
    groups: dict[str, _Group] = {}
    for view in views:
        for d in view.delegations:
            group = groups.setdefault(d.tool, _Group())
            group.usage.add(d.cost)
            group.count("delegations")
            group.count("attempts", d.attempt_count)
            group.count("failing", 1 if d.status in c.FAILING_STATUSES else 0)

    def row(g: _Group) -> dict[str, Any]:
        counts = {k: g.counts.get(k, 0) for k in ("delegations", "attempts", "failing")}
        return {**counts, **usage_columns(g.usage)}

    return _frame(groups, ("delegation tool",), row)


def _by_model(views: list[TraceView], estimate: bool) -> pd.DataFrame:
    groups: dict[tuple[str, str], _Group] = {}
    for view in views:
        for node in view.nodes:
            for pos in node.chat_spans:
                span = view.index.spans[pos]
                key = (sr.round_provider(span) or "?", sr.round_model(span) or "?")
                group = groups.setdefault(key, _Group())
                group.usage.add(rounds_usage(view.index, [pos], estimate=estimate and not node.janux))
                group.count("rounds")
    return _frame(
        groups, ("provider", "model"), lambda g: {"rounds": g.counts["rounds"], **usage_columns(g.usage)}
    )


def _by_conversation(views: list[TraceView]) -> pd.DataFrame:
    groups: dict[str, _Group] = {}
    for view in views:
        roots = view.roots or view.nodes[:1]
        conversation = next((n.conversation_id for n in roots if n.conversation_id), None)
        group = groups.setdefault(conversation or NO_CONVERSATION, _Group())
        group.usage.add(view.total)
        group.count("traces")
    return _frame(
        groups, ("conversation",), lambda g: {"traces": g.counts["traces"], **usage_columns(g.usage)}
    )


def _top_delegations(views: list[TraceView], top: int) -> pd.DataFrame:
    rows = []
    for view in views:
        for d in view.delegations:
            rows.append(
                {
                    "trace": view.trace_id,
                    "caller": d.caller,
                    "delegation tool": d.tool,
                    "target": d.target,
                    "status": d.status,
                    "attempts": d.attempt_count,
                    "total USD": d.cost.total_cost,
                    **usage_columns(d.cost),
                }
            )
    # Only priced delegations can be ranked; the unpriced ones show in "By delegation tool".
    rows = [r for r in rows if r["total USD"] is not None]
    rows.sort(key=lambda r: -float(r["total USD"]))
    return pd.DataFrame(rows[:top])


def audit(views: Iterable[TraceView], *, top: int = 20, estimate: bool = True) -> CostAudit:
    """Aggregate rebuilt traces into the Costs page's tables."""
    views = list(views)
    total = Usage()
    for view in views:
        total.add(view.total)
    return CostAudit(
        traces=len(views),
        total=total,
        by_agent=_by_agent(views),
        by_tool=_by_tool(views),
        by_model=_by_model(views, estimate),
        by_conversation=_by_conversation(views),
        top_delegations=_top_delegations(views, top),
    )
