"""What the handoff graph says about each loop and handoff, and which loops it draws (the Trace
page's and Compare's graph, `handoff_chart`): plain text, the words of `outcomes`, so the graph
never labels an attempt differently from the tables.
"""

from __future__ import annotations

from collections import deque

from janux.tracing.analysis import figures, outcomes
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_parts import AgentNode, Attempt, Delegation
from janux.tracing.analysis.trace_view import TraceView

DEFAULT_MAX_NODES = 150
"""Agent loops drawn before the rest of the tree is collapsed into "+N more" nodes."""
MAX_DRAWN_DEPTH = 24
"""Deepest delegation level drawn; loops below it are collapsed into "+N more" nodes (a chain
thousands deep would be drawn as one unreadable line)."""


def drawn_parents(view: TraceView) -> list[int | None]:
    """The loop each loop is drawn below: the loop it ran inside; or, for a loop a transfer started
    outside its caller's loop (a swarm's or graph's next agent, ADK's `transfer_to_agent`: spans
    side by side), the caller's loop, so the transfer is drawn as an edge between the two. Only
    below an earlier loop (loops are in start order, so the drawing has no cycle); a run that
    several transfers feed hangs below the one that owns it (the others are drawn as notes)."""
    parents = [node.parent for node in view.nodes]
    for delegation in view.delegations:
        caller = delegation.parent_node
        if delegation.kind != "transfer" or delegation.shares_run or caller is None:
            continue
        for attempt in delegation.attempts:
            if caller < attempt.node and parents[attempt.node] != caller:
                parents[attempt.node] = caller
    return parents


def children_of(view: TraceView, parents: list[int | None] | None = None) -> dict[int, list[int]]:
    """The loops drawn directly below each loop (`drawn_parents`), in the trace's order."""
    children: dict[int, list[int]] = {}
    for index, parent in enumerate(drawn_parents(view) if parents is None else parents):
        if parent is not None:
            children.setdefault(parent, []).append(index)
    return children


def visible_loops(view: TraceView, max_nodes: int) -> set[int]:
    """Loops drawn: breadth first from the roots (so top levels stay visible), up to `max_nodes`
    and `MAX_DRAWN_DEPTH` levels."""
    parents = drawn_parents(view)
    children = children_of(view, parents)
    queue = deque(index for index, parent in enumerate(parents) if parent is None)
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
    for index, parent in enumerate(drawn_parents(view)):  # parents come first: each finds its anchor
        if index in shown or parent is None:
            continue
        anchor = parent if parent in shown else anchor_of.get(parent)
        if anchor is None:
            continue
        anchor_of[index] = anchor
        hidden[anchor] = hidden.get(anchor, 0) + 1
    return hidden


def node_lines(node: AgentNode) -> list[str]:
    """A loop's label: agent (and attempt), own and inclusive cost, how it failed or that it is open."""
    title = node.agent + (f"  #{node.attempt}" if node.attempt else "")
    if node.transferred_from and node.transferred_from != node.agent:
        title = f"{node.transferred_from} ⇒ {title} (transfer)"
    # Chart labels (`figures.chart_label`), unpriced tokens with each cost: an own and an inclusive
    # cost of the same amount never hide the unpriced tokens below.
    own, inclusive = (figures.chart_label(figures.cost(usage)) for usage in (node.own, node.inclusive))
    costs = f"own {own} · incl {inclusive}"
    failed = f"error: {node.error_type}" if node.error_type else "error"  # never "error: error"
    status = {"error": failed, "open": "no end yet"}.get(node.status, "")
    if node.stop_reason:
        status = f"cut: {node.stop_reason}"
    return [line for line in (title, costs, status) if line]


def edge_lines(delegation: Delegation, attempt: Attempt | None) -> list[str]:
    """An attempt's edge says how that attempt ended and how long it ran (a failed attempt never
    reads "completed"); an edge without attempts says the handoff's final status."""
    if delegation.kind == "transfer" and delegation.recorded:
        # The target's agent segment took the conversation over: no attempt to count.
        parts = [delegation.status, "transfer"]
    elif attempt is not None:
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


def ghost_lines(delegation: Delegation, drawn_below: str | None = None) -> list[str]:
    """The note standing for a handoff that started no loop: what it would have run, and why not;
    or, for one whose run another transfer owns, the agent below whose transfer that run is drawn."""
    kind = "transfer to" if delegation.kind == "transfer" else "not run:"
    if delegation.kind == "transfer" and delegation.status == "completed" and not delegation.shares_run:
        kind = "continues in this loop as"
    if delegation.shares_run:  # its run is drawn once, below the transfer that owns it
        return [f"{kind} {delegation.target}", f"the run drawn below {drawn_below or 'another caller'}"]
    reason = delegation.deny_reason or delegation.stop_reason or delegation.error or ""
    return [line for line in (f"{kind} {delegation.target}", reason) if line]
