"""The handoff tree as Graphviz DOT, every label escaped, large trees collapsed.

Labels are always emitted as quoted strings (never HTML-like `<...>` labels), with backslashes,
quotes and control characters escaped, so nothing from a trace can inject DOT or markup.
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
MAX_LABEL = 48
"""Longest single label line; longer values are cut with an ellipsis."""

_STATUS_COLOR = {
    "completed": "#2e7d32",
    "failed": "#c62828",
    "denied": "#c62828",
    "fallback": "#ef6c00",
    "cut": "#ef6c00",
    "open": "#6a1b9a",
}


def escape(text: str) -> str:
    """A value made safe inside a double-quoted DOT string (one line, bounded length)."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(text))
    if len(text) > MAX_LABEL:
        text = text[: MAX_LABEL - 1] + "…"
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _label(*lines: str) -> str:
    return '"' + "\\n".join(escape(line) for line in lines if line) + '"'


def _visible(view: TraceView, max_nodes: int) -> set[int]:
    """Nodes drawn: breadth first from the roots (so top levels stay visible), up to max_nodes and
    `MAX_DRAWN_DEPTH` levels."""
    children: dict[int, list[int]] = {}
    for node in view.nodes:
        if node.parent is not None:
            children.setdefault(node.parent, []).append(node.index)
    queue = deque(n.index for n in view.nodes if n.parent is None)
    shown: set[int] = set()
    while queue and len(shown) < max_nodes:
        index = queue.popleft()
        shown.add(index)
        if view.nodes[index].depth < MAX_DRAWN_DEPTH:
            queue.extend(children.get(index, ()))
    return shown


def _node_line(node: AgentNode) -> str:
    title = node.agent + (f"  #{node.attempt}" if node.attempt else "")
    if node.transferred_from and node.transferred_from != node.agent:
        title = f"{node.transferred_from} ⇒ {title} (transfer)"
    costs = f"own {fmt.usage_cost(node.own)} · incl {fmt.usage_cost(node.inclusive)}"
    failed = f"error: {node.error_type}" if node.error_type else "error"  # never "error: error"
    status = {"error": failed, "open": "no end yet"}.get(node.status, "")
    if node.stop_reason:
        status = f"cut: {node.stop_reason}"
    style = "filled,dashed" if node.status == "open" or node.incomplete else "filled"
    color = "#ffebee" if node.status == "error" else ("#fff3e0" if node.stop_reason else "#e3f2fd")
    return f'  n{node.index} [label={_label(title, costs, status)}, style="{style}", fillcolor="{color}"];'


def _edge_label(delegation: Delegation, attempt: Attempt | None) -> str:
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
    return _label(delegation.tool, " · ".join(parts))


def _delegation_edges(view: TraceView, delegation: Delegation, shown: set[int]) -> list[str]:
    if delegation.parent_node is None or delegation.parent_node not in shown:
        return []
    color = _STATUS_COLOR.get(delegation.status, "#455a64")
    style = "bold" if delegation.kind == "transfer" else "solid"
    arrow = "normal" if delegation.kind == "delegate" else "vee"
    source = f"n{delegation.parent_node}"
    attrs = f'color="{color}", fontcolor="{color}", arrowhead="{arrow}"'
    lines = []
    if not delegation.attempts:
        ghost = f"g{delegation.index}"
        kind = "transfer to" if delegation.kind == "transfer" else "not run:"
        if delegation.kind == "transfer" and delegation.status == "completed":
            kind = "continues in this loop as"
        reason = delegation.deny_reason or delegation.stop_reason or delegation.error or ""
        lines.append(f"  {ghost} [label={_label(f'{kind} {delegation.target}', reason)}, shape=note];")
        label = _edge_label(delegation, None)
        lines.append(f'  {source} -> {ghost} [label={label}, {attrs}, style="{style}"];')
        return lines
    for attempt in delegation.attempts:
        if attempt.node not in shown:
            continue
        label = _edge_label(delegation, attempt)
        line_style = "dashed" if attempt.status != "ok" else style
        lines.append(f'  {source} -> n{attempt.node} [label={label}, {attrs}, style="{line_style}"];')
    return lines


def _collapsed(view: TraceView, shown: set[int]) -> list[str]:
    """One "+N more loops" node per drawn loop whose delegated loops were not drawn."""
    hidden_below: dict[int, int] = {}
    anchor_of: dict[int, int] = {}
    for node in view.nodes:  # parents come first, so each hidden loop finds its drawn ancestor
        if node.index in shown or node.parent is None:
            continue
        anchor = node.parent if node.parent in shown else anchor_of.get(node.parent)
        if anchor is None:
            continue
        anchor_of[node.index] = anchor
        hidden_below[anchor] = hidden_below.get(anchor, 0) + 1
    lines = []
    for anchor, count in sorted(hidden_below.items()):
        lines.append(f'  c{anchor} [label={_label(f"+{count} more loops")}, shape=box, style="dotted"];')
        lines.append(f'  n{anchor} -> c{anchor} [style="dotted"];')
    return lines


def handoff_dot(view: TraceView, *, max_nodes: int = DEFAULT_MAX_NODES) -> str:
    """DOT source of the handoff tree; loops beyond `max_nodes` are collapsed (and counted)."""
    shown = _visible(view, max_nodes)
    lines = [
        "digraph handoffs {",
        '  graph [rankdir="LR", fontname="Helvetica"];',
        '  node [shape=box, style="filled", fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    lines.extend(_node_line(view.nodes[i]) for i in sorted(shown))
    for delegation in view.delegations:
        lines.extend(_delegation_edges(view, delegation, shown))
    lines.extend(_collapsed(view, shown))
    incomplete = [n.index for n in view.incomplete_roots if n.index in shown]
    if incomplete:
        orphans = len(view.issues.orphans) + len(view.issues.cycles)
        lines.append(
            f"  incomplete [label={_label('incomplete trace', f'{orphans} span(s) with a missing parent')},"
            ' shape=octagon, style="filled,dashed", fillcolor="#fffde7"];'
        )
        lines.extend(f'  incomplete -> n{i} [style="dashed", arrowhead="none"];' for i in incomplete)
    lines.append("}")
    return "\n".join(lines)
