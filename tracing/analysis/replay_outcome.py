"""A run's outcome as `janux replay` compares it: the turn, its bill, and each delegation's outcome.

    recorded = run_outcome(reconstruct(recorded_spans))
    replayed = run_outcome(reconstruct(replayed_spans))
    differences(recorded, replayed)   # [] when the replay reproduced the recording

Both sides are read by the same rules (the rebuilt trace), so a replay that runs the same steps
cannot differ by reading. Delegations are numbered 1..n in the handoff tree's order (depth first,
in start order), the numbers `janux replay --delegation N` takes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_parts import Delegation
from janux.tracing.analysis.trace_view import TraceView
from janux.usage import Usage


@dataclass(frozen=True, slots=True)
class DelegationOutcome:
    """How one delegation or transfer ended."""

    number: int
    """1-based position in the handoff tree."""
    span_id: str | None
    """The delegation's tool span (what `--span` names)."""
    caller: str | None
    """Agent that delegated."""
    tool: str
    """Tool name."""
    target: str
    """Subagent or transfer target."""
    status: str
    """Final status (`completed`, `failed`, `fallback`, `denied`, `cut`)."""
    attempts: int
    """Attempts run."""
    attempt_ends: tuple[str, ...]
    """Per attempt: `ok`, its `error.type`, or the budget line that cut it."""
    reason: str | None
    """Deny reason, budget line, or error type of the delegation."""
    ruling: str | None
    """Deny reason or budget line only (what the runtime's HANDOFF_END names)."""
    usage: Usage
    """Tokens and cost of every attempt, with what they delegated."""
    kind: str = "delegate"
    """`delegate` or `transfer`."""

    @property
    def kind_label(self) -> str:
        """`delegation to X` or `transfer to X`."""
        return f"{'transfer' if self.kind == 'transfer' else 'delegation'} to {self.target}"

    def key(self) -> tuple[object, ...]:
        """What must match between recording and replay (usage with money rounded)."""
        usage = self.usage.rounded()
        return (
            self.caller, self.tool, self.target, self.status, self.attempts, self.attempt_ends, self.reason,
            usage.input_tokens, usage.output_tokens, usage.cost, usage.unpriced_tokens,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a turn ended."""

    status: str
    """`ok` or `error` (the turn span's status)."""
    error_type: str | None
    """`error.type` of a failed turn."""
    stop_reason: str | None
    """Budget line that cut the turn's own loop."""
    bill: Usage
    """The whole turn's usage (recorded bill, else summed from the rounds)."""
    delegations: list[DelegationOutcome] = field(default_factory=list)
    """Every delegation and transfer, numbered."""

    def bill_key(self) -> tuple[object, ...]:
        """The bill as compared (money rounded)."""
        bill = self.bill.rounded()
        return (bill.input_tokens, bill.output_tokens, bill.cost, bill.unpriced_tokens)


def _ends(delegation: Delegation) -> tuple[str, ...]:
    ends = []
    for attempt in delegation.attempts:
        ends.append(
            attempt.stop_reason or attempt.error_type or ("error" if attempt.status == "error" else "ok")
        )
    return tuple(ends)


def _delegation(delegation: Delegation) -> DelegationOutcome:
    return DelegationOutcome(
        number=delegation.index + 1,
        span_id=delegation.tool_span_id,
        caller=delegation.caller,
        tool=delegation.tool,
        target=delegation.target,
        status=delegation.status,
        attempts=delegation.attempt_count,
        attempt_ends=_ends(delegation),
        reason=delegation.deny_reason or delegation.stop_reason or delegation.error_type,
        ruling=delegation.deny_reason or delegation.stop_reason,
        usage=delegation.cost.copy(),
        kind=delegation.kind,
    )


def run_outcome(view: TraceView) -> RunOutcome:
    """The outcome of the (one) turn in a rebuilt trace."""
    roots = [node for node in view.tree.nodes if node.parent is None and not node.synthetic]
    root = roots[0] if roots else None
    return RunOutcome(
        status=root.status if root is not None else "ok",
        error_type=root.error_type if root is not None else None,
        stop_reason=root.stop_reason if root is not None else None,
        bill=(view.bill if view.bill is not None else view.computed).copy(),
        delegations=[_delegation(d) for d in view.tree.delegations],
    )


def find_delegation(outcome: RunOutcome, number: int | None, span_id: str | None) -> DelegationOutcome | None:
    """The delegation numbered `number`, or whose tool span is `span_id` (prefix allowed)."""
    for delegation in outcome.delegations:
        if number is not None and delegation.number == number:
            return delegation
        if span_id and delegation.span_id and delegation.span_id.startswith(span_id.lower()):
            return delegation
    return None


def differences(recorded: RunOutcome, replayed: RunOutcome, only: int | None = None) -> list[str]:
    """What the replay did differently, one line each; `only`: compare that delegation number alone."""
    lines: list[str] = []
    if only is None:
        for label, a, b in (
            ("turn status", recorded.status, replayed.status),
            ("turn error", recorded.error_type, replayed.error_type),
            ("turn stop reason", recorded.stop_reason, replayed.stop_reason),
        ):
            if a != b:
                lines.append(f"{label}: recorded {a}, replayed {b}")
        if recorded.bill_key() != replayed.bill_key():
            lines.append(f"bill: recorded {_exact(recorded.bill)}, replayed {_exact(replayed.bill)}")
    wanted = [d for d in recorded.delegations if only is None or d.number == only]
    theirs = {d.number: d for d in replayed.delegations}
    for mine in wanted:
        other = theirs.get(mine.number)
        if other is None:
            lines.append(f"delegation {mine.number} ({mine.tool}): not made in the replay")
        elif mine.key() != other.key():
            lines.append(f"delegation {mine.number} ({mine.tool}): {_changed(mine, other)}")
    if only is None and len(replayed.delegations) > len(recorded.delegations):
        extra = len(replayed.delegations) - len(recorded.delegations)
        lines.append(f"{extra} delegation(s) the recording never made")
    return lines


def _exact(usage: Usage) -> str:
    """Tokens and the cost to the last exported digit (a repricing shows exactly)."""
    cost = fmt.exact_usd(usage.cost)
    unpriced = f" + {usage.unpriced_tokens:,} unpriced tokens" if usage.unpriced_tokens else ""
    return f"{fmt.tokens(usage)}, {cost}{unpriced}"


def _changed(mine: DelegationOutcome, other: DelegationOutcome) -> str:
    parts = []
    if (mine.status, mine.reason) != (other.status, other.reason):
        parts.append(f"{_outcome_text(mine)} -> {_outcome_text(other)}")
    if mine.attempt_ends != other.attempt_ends or mine.attempts != other.attempts:
        parts.append(f"attempts {_attempts_text(mine)} -> {_attempts_text(other)}")
    if mine.usage.rounded() != other.usage.rounded():
        parts.append(f"{_exact(mine.usage)} -> {_exact(other.usage)}")
    return "; ".join(parts) or "differs"


def _usage_text(usage: Usage) -> str:
    return f"{fmt.tokens(usage)}, {fmt.usage_cost_full(usage)}"


def _outcome_text(d: DelegationOutcome) -> str:
    return f"{d.status} ({d.reason})" if d.reason else d.status


def _attempts_text(d: DelegationOutcome) -> str:
    return f"{d.attempts}: {', '.join(d.attempt_ends)}" if d.attempt_ends else str(d.attempts)


def _turn_text(o: RunOutcome) -> str:
    if o.status == "error":
        return f"error ({o.error_type})"
    return f"ok (cut: {o.stop_reason})" if o.stop_reason else "ok"


def _row(label: str, recorded: str, replayed: str) -> str:
    mark = " " if recorded == replayed else "*"
    return f"{mark} {label:<10} {recorded:<44} {replayed}"


def _delegation_rows(mine: DelegationOutcome, other: DelegationOutcome | None) -> list[str]:
    missing = "not made"
    title = f"  #{mine.number} {mine.caller or '?'} -> {mine.tool} ({mine.kind_label})"
    return [
        title,
        _row("outcome", _outcome_text(mine), _outcome_text(other) if other else missing),
        _row("attempts", _attempts_text(mine), _attempts_text(other) if other else missing),
        _row("usage", _usage_text(mine.usage), _usage_text(other.usage) if other else missing),
    ]


def render_comparison(recorded: RunOutcome, replayed: RunOutcome, only: int | None = None) -> str:
    """The recorded and the replayed outcome side by side (CLI text); `*` marks a line that differs."""
    lines = [f"  {'':<10} {'recorded':<44} replayed"]
    if only is None:
        lines.append(_row("turn", _turn_text(recorded), _turn_text(replayed)))
        lines.append(_row("bill", _usage_text(recorded.bill), _usage_text(replayed.bill)))
    theirs = {d.number: d for d in replayed.delegations}
    for mine in recorded.delegations:
        if only is None or mine.number == only:
            lines.extend(_delegation_rows(mine, theirs.get(mine.number)))
    if only is None:
        for extra in replayed.delegations[len(recorded.delegations) :]:
            lines.append(f"* #{extra.number} {extra.caller or '?'} -> {extra.tool}: only in the replay, "
                         f"{_outcome_text(extra)}, {_usage_text(extra.usage)}")  # fmt: skip
    return "\n".join(lines)
