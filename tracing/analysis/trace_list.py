"""Rows of the trace list: the source's summaries plus what only a rebuild knows.

The reconciliation badge comes from the source's `bill_reconciled` flag; only traces without
one (other runtimes, or a root not received yet) are rebuilt, for their badge and estimate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.facts import TraceSummary
from janux.tracing.analysis.readers.structure import UNNAMED_AGENT
from janux.tracing.analysis.trace_view import TraceView

BADGE_OK = "✓ ok"
"""Badge of a trace whose contract checks all pass."""
BADGE_NA = "– no janux data"
"""Badge of a trace without model calls and without Janux accounting (nothing to reconcile)."""
BADGE_BILL_DIFFERS = "✗ bill ≠ loops"
"""Badge of a trace whose recorded bill differs from the sum of its loops (from the source's flag)."""
CHECKS_HELP = (
    "✓ / ✗: the root's bill equals the sum of every agent loop's own usage (the source's flag, "
    "no rebuild). Traces without a bill are rebuilt and checked in full. Open a trace for every "
    "check, per loop."
)
"""Tooltip of the `checks` column."""


def needs_rebuild(summary: TraceSummary) -> bool:
    """True when the list row needs the rebuilt trace: the source has no reconciliation flag for
    it (no bill: another runtime, or the root not received yet), or its bill leaves rounds to an
    integration's estimate; the badge, the cost estimate and the unpriced tokens then come from
    the rebuild, as on the Trace page. A trace with failed handoffs or ERROR spans is rebuilt for
    its status and what failed."""
    if summary.failed_handoffs or summary.error_spans:
        return True  # its status and what failed come from the rebuild, as on the Trace page
    return summary.bill_reconciled is None or summary.bill_cost_estimate is not None


def summary_status(summary: TraceSummary, view: TraceView | None) -> str:
    """The list's status cell, `outcomes.trace_status` of the rebuilt trace (the Trace page's
    header says the same); a trace without failed handoffs or ERROR spans is `ok` unrebuilt."""
    if view is not None and view.index.spans:
        return outcomes.trace_status(view.failures, len(view.issues.open_spans))
    return "failed" if summary.failed_handoffs else "ok"


def summary_badge(summary: TraceSummary, view: TraceView | None) -> str:
    """The list's badge: the source's reconciliation flag when it has one, else `badge(view)`."""
    if summary.bill_reconciled is None:
        return badge(view, summary)
    return BADGE_OK if summary.bill_reconciled else BADGE_BILL_DIFFERS


def foreign_badge(summary: TraceSummary) -> str:
    """How much of another runtime's trace was read: `foreign: 75% read` (model calls whose usage
    was read), `, 2 unrecognised` (spans of a kind Janux does not know)."""
    calls = summary.inference_spans
    if calls:
        text = f"foreign: {100 * summary.usage_read_spans // calls}% read"
    else:
        text = "foreign: no model calls" if summary.span_count else BADGE_NA
    if summary.unrecognised_spans:
        text += f", {summary.unrecognised_spans} unrecognised"
    return text


def badge(view: TraceView | None, summary: TraceSummary | None = None) -> str:
    """Reconciliation badge: `✓ ok`, `✗ N failed`, or for other runtimes how much was read
    (`foreign: N% read`, or `– no janux data` without a summary) and `, N unnamed agents` when
    nothing names some loops; `, incomplete` appended."""
    if view is None:
        return "?"
    failed = view.failed_checks
    if failed:
        text = f"✗ {len(failed)} failed"
    elif view.is_janux:
        text = BADGE_OK
    else:
        text = foreign_badge(summary) if summary is not None else BADGE_NA
        unnamed = sum(1 for node in view.nodes if node.agent == UNNAMED_AGENT)
        if unnamed:  # nothing in the trace names them: coverage, like unread usage
            text += f", {fmt.count(unnamed, 'unnamed agent')}"
    return text + (", incomplete" if view.issues.incomplete else "")


def _tokens(summary: TraceSummary, value: int | None) -> float | None:
    """A token cell: the count, `cells.UNKNOWN` (`unknown`) when no usage could be read although
    calls ran (a number like the counts, so the column keeps one type and still sorts)."""
    if value is None and summary.bill_cost is None and summary.inference_spans > summary.usage_read_spans:
        return cells.UNKNOWN
    return value


def _money(
    summary: TraceSummary, view: TraceView | None, unpriced: int | None
) -> tuple[float | None, float | None]:
    """(recorded cost, estimated cost) cells: the bill when recorded and nothing was estimated, else
    what the rebuild found."""
    if summary.bill_cost is not None and (view is None or view.total.estimated_cost is None):
        return summary.bill_cost, None
    if view is not None:
        total = view.total
        if total.unread_rounds:  # part of the usage is unknown: so is the cost (as on the Trace page)
            return cells.UNKNOWN, None
        cost = cells.cost_cell(total.cost, total.unpriced_tokens, unknown=total.is_unknown)
        return cost, total.estimated_cost
    return cells.cost_cell(None, unpriced or 0, unknown=summary.partly_unread), None


def traces_frame(
    summaries: list[TraceSummary], views: dict[str, TraceView], link: Callable[[str], str]
) -> pd.DataFrame:
    """One row per trace, newest first, with `link(trace_id)` to its Trace page.

    Money columns follow `views.cells`: the bill's cost, `UNPRICED` when tokens went unpriced,
    None when nothing was used; `estimated USD` for traces of other runtimes and for rounds an
    integration estimated (the bill leaves them unpriced).
    """
    rows: list[dict[str, Any]] = []
    for s in summaries:
        view = views.get(s.trace_id)
        unpriced = s.bill_unpriced_tokens
        if view is not None and (unpriced is None or view.total.estimated_cost is not None):
            unpriced = view.total.unpriced_tokens  # estimated rounds' tokens are not unpriced
        cost, estimated = _money(s, view, unpriced)
        rows.append(
            {
                "open": link(s.trace_id),
                "started (UTC)": fmt.utc(s.start_ns),
                "agents": s.agents_shown,
                "conversation": s.conversation_id or "",
                "status": summary_status(s, view),
                "failure": outcomes.failure_text(view.failures) if view is not None else "",
                "cost USD": cost,
                "estimated USD": estimated,
                "checks": summary_badge(s, view),
                "failed handoffs": s.failed_handoffs,
                "attempts": s.attempts,
                "delegations": s.delegations,
                "error spans": s.error_spans,
                "duration": fmt.ms(s.duration_ns / 1e6),
                "spans": s.span_count,
                "linked traces": s.linked_traces,
                "input tokens": _tokens(s, s.bill_input_tokens),
                "output tokens": _tokens(s, s.bill_output_tokens),
                "usage read": f"{s.usage_read_spans}/{s.inference_spans}" if s.inference_spans else "",
                "transfers": s.transfers,
                "unpriced tokens": unpriced,
                "service": s.service_name,
                "trace": s.trace_id,
            }
        )
    return cells.with_unknown_counts(pd.DataFrame(rows))
