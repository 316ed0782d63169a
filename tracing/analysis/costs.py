"""Cost per node (own and inclusive) and per delegation, by the contract's one accounting rule.

A janux loop's own usage is its `janux.turn.*`; other loops sum their inference spans (never
usage reported on agent spans, which other libraries aggregate). A round is priced by its recorded
`janux.round.cost`; else by the estimate a writer recorded for it (`janux.round.cost_estimate`,
an integration's price-table figure); else, for other runtimes' rounds only, from the price table
here. An estimate is always kept apart from recorded cost, and its tokens are `estimated_tokens`,
not `unpriced_tokens` (see docs/trace-contract.md, "Estimated costs"). Inclusive usage adds every
loop below; it is computed bottom-up in one pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from janux.tracing import conventions as c
from janux.tracing.analysis import spanread as sr
from janux.tracing.analysis.handoff_tree import HandoffTree
from janux.tracing.analysis.span_index import NO_PARENT, SpanIndex
from janux.tracing.analysis.trace_parts import Usage, plus
from janux.tracing.prices import estimate_round_cost, price_source
from janux.tracing.records import SpanRecord

PriceKind = Literal["recorded", "estimated", "unpriced"]
"""How a round is priced: `janux.round.cost`, an estimate (recorded or from the table), or not at all."""


@dataclass(slots=True, frozen=True)
class RoundPrice:
    """The price of one model round as the dashboard shows it."""

    kind: PriceKind
    """Recorded, estimated or unpriced."""
    usd: float | None
    """The amount; None when unpriced."""
    source: str | None = None
    """Estimates only: where the figure comes from (`genai-prices 0.2.3, recorded in the trace`)."""


UNPRICED = RoundPrice("unpriced", None)
"""A round nobody priced."""


def estimate_label(source: str, *, recorded: bool) -> str:
    """How an estimate's origin is named: the table, and who applied it."""
    return f"{source}, recorded in the trace" if recorded else f"{source}, estimated by the dashboard"


def price_round(span: SpanRecord, tokens_in: int, tokens_out: int, *, table: bool) -> RoundPrice:
    """The price of one round whose usage was read: recorded cost, else a recorded estimate, else
    (when `table`: rounds of other runtimes) an estimate from the price table, else unpriced."""
    cost = sr.round_cost(span)
    if cost is not None:
        return RoundPrice("recorded", cost)
    recorded = sr.round_estimate(span)
    if recorded is not None:
        return RoundPrice("estimated", recorded[0], estimate_label(recorded[1], recorded=True))
    if table:
        usd = estimate_round_cost(sr.round_model(span), sr.round_provider(span), tokens_in, tokens_out)
        if usd is not None:
            return RoundPrice("estimated", usd, estimate_label(price_source(), recorded=False))
    return UNPRICED


def rounds_usage(
    index: SpanIndex, positions: list[int], *, estimate: bool, sources: set[str] | None = None
) -> Usage:
    """Usage summed over inference spans, each priced by `price_round` (`estimate`: the price table
    may price rounds nothing priced); the origins of the estimates used are added to `sources`."""
    usage = Usage()
    for pos in positions:
        span = index.spans[pos]
        state, tokens_in, tokens_out = sr.round_usage(span)
        usage.rounds += 1
        if state in ("unread", "absent"):
            usage.unread_rounds += 1  # unknown: neither tokens nor an estimate are made up
            continue
        if state == "failed":
            continue  # a call that failed returned no usage: nothing to count or estimate
        usage.input_tokens += tokens_in
        usage.output_tokens += tokens_out
        price = price_round(span, tokens_in, tokens_out, table=estimate)
        if price.usd is None:
            usage.unpriced_tokens += tokens_in + tokens_out
        elif price.kind == "recorded":
            usage.cost = plus(usage.cost, price.usd)
        else:
            usage.estimated_cost = plus(usage.estimated_cost, price.usd)
            usage.estimated_tokens += tokens_in + tokens_out
            if sources is not None and price.source is not None:
                sources.add(price.source)
    return usage


def _recorded_estimates(index: SpanIndex, positions: Iterable[int], sources: set[str]) -> int:
    """Tokens of the rounds among `positions` that carry a recorded estimate (and no cost); their
    price sources are added to `sources`."""
    tokens = 0
    for pos in positions:
        span = index.spans[pos]
        if sr.round_cost(span) is not None:
            continue
        recorded = sr.round_estimate(span)
        state, tokens_in, tokens_out = sr.round_usage(span)
        if recorded is not None and state == "read":
            tokens += tokens_in + tokens_out
            sources.add(estimate_label(recorded[1], recorded=True))
    return tokens


def _settle_estimate(usage: Usage, estimated_tokens: int) -> None:
    """Move the tokens of estimated rounds out of a recorded `unpriced_tokens` (which, as recorded,
    counts every token without a recorded price), so that an estimate is shown as one."""
    usage.estimated_tokens = estimated_tokens
    usage.unpriced_tokens = max(0, usage.unpriced_tokens - estimated_tokens)


def assign_costs(index: SpanIndex, tree: HandoffTree, *, estimate: bool = True) -> list[str]:
    """Fill own and inclusive usage of every node and the usage of every delegation; returns the
    origins of the estimates used (sorted), empty when nothing was estimated."""
    sources: set[str] = set()
    for node, pos in zip(tree.nodes, tree.node_span, strict=True):
        if pos != NO_PARENT and node.janux and not node.segmented and _has_turn(index, pos):
            node.own = sr.turn_usage(index.spans[pos])
            # A round recorded without usage (its model reported none) is unknown, not the 0 that
            # `janux.turn.*` cannot help but count it as.
            node.own.unread_rounds = _unread_rounds(index, node.chat_spans)
            # A round that failed is a round (failed, with its usage or none reported), as the
            # tree shows it: `janux.turn.rounds` counts only the rounds that answered.
            node.own.rounds = max(node.own.rounds, len(node.chat_spans))
            if node.own.estimated_cost is not None:
                _settle_estimate(node.own, _recorded_estimates(index, node.chat_spans, sources))
            node.own_source = "recorded"
            continue
        # Janux loops are never estimated here: an unpriced janux round stays unpriced unless its
        # writer recorded an estimate for it.
        node.own = rounds_usage(index, node.chat_spans, estimate=estimate and not node.janux, sources=sources)
        if not node.chat_spans:
            node.own_source = "none"
        else:
            node.own_source = "estimated" if node.own.is_estimated else "derived"
    for node in tree.nodes:
        node.inclusive = node.own.copy()
    # Nodes are in depth-first order, so every child is folded in before its parent is read.
    for node in reversed(tree.nodes):
        if node.parent is not None:
            tree.nodes[node.parent].inclusive.add(node.inclusive)
    for delegation in tree.delegations:
        total = Usage()
        for attempt in () if delegation.shares_run else delegation.attempts:  # carried by another edge
            total.add(tree.nodes[attempt.node].inclusive)
        delegation.cost = total
    return sorted(sources)


def _unread_rounds(index: SpanIndex, positions: list[int]) -> int:
    return sum(1 for pos in positions if sr.round_usage(index.spans[pos])[0] in ("unread", "absent"))


def _has_turn(index: SpanIndex, pos: int) -> bool:
    attrs = index.spans[pos].attributes
    return any(key in attrs for key in c.TURN_USAGE_KEYS)


def computed_total(tree: HandoffTree) -> Usage:
    """Sum of every node's own usage (the whole trace, as rebuilt from loops and rounds)."""
    total = Usage()
    for node in tree.nodes:
        total.add(node.own)
    return total


def billed_spans(index: SpanIndex) -> list[int]:
    """Positions of spans carrying `janux.bill.*` that have no billed ancestor (normally the root)."""
    under_bill = [False] * len(index.spans)
    found: list[int] = []
    for pos in index.order:
        parent = index.parent[pos]
        if parent != NO_PARENT and under_bill[parent]:
            under_bill[pos] = True
        elif sr.has_bill(index.spans[pos]):
            under_bill[pos] = True
            found.append(pos)
    return found


def bill_owners(index: SpanIndex, billed: list[int]) -> list[int]:
    """For every span, the billed span whose bill covers it (NO_PARENT for none). With one bill
    (the normal case) it covers every span of the trace, orphans included: the contract's bill sums
    over the whole trace."""
    owner = [NO_PARENT] * len(index.spans)
    lone = billed[0] if len(billed) == 1 else NO_PARENT
    heads = set(billed)
    for pos in index.order:
        parent = index.parent[pos]
        owner[pos] = pos if pos in heads else (owner[parent] if parent != NO_PARENT else lone)
    return owner


def recorded_bill(index: SpanIndex, billed: list[int]) -> Usage | None:
    """Sum of `janux.bill.*` over the outermost billed spans, None when the trace has no bill; a
    recorded `janux.bill.cost_estimate` is the estimated cost of the rounds that recorded one."""
    if not billed:
        return None
    bill = Usage()
    for pos in billed:
        bill.add(sr.bill_usage(index.spans[pos]))
    if bill.estimated_cost is not None:
        owner = bill_owners(index, billed)
        covered = (p for p, span in enumerate(index.spans) if owner[p] != NO_PARENT and _is_round(span))
        _settle_estimate(bill, _recorded_estimates(index, covered, set()))
    return bill


def _is_round(span: SpanRecord) -> bool:
    return sr.is_inference(sr.operation(span))
