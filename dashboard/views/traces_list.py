"""Rows of the trace list: the source's summaries plus what only a rebuild knows (badge, estimate)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from dashboard.reconstruct.rebuild import TraceView
from dashboard.views import cells, fmt
from tracing.source import TraceSummary

BADGE_OK = "✓ ok"
"""Badge of a trace whose contract checks all pass."""
BADGE_NA = "– no janux data"
"""Badge of a trace from another runtime (no accounting to reconcile)."""


def badge(view: TraceView | None) -> str:
    """Reconciliation badge: `✓ ok`, `✗ N failed`, or `– no janux data`; `, incomplete` appended."""
    if view is None:
        return "?"
    failed = view.failed_checks
    if failed:
        text = f"✗ {len(failed)} failed"
    elif view.is_janux:
        text = BADGE_OK
    else:
        text = BADGE_NA
    return text + (", incomplete" if view.issues.incomplete else "")


def _money(
    summary: TraceSummary, view: TraceView | None, unpriced: int | None
) -> tuple[float | None, float | None]:
    """(recorded cost, estimated cost) cells: the bill when recorded, else what the rebuild found."""
    if summary.bill_cost is not None:
        return summary.bill_cost, None
    if view is not None:
        return cells.cost_cell(view.total.cost, view.total.unpriced_tokens), view.total.estimated_cost
    return cells.cost_cell(None, unpriced or 0), None


def traces_frame(
    summaries: list[TraceSummary], views: dict[str, TraceView], link: Callable[[str], str]
) -> pd.DataFrame:
    """One row per trace, newest first, with `link(trace_id)` to its Trace page.

    Money columns follow `views.cells`: the bill's cost, `UNPRICED` when tokens went unpriced,
    None when nothing was used; `estimated USD` only for traces of other runtimes.
    """
    rows: list[dict[str, Any]] = []
    for s in summaries:
        view = views.get(s.trace_id)
        unpriced = s.bill_unpriced_tokens
        if unpriced is None and view is not None:
            unpriced = view.total.unpriced_tokens
        cost, estimated = _money(s, view, unpriced)
        rows.append(
            {
                "open": link(s.trace_id),
                "started (UTC)": datetime.fromtimestamp(s.start_ns / 1e9, tz=UTC).strftime(
                    "%Y-%m-%d %H:%M:%S"
                ),
                "root agent": s.root_agent or "",
                "conversation": s.conversation_id or "",
                "cost USD": cost,
                "estimated USD": estimated,
                "checks": badge(view),
                "failed handoffs": s.failed_handoffs,
                "attempts": s.attempts,
                "delegations": s.delegations,
                "error spans": s.error_spans,
                "duration": fmt.ms(s.duration_ns / 1e6),
                "spans": s.span_count,
                "input tokens": s.bill_input_tokens,
                "output tokens": s.bill_output_tokens,
                "unpriced tokens": unpriced,
                "service": s.service_name,
                "trace": s.trace_id,
            }
        )
    return pd.DataFrame(rows)
