"""Cost audit over rebuilt traces: what needs handoff trees (inclusive cost, costly delegations).

The exact per-range tables (own cost by agent, tool, model, conversation) come from the source's
aggregates (`janux.dashboard.views.usage_tables`); this module covers the rest from the newest traces.
Recorded cost (`janux.*`), estimated cost (an integration's recorded estimate, or the price table
applied to other runtimes' rounds) and unpriced tokens are kept in separate columns: an unknown
price is never added in as $0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis.trace_parts import Delegation, Usage
from janux.tracing.analysis.trace_view import TraceView


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
class RebuiltAudit:
    """What only rebuilt traces tell (trees are needed): inclusive cost and priced delegations."""

    traces: int
    """Traces rebuilt."""
    total: Usage
    """Sum over those traces (each trace's bill when recorded, else its computed usage, with the
    price-table estimate of other runtimes' rounds)."""
    inclusive_by_agent: pd.DataFrame
    """agent, loops, own cost and inclusive usage (own plus every delegation below)."""
    top_delegations: pd.DataFrame
    """The most expensive delegations by inclusive cost, with their trace: `own cost USD` (the
    attempts' own model rounds) beside the `inclusive ...` columns (those rounds and everything
    delegated below them)."""
    price_sources: list[str]
    """Where the estimates in these traces come from (see `TraceView.price_sources`)."""


def _inclusive_by_agent(views: list[TraceView]) -> pd.DataFrame:
    """Per agent: loops, own cost, and inclusive usage; highest inclusive cost first."""
    loops: dict[str, int] = {}
    own: dict[str, Usage] = {}
    inclusive: dict[str, Usage] = {}
    for view in views:
        for node in view.nodes:
            loops[node.agent] = loops.get(node.agent, 0) + 1
            own.setdefault(node.agent, Usage()).add(node.own)
            inclusive.setdefault(node.agent, Usage()).add(node.inclusive)
    rows = [
        {
            "agent": agent,
            "loops": count,
            "own cost USD": cells.cost_cell(own[agent].cost, own[agent].unpriced_tokens),
            "own estimated USD": own[agent].estimated_cost,
            **{f"inclusive {k}": v for k, v in usage_columns(inclusive[agent]).items()},
        }
        for agent, count in loops.items()
    ]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values(["inclusive cost USD", "agent"], ascending=[False, True]).reset_index(drop=True)


def delegation_own(view: TraceView, delegation: Delegation) -> Usage:
    """What a delegation's attempts used themselves (their own model rounds), without what they
    delegated further; nothing for a transfer or a denied handoff (no attempt ran)."""
    own = Usage()
    for attempt in delegation.attempts:
        own.add(view.nodes[attempt.node].own)
    return own


def _top_delegations(views: list[TraceView], top: int) -> pd.DataFrame:
    ranked: list[tuple[float, dict[str, Any]]] = []
    for view in views:
        for d in view.delegations:
            inclusive = d.cost.total_cost
            if inclusive is None:  # only priced delegations rank; "By delegation tool" has the rest
                continue
            own = delegation_own(view, d)
            row = {
                "trace": view.trace_id,
                "caller": d.caller,
                "delegation tool": d.tool,
                "target": d.target,
                "status": d.status,
                "attempts": d.attempt_count,
                "own cost USD": cells.total_cell(own),
                "own unpriced tokens": own.unpriced_tokens,
                **{f"inclusive {k}": v for k, v in usage_columns(d.cost).items()},
                "span": d.tool_span_id or (d.attempts[0].span_id if d.attempts else ""),
            }
            ranked.append((inclusive, row))
    ranked.sort(key=lambda pair: -pair[0])
    return pd.DataFrame([row for _, row in ranked[:top]])


def audit(views: Iterable[TraceView], *, top: int = 20) -> RebuiltAudit:
    """Aggregate rebuilt traces into the Costs page's rebuilt tables."""
    views = list(views)
    total = Usage()
    for view in views:
        total.add(view.total)
    return RebuiltAudit(
        traces=len(views),
        total=total,
        inclusive_by_agent=_inclusive_by_agent(views),
        top_delegations=_top_delegations(views, top),
        price_sources=sorted({source for view in views for source in view.price_sources}),
    )
