"""What the handoff graph says about each loop and handoff, and which loops it draws (the Trace
page's and Compare's graph, `handoff_chart`): plain text, the words of `outcomes`, so the graph
never labels an attempt differently from the tables.
"""

from __future__ import annotations

from collections import deque

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.trace_parts import AgentNode, Attempt, Delegation
from janux.tracing.analysis.trace_view import TraceView

DEFAULT_MAX_NODES = 150
"""Agent loops drawn before the rest of the tree is collapsed into "+N more" nodes."""
MAX_DRAWN_DEPTH = 24
"""Deepest delegation level drawn; loops below it are collapsed into "+N more" nodes (a chain
thousands deep would be drawn as one unreadable line)."""


def children_of(view: TraceView) -> dict[int, list[int]]:
    """The loops directly below each loop, in the trace's order."""
    children: dict[int, list[int]] = {}
    for node in view.nodes:
        if node.parent is not None:
            children.setdefault(node.parent, []).append(node.index)
    return children


def visible_loops(view: TraceView, max_nodes: int) -> set[int]:
    """Loops drawn: breadth first from the roots (so top levels stay visible), up to `max_nodes`
    and `MAX_DRAWN_DEPTH` levels."""
    children = children_of(view)
    queue = deque(n.index for n in view.nodes if n.parent is None)
    shown: set[int] = set()
    while queue and len(shown) < max_nodes:
        index = queue.popleft()
        shown.add(index)
        if view.nodes[index].depth < MAX_DRAWN_DEPTH:
            queue.extend(children.get(index, ()))
    return shown


def hidden_below(view: TraceView, shown: set[int]) -> dict[int, int]:
    """For each drawn loop whose delegated loops were not all drawn: how many loops below it are not."""
    hidden: dict[int, int] = {}
    anchor_of: dict[int, int] = {}
    for node in view.nodes:  # parents come first, so each hidden loop finds its drawn ancestor
        if node.index in shown or node.parent is None:
            continue
        anchor = node.parent if node.parent in shown else anchor_of.get(node.parent)
        if anchor is None:
            continue
        anchor_of[node.index] = anchor
        hidden[anchor] = hidden.get(anchor, 0) + 1
    return hidden


def node_lines(node: AgentNode) -> list[str]:
    """A loop's label: agent (and attempt), own and inclusive cost, how it failed or that it is open."""
    title = node.agent + (f"  #{node.attempt}" if node.attempt else "")
    if node.transferred_from and node.transferred_from != node.agent:
        title = f"{node.transferred_from} ⇒ {title} (transfer)"
    costs = f"own {fmt.usage_cost(node.own)} · incl {fmt.usage_cost(node.inclusive)}"
    failed = f"error: {node.error_type}" if node.error_type else "error"  # never "error: error"
    status = {"error": failed, "open": "no end yet"}.get(node.status, "")
    if node.stop_reason:
        status = f"cut: {node.stop_reason}"
    return [line for line in (title, costs, status) if line]


def edge_lines(delegation: Delegation, attempt: Attempt | None) -> list[str]:
    """An attempt's edge says how that attempt ended and how long it ran (a failed attempt never
    reads "completed"); an edge without attempts says the handoff's final status."""
    if attempt is not None:
        total = delegation.attempt_count
        parts = [
            f"attempt {attempt.number}/{total}: {outcomes.attempt_outcome(attempt)}",
            fmt.ms(attempt.duration_ms),
        ]
    elif delegation.kind == "transfer":
        parts = [delegation.status, "transfer"]  # runs on in the same loop: no attempt to count
    else:
        parts = [delegation.status, outcomes.NOT_RUN]
    return [delegation.tool, " · ".join(parts)]


def ghost_lines(delegation: Delegation) -> list[str]:
    """The note standing for a handoff that started no loop: what it would have run, and why not."""
    kind = "transfer to" if delegation.kind == "transfer" else "not run:"
    if delegation.kind == "transfer" and delegation.status == "completed":
        kind = "continues in this loop as"
    reason = delegation.deny_reason or delegation.stop_reason or delegation.error or ""
    return [line for line in (f"{kind} {delegation.target}", reason) if line]
