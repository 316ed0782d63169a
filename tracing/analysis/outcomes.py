"""One meaning per number: how an attempt, a handoff and a trace ended, and the words for a value
that is missing. Every page, graph, table, CSV and the CLI take these from here (docs/glossary.md
lists them).
"""

from __future__ import annotations

from typing import Final

from janux.tracing import conventions as c
from janux.tracing.analysis.trace_parts import AgentNode, Attempt, Delegation, Failure

NOT_RUN: Final = "not run"
"""A handoff that never started an attempt (denied, cut before it ran): no duration, no cost."""
NO_LIMIT: Final = "no limit"
"""A budget line that was not set (`janux.budget.*` absent): usage is shown without a share."""
STILL_OPEN: Final = "open"
"""A span without an end yet (still running, or its end never arrived): no duration."""
NONE_SHOWN: Final = "—"
"""Nothing to show: the value does not apply here (no tokens used, no reason because nothing
failed). Never used for "unknown" or "no limit"."""
UNKNOWN: Final = "unknown"
"""Rounds ran but their usage could not be read: never 0 and never "—"."""

NO_USAGE_REPORTED: Final = "no usage reported"
"""A model round that recorded no usage at all (a failed call usually reports none): a round all
the same, its tokens unknown, never 0."""

REASON_ALIASES: Final = {"rate_limit": c.DENY_RATE_LIMITED, "ratelimited": c.DENY_RATE_LIMITED}
"""Spellings of one reason that writers use, mapped to the one name every page shows."""
RETRIED: Final = "retried"
"""Failure kind of a handoff that completed after one or more failed attempts: each failed
attempt's error is listed, the handoff itself did not fail."""


def reason_name(reason: str) -> str:
    """The one name of a failure reason (`rate_limit` and `rate_limited` are one reason)."""
    return REASON_ALIASES.get(reason, reason)


def attempt_outcome(attempt: Attempt) -> str:
    """How one attempt ended: `completed`, `failed: model_error`, `timeout`, `cut: max_turns` or
    `open`. A failed attempt never reads "completed", whatever the handoff did after it."""
    if attempt.status == "open":
        return STILL_OPEN
    if attempt.stop_reason:
        return f"cut: {attempt.stop_reason}"
    if attempt.status == "error":
        if attempt.error_type == c.ERROR_TIMEOUT:
            return c.ERROR_TIMEOUT
        return f"failed: {reason_name(attempt.error_type or 'error')}"
    return c.STATUS_COMPLETED


def is_failed_handoff(delegation: Delegation) -> bool:
    """A failed handoff: a delegation or transfer whose final status is failed, fallback, denied or
    cut. A handoff that completed after a failed attempt did not fail (it was retried); an open one
    has not ended. The Traces list, the Costs page, the Failures page and the CLI all count this."""
    return delegation.status in c.FAILING_STATUSES


def is_failed_trace(failures: list[Failure]) -> bool:
    """A failed trace: one with at least one failed handoff or failed agent loop (`error`); a trace
    whose handoffs were only retried, timed out then recovered, or are still open did not fail."""
    return any(f.kind in c.FAILING_STATUSES or f.kind == "error" for f in failures)


def attempts_per_delegation(attempts: int, delegations: int) -> str:
    """Attempts per delegation that ran at least once: `1.50`; "—" without delegations. Only
    delegations count (never transfers or denied handoffs, which run no attempt)."""
    if delegations <= 0:
        return NONE_SHOWN
    return f"{attempts / delegations:.2f}"


def budget_cell(used: float | None, limit: float | None) -> str:
    """One budget line: `3 / 5 (60%)`, `3 (no limit)`, `open / 5` while the loop runs."""
    if limit is None:
        return NONE_SHOWN if used is None else f"{used:,.0f} ({NO_LIMIT})"
    used_text = STILL_OPEN if used is None else f"{used:,.0f}"
    share = "" if used is None or not limit else f" ({used / limit:.0%})"
    return f"{used_text} / {limit:,.0f}{share}"


def trace_status(failures: list[Failure], open_spans: int) -> str:
    """How a trace ended: `failed` (a failed handoff or loop), `open` (spans without an end and
    nothing failed), else `ok` (retried or recovered handoffs included)."""
    if is_failed_trace(failures):
        return "failed"
    return STILL_OPEN if open_spans else "ok"


def failure_text(failures: list[Failure]) -> str:
    """What failed in a trace, in one cell: `failed: rate_limited` (kind: reason) of its first failed
    handoff or loop, `+ 2 more` when there are others; else `retried: model_error` or
    `timeout: timeout` for a trace that recovered; "" when nothing went wrong."""
    failing = [f for f in failures if f.kind in c.FAILING_STATUSES or f.kind == "error"]
    shown = failing or [f for f in failures if f.kind != "open"]
    if not shown:
        return ""
    first = shown[0]
    more = f" + {len(shown) - 1} more" if len(shown) > 1 else ""
    return f"{first.kind}: {first.reason}{more}"


def loop_outcome(node: AgentNode) -> str:
    """How an agent loop ended: `ok`, `open`, `cut: max_turns` or `error: timeout` (two loops that
    failed differently never read the same)."""
    if node.stop_reason:
        return f"cut: {node.stop_reason}"
    if node.status == "error":
        return f"error: {reason_name(node.error_type or 'error')}"
    return node.status
