"""Cost per node (own and inclusive) and per delegation, by the contract's one accounting rule.

A janux loop's own usage is its `janux.turn.*`; other loops sum their inference spans (never
usage reported on agent spans, which other libraries aggregate), priced from the price table
as an estimate when the rounds carry no `janux.round.cost`. Inclusive usage adds every loop
below; it is computed bottom-up in one pass.
"""

from __future__ import annotations

from janux.dashboard.reconstruct import spanread as sr
from janux.dashboard.reconstruct.model import Usage
from janux.dashboard.reconstruct.pricing import estimate_round_cost
from janux.dashboard.reconstruct.tree import HandoffTree
from janux.tracing import conventions as c
from janux.tracing.records import attr_float
from janux.tracing.spantree.index import NO_PARENT, SpanIndex


def rounds_usage(index: SpanIndex, positions: list[int], *, estimate: bool) -> Usage:
    """Usage summed over inference spans; rounds without a recorded cost are estimated or unpriced."""
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
        cost = attr_float(span.attributes, c.JANUX_ROUND_COST)
        if cost is not None:
            usage.cost = cost if usage.cost is None else usage.cost + cost
            continue
        price = (
            estimate_round_cost(sr.round_model(span), sr.round_provider(span), tokens_in, tokens_out)
            if estimate
            else None
        )
        if price is None:
            usage.unpriced_tokens += tokens_in + tokens_out
        else:
            usage.estimated_cost = price if usage.estimated_cost is None else usage.estimated_cost + price
    return usage


def assign_costs(index: SpanIndex, tree: HandoffTree, *, estimate: bool = True) -> None:
    """Fill own and inclusive usage of every node and the usage of every delegation."""
    for node, pos in zip(tree.nodes, tree.node_span, strict=True):
        if pos != NO_PARENT and node.janux and _has_turn(index, pos):
            node.own = sr.turn_usage(index.spans[pos])
            if c.JANUX_TURN_ROUNDS not in index.spans[pos].attributes:
                # Only a writer that leaves the count out is given its chat spans as rounds; a
                # recorded 0 (the only round timed out or was cut) stays 0.
                node.own.rounds = len(node.chat_spans)
            node.own_source = "recorded"
            continue
        # Janux loops are never estimated: an unpriced janux round stays unpriced.
        node.own = rounds_usage(index, node.chat_spans, estimate=estimate and not node.janux)
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
        for attempt in delegation.attempts:
            total.add(tree.nodes[attempt.node].inclusive)
        delegation.cost = total


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


def recorded_bill(index: SpanIndex, billed: list[int]) -> Usage | None:
    """Sum of `janux.bill.*` over the outermost billed spans, None when the trace has no bill."""
    if not billed:
        return None
    bill = Usage()
    for pos in billed:
        bill.add(sr.bill_usage(index.spans[pos]))
    return bill
