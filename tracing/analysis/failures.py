"""Failed handoffs and budget burn, read off the rebuilt tree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from janux.tracing import conventions as c
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.handoff_tree import HandoffTree
from janux.tracing.analysis.span_index import NO_PARENT, SpanIndex
from janux.tracing.analysis.trace_parts import BudgetBurn, Delegation, Failure, FailureKind
from janux.tracing.records import attr_float, attr_int

MISSING_END = "missing HANDOFF_END"
"""Reason shown for a handoff whose HANDOFF_START has no HANDOFF_END."""


def failure_kind(status: str, timeouts: int, retried: bool = False) -> FailureKind | None:
    """The one rule of what puts a delegation or transfer on the Failures page: its final status
    when failing (`denied`, `failed`, `fallback`, `cut`), `open` when HANDOFF_END never came,
    `timeout` when an attempt timed out although it ended otherwise, `retried` when an attempt
    failed and a later one succeeded (`retried`: the caller saw such an attempt); None otherwise."""
    if status in c.FAILING_STATUSES:
        return status  # type: ignore[return-value]
    if status == "open":
        return "open"
    if timeouts:
        return "timeout"
    if retried:
        return outcomes.RETRIED
    return None


def failure_reason(kind: str, *candidates: str | None) -> str:
    """What the Failures page, the agent map and `janux trace` group a failed handoff by: the
    missing end, the timeout, else the first of `candidates` given (deny rule, budget line, error
    type, error text, in that order), else the kind itself; one name per reason
    (`outcomes.reason_name`)."""
    if kind == "open":
        return MISSING_END
    if kind == "timeout":
        return c.ERROR_TIMEOUT
    return outcomes.reason_name(next((value for value in candidates if value), kind))


@dataclass(frozen=True, slots=True)
class Decision:
    """What decided how a failed, denied, cut, fallback, timed-out or retried handoff ended: the
    failed-handoff screen's "Decided by" banner, one shape for every kind."""

    by: Literal["rule", "budget line", "error", "missing end"]
    """What kind of thing decided it: a policy rule, a budget line, an error, or no end at all."""
    name: str
    """The rule (`denied_tools`), the budget line (`max_turns`), the error type (`rate_limited`,
    `timeout`) or `missing HANDOFF_END`; one name per reason (`outcomes.reason_name`)."""
    message: str | None = None
    """The error message recorded with it, whole; None when none was."""
    attempt: int | None = None
    """The attempt it happened in, when one attempt decided it (a failed or timed-out attempt)."""

    @property
    def text(self) -> str:
        """`Decided by error: rate_limited (attempt 1): the provider said 429`."""
        where = f" (attempt {self.attempt})" if self.attempt is not None else ""
        message = f": {self.message}" if self.message else ""
        return f"Decided by {self.by}: {self.name}{where}{message}"


def decided_by(delegation: Delegation) -> Decision | None:
    """Why a handoff ended as it did, for every kind the Failures page lists (`failure_kind`): the
    rule that denied it, the budget line that cut it, the error (type and message) of the attempt
    that failed or timed out, or its missing end; None for a handoff that did not go wrong."""
    d = delegation
    timeouts = sum(1 for a in d.attempts if a.error_type == c.ERROR_TIMEOUT)
    failed = [a for a in d.attempts if a.status == "error"]
    kind = failure_kind(d.status, timeouts, bool(failed))
    if kind is None:
        return None
    if d.deny_reason:
        return Decision("rule", outcomes.reason_name(d.deny_reason), d.error)
    cut = next((a for a in d.attempts if a.stop_reason), None)
    if d.stop_reason or cut is not None:
        line = d.stop_reason or (cut.stop_reason if cut is not None else None) or ""
        return Decision("budget line", line, d.error, cut.number if cut is not None else None)
    if kind == "open":
        return Decision("missing end", MISSING_END)
    last = next((a for a in reversed(failed) if a.error_type == c.ERROR_TIMEOUT), None) if timeouts else None
    last = last or (failed[-1] if failed else None)
    error_type = (last.error_type if last is not None else None) or d.error_type or kind
    message = (last.error if last is not None else None) or d.error
    return Decision("error", outcomes.reason_name(error_type), message, last.number if last else None)


def _reason(delegation: Delegation, kind: FailureKind) -> str:
    if kind == outcomes.RETRIED:
        failed = next(a for a in delegation.attempts if a.status == "error")
        return failure_reason(kind, failed.error_type or "error")
    d = delegation
    return failure_reason(kind, d.deny_reason, d.stop_reason, d.error_type, d.error)


def _error(delegation: Delegation, kind: FailureKind) -> str | None:
    """The error text of the row: the handoff's, else (retried) every failed attempt's, whole."""
    if kind != outcomes.RETRIED and delegation.error:
        return delegation.error
    failed = [a for a in delegation.attempts if a.status == "error"]
    texts = [f"attempt {a.number}: {a.error_type or 'error'}: {a.error or ''}".rstrip(": ") for a in failed]
    return "; ".join(texts) or delegation.error


def delegation_failures(trace_id: str, tree: HandoffTree) -> list[Failure]:
    """One row per denied, failed, fallback, cut, open or timed-out delegation."""
    failures = []
    for delegation in tree.delegations:
        # A recorded transfer's "attempt" is the target's agent segment, which ran after the transfer
        # completed: its error is the turn's (`loop_failures`), not the handoff's.
        runs = [] if delegation.kind == "transfer" and delegation.recorded else delegation.attempts
        timeouts = sum(1 for a in runs if a.error_type == c.ERROR_TIMEOUT)
        retried = any(a.status == "error" for a in runs)
        kind = failure_kind(delegation.status, timeouts, retried)
        if kind is None:
            continue
        span_id = delegation.tool_span_id or (delegation.attempts[0].span_id if delegation.attempts else "")
        failures.append(
            Failure(
                kind=kind,
                reason=_reason(delegation, kind),
                trace_id=trace_id,
                span_id=span_id,
                caller=delegation.caller,
                target=delegation.target,
                tool=delegation.tool,
                attempts=delegation.attempt_count,
                timeouts=timeouts,
                status=delegation.status,
                error=_error(delegation, kind),
                duration_ms=delegation.duration_ms,
                task=delegation.task,
                start_ns=delegation.start_ns,
                delegation=delegation.index,
            )
        )
    return failures


def loop_failures(trace_id: str, tree: HandoffTree) -> list[Failure]:
    """ERROR agent loops not already explained by their handoff (e.g. a failed turn): a delegation's
    attempt is its delegation's (failed, or retried), a transfer's target is explained only when the
    transfer failed; a transfer that completed into a loop that then raised (an agent segment that
    failed after taking the conversation over) is the turn failing."""
    failures = []
    for node in tree.nodes:
        if node.status != "error":
            continue
        via = tree.delegations[node.via] if node.via is not None else None
        if via is not None and (via.kind == "delegate" or outcomes.is_failed_handoff(via)):
            continue
        failures.append(
            Failure(
                kind="error",
                reason=outcomes.reason_name(node.error_type or "error"),
                trace_id=trace_id,
                span_id=node.span_id,
                caller=tree.nodes[node.parent].agent if node.parent is not None else None,
                target=node.agent,
                tool="",
                attempts=1,
                timeouts=1 if node.error_type == c.ERROR_TIMEOUT else 0,
                status="error",
                duration_ms=node.duration_ns / 1e6 if node.duration_ns >= 0 else None,
                start_ns=node.start_ns,
            )
        )
    return failures


def trace_failures(trace_id: str, tree: HandoffTree) -> list[Failure]:
    """Every failure of a trace (`TraceView.failures`): its delegations' and its loops', in start order."""
    failures = delegation_failures(trace_id, tree) + loop_failures(trace_id, tree)
    failures.sort(key=lambda f: f.start_ns)
    return failures


def budget_burn(index: SpanIndex, tree: HandoffTree) -> list[BudgetBurn]:
    """Turns, tokens and ms used against `janux.budget.*` for every loop that has a budget."""
    burns = []
    for node, pos in zip(tree.nodes, tree.node_span, strict=True):
        if pos == NO_PARENT:
            continue
        attrs = index.spans[pos].attributes
        max_turns = attr_int(attrs, c.JANUX_BUDGET_MAX_TURNS)
        max_tokens = attr_int(attrs, c.JANUX_BUDGET_MAX_TOKENS)
        max_ms = attr_float(attrs, c.JANUX_BUDGET_MAX_MS)
        if max_turns is None and max_tokens is None and max_ms is None:
            continue
        ms_used = node.duration_ns / 1e6 if node.duration_ns >= 0 else None
        via = tree.delegations[node.via] if node.via is not None else None
        if max_ms is not None and via is not None and via.duration_ms is not None:
            # A time limit covers the whole delegation, retries included: that is what it is held
            # against. Without one, the line is the attempt's own time, never its delegation's.
            ms_used = via.duration_ms
        burns.append(
            BudgetBurn(
                node=node.index,
                agent=node.agent,
                attempt=node.attempt,
                turns_used=node.own.rounds,
                max_turns=max_turns,
                tokens_used=node.own.total_tokens,
                max_tokens=max_tokens,
                ms_used=ms_used,
                max_ms=max_ms,
                stop_reason=node.stop_reason,
            )
        )
    return burns
