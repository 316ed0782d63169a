"""Tables of one rebuilt trace (pandas), ready for `st.dataframe`: values are plain text/numbers."""

from __future__ import annotations

from typing import Any

import pandas as pd

from janux.tracing import conventions as c
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.trace_parts import Delegation, Failure
from janux.tracing.analysis.trace_view import TraceView

FAILING_OR_OPEN = c.FAILING_STATUSES | {"open"}
"""Statuses whose error type explains the delegation's outcome."""


def nodes_frame(view: TraceView) -> pd.DataFrame:
    """One row per agent loop: own vs inclusive cost and tokens, in tree order."""
    rows: list[dict[str, Any]] = []
    for node in view.nodes:
        rows.append(
            {
                "loop": fmt.indent(node.depth) + node.agent + (f" #{node.attempt}" if node.attempt else ""),
                "depth": node.depth,
                "status": outcomes.loop_outcome(node),
                "own cost": fmt.usage_cost(node.own),
                "inclusive cost": fmt.usage_cost(node.inclusive),
                "own tokens": fmt.tokens(node.own),
                "inclusive tokens": fmt.tokens(node.inclusive),
                "own unpriced tokens": node.own.unpriced_tokens,
                "inclusive unpriced tokens": node.inclusive.unpriced_tokens,
                "rounds": node.own.rounds,
                "usage from": node.own_source,
                "incomplete": node.incomplete,
                "span": node.span_id,
            }
        )
    return pd.DataFrame(rows)


def delegations_frame(view: TraceView) -> pd.DataFrame:
    """One row per delegation or transfer: status, attempts, duration, cost."""
    rows = []
    for d in view.delegations:
        rows.append(
            {
                "caller": d.caller or "(missing)",
                "tool": d.tool,
                "kind": d.kind,
                "target": d.target,
                "status": d.status,
                "attempts": d.attempt_count,
                "duration": fmt.ms(d.duration_ms),
                "cost": fmt.usage_cost(d.cost),
                "unpriced tokens": d.cost.unpriced_tokens,
                "reason": d.deny_reason
                or d.stop_reason
                or (d.error_type if d.status in FAILING_OR_OPEN else None)
                or "",
                "attempt errors": ", ".join(a.error_type for a in d.attempts if a.error_type),
                "span": d.tool_span_id or "",
            }
        )
    return pd.DataFrame(rows)


def attempts_frame(view: TraceView, delegation: int) -> pd.DataFrame:
    """Attempts of one delegation: number, its own duration, outcome, error type and whole message, cost."""
    d = view.delegations[delegation]
    rows = [
        {
            "attempt": a.number,
            "duration": fmt.ms(a.duration_ms),
            "status": a.status,
            "outcome": outcomes.attempt_outcome(a),
            "error.type": a.error_type or "",
            "error": a.error or "",
            "stop reason": a.stop_reason or "",
            "cost": fmt.usage_cost(view.nodes[a.node].inclusive),
            "span": a.span_id,
        }
        for a in d.attempts
    ]
    columns = [
        "attempt",
        "duration",
        "status",
        "outcome",
        "error.type",
        "error",
        "stop reason",
        "cost",
        "span",
    ]
    return pd.DataFrame(rows, columns=columns)


def no_attempts_note(delegation: Delegation) -> str:
    """Why a delegation has no attempt span to list."""
    if delegation.kind == "transfer":
        return (
            f"A transfer hands the conversation to {delegation.target} inside the same loop: "
            f"it runs no attempt. The rounds after it are {delegation.target}'s (a node of its own in "
            "the tree, its own cost and tokens)."
        )
    why = delegation.deny_reason or delegation.stop_reason or delegation.error
    if delegation.status == c.STATUS_DENIED:
        return f"Denied before any attempt ran (rule: {why or 'not recorded'})."
    return "No attempt span was recorded for this delegation" + (f" ({why})." if why else ".")


def checks_frame(view: TraceView) -> pd.DataFrame:
    """Every reconciliation check: rule, result, subject, expected vs actual."""
    rows = [
        {
            "check": chk.name,
            "result": "ok" if chk.ok else chk.severity,
            "subject": chk.subject,
            "message": chk.message,
            "expected": chk.expected,
            "actual": chk.actual,
        }
        for chk in view.checks
    ]
    return pd.DataFrame(rows, columns=["check", "result", "subject", "message", "expected", "actual"])


def budgets_frame(view: TraceView) -> pd.DataFrame:
    """Budget burn per delegated loop: used / limit for turns, tokens and wall clock."""

    rows = [
        {
            "loop": b.agent + (f" #{b.attempt}" if b.attempt else ""),
            "turns": outcomes.budget_cell(b.turns_used, b.max_turns),
            "tokens": outcomes.budget_cell(b.tokens_used, b.max_tokens),
            "ms": outcomes.budget_cell(b.ms_used, b.max_ms),
            "cut by": b.stop_reason or "",
        }
        for b in view.budgets
    ]
    return pd.DataFrame(rows, columns=["loop", "turns", "tokens", "ms", "cut by"])


def failures_frame(failures: list[Failure]) -> pd.DataFrame:
    """Failed handoffs with final status, reason, attempts (timed-out ones counted), error and task
    (when captured)."""
    rows = [
        {
            "kind": f.kind,
            "final status": f.status,
            "reason": f.reason,
            "caller": f.caller or "",
            "tool": f.tool,
            "target": f.target,
            "attempts": f.attempts,
            "timed-out attempts": f.timeouts,
            "error": f.error or "",
            "duration": fmt.ms(f.duration_ms),
            "task": f.task if f.task is not None else "(not captured)",
            "trace": f.trace_id,
            "span": f.span_id,
        }
        for f in failures
    ]
    columns = ["kind", "final status", "reason", "caller", "tool", "target", "attempts", "timed-out attempts",
               "error", "duration", "task", "trace", "span"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def issues_rows(view: TraceView) -> list[tuple[str, int, str]]:
    """(problem, count, what it means) for every kind of damage found, zero counts left out."""
    issues = view.issues
    rows = [
        ("orphan spans (missing parent)", len(issues.orphans), "shown under the incomplete-trace marker"),
        ("duplicate spans", issues.duplicates, "kept once"),
        ("cycles broken", len(issues.cycles), "one parent link cut per cycle"),
        ("clock skew", len(issues.clock_skew), "child starts before its parent; times kept as recorded"),
        ("spans without an end", len(issues.open_spans), "still running or never ended"),
        ("HANDOFF_START without HANDOFF_END", len(issues.open_handoffs), "handoff status shown as open"),
        ("HANDOFF_END without HANDOFF_START", len(issues.unpaired_ends), "writer bug"),
        ("spans of another trace", issues.foreign_trace_ids, "kept, counted"),
    ]
    return [row for row in rows if row[1]]
