"""Reconciliation checks of the trace contract, each failure named.

1. `turn_vs_rounds`: per janux loop, `janux.turn.*` equals the sum over that loop's chat spans.
2. `bill_vs_turns`: per billed turn, `janux.bill.*` equals the sum of `janux.turn.*` below it.
   Both compare the values as recorded, cost estimates (`janux.*.cost_estimate`) included.
3. `usage_on_agent_span`: `gen_ai.usage.*` never on `invoke_agent` (info for other runtimes,
   whose aggregated agent usage is ignored rather than double counted).
4. `attempts_recorded` (warning): `janux.handoff.attempts` equals the attempt spans seen.
"""

from __future__ import annotations

import math

from janux.tracing import conventions as c
from janux.tracing.analysis import spanread as sr
from janux.tracing.analysis.costs import bill_owners, rounds_usage
from janux.tracing.analysis.handoff_tree import HandoffTree
from janux.tracing.analysis.span_index import NO_PARENT, SpanIndex
from janux.tracing.analysis.trace_parts import Check, Usage
from janux.tracing.records import attr_int


def _cost_equal(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _usage_diff(expected: Usage, actual: Usage) -> list[str]:
    """Names of the fields that differ."""
    diff = []
    if expected.input_tokens != actual.input_tokens:
        diff.append("input_tokens")
    if expected.output_tokens != actual.output_tokens:
        diff.append("output_tokens")
    if not _cost_equal(expected.cost, actual.cost):
        diff.append("cost")
    if expected.unpriced_tokens != actual.unpriced_tokens:
        diff.append("unpriced_tokens")
    if not _cost_equal(expected.estimated_cost, actual.estimated_cost):
        diff.append("cost_estimate")
    return diff


def format_usage(usage: Usage) -> str:
    """Compact one-line form used in check messages (the estimate only when there is one)."""
    cost = "unpriced" if usage.cost is None else f"${usage.cost:.6f}"
    text = f"in {usage.input_tokens} / out {usage.output_tokens} / {cost} / unpriced {usage.unpriced_tokens}"
    return text if usage.estimated_cost is None else f"{text} / estimate ${usage.estimated_cost:.6f}"


def _as_recorded(usage: Usage) -> Usage:
    """Rounds' usage in the recorded meaning, where `unpriced_tokens` counts every token without a
    recorded price (estimated rounds included)."""
    usage.unpriced_tokens += usage.estimated_tokens
    usage.estimated_tokens = 0
    return usage


def turn_checks(index: SpanIndex, tree: HandoffTree) -> list[Check]:
    """Invariant 1 for every janux loop that recorded `janux.turn.*`."""
    checks = []
    # A span's agent segments share its `janux.turn.*`: the check is of the span, over all of them.
    segment_calls: dict[int, list[int]] = {}
    for node, pos in zip(tree.nodes, tree.node_span, strict=True):
        if node.segmented:
            segment_calls.setdefault(pos, []).extend(node.chat_spans)
    for node, pos in zip(tree.nodes, tree.node_span, strict=True):
        if pos == NO_PARENT or not node.janux or node.segment > 0:
            continue
        if node.own_source != "recorded" and not (node.segmented and _has_turn_usage(index, pos)):
            continue
        calls = segment_calls.get(pos, node.chat_spans)
        recorded = sr.turn_usage(index.spans[pos])
        rounds = _as_recorded(rounds_usage(index, calls, estimate=False))
        diff = _usage_diff(rounds, recorded)
        # A round that failed in the model client is not a round the loop made.
        rounds.rounds = sum(1 for p in calls if not sr.is_error(index.spans[p]))
        recorded_rounds = attr_int(index.spans[pos].attributes, c.JANUX_TURN_ROUNDS)
        if recorded_rounds is not None and recorded_rounds != rounds.rounds:
            diff.append("rounds")
        subject = f"{sr.agent_name(index.spans[pos])} ({node.span_id})"
        message = (
            f"janux.turn.* matches its {len(calls)} chat span(s)"
            if not diff
            else f"janux.turn.* differs from its chat spans in {', '.join(diff)}"
        )
        checks.append(
            Check(
                name="turn_vs_rounds",
                ok=not diff,
                subject=subject,
                message=message,
                span_id=node.span_id,
                expected=format_usage(rounds) + f" / rounds {rounds.rounds}",
                actual=format_usage(recorded) + f" / rounds {recorded_rounds}",
            )
        )
    return checks


def _has_turn_usage(index: SpanIndex, pos: int) -> bool:
    attrs = index.spans[pos].attributes
    return any(key in attrs for key in c.TURN_USAGE_KEYS)


def bill_checks(index: SpanIndex, billed: list[int]) -> list[Check]:
    """Invariant 2: each outermost billed span against the sum of the turns below it."""
    if not billed:
        return []
    owner = bill_owners(index, billed)
    sums = {pos: Usage() for pos in billed}
    for pos in index.order:
        span = index.spans[pos]
        if owner[pos] != NO_PARENT and sr.operation(span) == c.OP_INVOKE_AGENT and sr.is_janux_loop(span):
            sums[owner[pos]].add(sr.turn_usage(span))
    checks = []
    for pos in billed:
        span = index.spans[pos]
        bill, turns = sr.bill_usage(span), sums[pos]
        diff = _usage_diff(turns, bill)
        hint = " (spans are missing: the trace is incomplete)" if diff and index.issues.incomplete else ""
        checks.append(
            Check(
                name="bill_vs_turns",
                ok=not diff,
                subject=f"{sr.agent_name(span)} ({span.span_id})",
                message=(
                    "janux.bill.* equals the sum of janux.turn.* over every loop"
                    if not diff
                    else f"janux.bill.* differs from the sum of janux.turn.* in {', '.join(diff)}{hint}"
                ),
                span_id=span.span_id,
                expected=format_usage(turns),
                actual=format_usage(bill),
            )
        )
    return checks


def agent_usage_checks(index: SpanIndex, tree: HandoffTree) -> list[Check]:
    """Invariant 3: flag `gen_ai.usage.*` on agent spans (an error on janux loops)."""
    checks = []
    for node, pos in zip(tree.nodes, tree.node_span, strict=True):
        if pos == NO_PARENT or not sr.has_agent_usage(index.spans[pos]):
            continue
        tokens_in, tokens_out = sr.agent_usage_tokens(index.spans[pos])
        checks.append(
            Check(
                name="usage_on_agent_span",
                ok=False,
                severity="error" if node.janux else "info",
                subject=f"{node.agent} ({node.span_id})",
                message=(
                    "gen_ai.usage.* set on an invoke_agent span (backends that sum it double count)"
                    if node.janux
                    else "usage reported on an agent span (accumulated over its rounds or subtree) ignored: "
                    "usage is taken from model calls only"
                ),
                span_id=node.span_id,
                expected="no gen_ai.usage.* on invoke_agent",
                actual=f"in {tokens_in} / out {tokens_out}",
            )
        )
    return checks


def attempt_checks(tree: HandoffTree) -> list[Check]:
    """Recorded attempt counts against the attempt spans seen (a warning: spans may be missing)."""
    checks = []
    for delegation in tree.delegations:
        recorded = delegation.recorded_attempts
        if recorded is None or recorded == len(delegation.attempts):
            continue
        if delegation.kind == "transfer" and not delegation.attempts:
            continue  # a transfer continues in the caller's own loop: no attempt span to count
        checks.append(
            Check(
                name="attempts_recorded",
                ok=False,
                severity="warning",
                subject=f"{delegation.tool} ({delegation.tool_span_id})",
                message=(
                    f"janux.handoff.attempts says {recorded}, {len(delegation.attempts)} attempt span(s) seen"
                ),
                span_id=delegation.tool_span_id,
                expected=str(recorded),
                actual=str(len(delegation.attempts)),
            )
        )
    return checks


def run_checks(index: SpanIndex, tree: HandoffTree, billed: list[int]) -> list[Check]:
    """Every reconciliation check of one trace, failures first."""
    checks = (
        turn_checks(index, tree)
        + bill_checks(index, billed)
        + agent_usage_checks(index, tree)
        + attempt_checks(tree)
    )
    checks.sort(key=lambda chk: (chk.ok, chk.severity != "error"))
    return checks
