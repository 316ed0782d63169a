"""The handoff tree as Graphviz DOT (Compare's side-by-side picture), every label escaped, large
trees collapsed; labels and the loops drawn follow `handoff_labels`, as the Trace page's chart does.

Labels are always emitted as quoted strings (never HTML-like `<...>` labels), with backslashes,
quotes and control characters escaped, so nothing from a trace can inject DOT or markup.
"""

from __future__ import annotations

from janux.dashboard.views.handoff_labels import (
    DEFAULT_MAX_NODES,
    edge_lines,
    ghost_lines,
    hidden_below,
    node_lines,
    visible_loops,
)
from janux.tracing.analysis.trace_parts import AgentNode, Delegation
from janux.tracing.analysis.trace_view import TraceView

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


def _node_line(node: AgentNode) -> str:
    style = "filled,dashed" if node.status == "open" or node.incomplete else "filled"
    color = "#ffebee" if node.status == "error" else ("#fff3e0" if node.stop_reason else "#e3f2fd")
    return f'  n{node.index} [label={_label(*node_lines(node))}, style="{style}", fillcolor="{color}"];'


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
        lines.append(f"  {ghost} [label={_label(*ghost_lines(delegation))}, shape=note];")
        label = _label(*edge_lines(delegation, None))
        lines.append(f'  {source} -> {ghost} [label={label}, {attrs}, style="{style}"];')
        return lines
    for attempt in delegation.attempts:
        if attempt.node not in shown:
            continue
        label = _label(*edge_lines(delegation, attempt))
        line_style = "dashed" if attempt.status != "ok" else style
        lines.append(f'  {source} -> n{attempt.node} [label={label}, {attrs}, style="{line_style}"];')
    return lines


def _collapsed(view: TraceView, shown: set[int]) -> list[str]:
    """One "+N more loops" node per drawn loop whose delegated loops were not drawn."""
    lines = []
    for anchor, count in sorted(hidden_below(view, shown).items()):
        lines.append(f'  c{anchor} [label={_label(f"+{count} more loops")}, shape=box, style="dotted"];')
        lines.append(f'  n{anchor} -> c{anchor} [style="dotted"];')
    return lines


def handoff_dot(view: TraceView, *, max_nodes: int = DEFAULT_MAX_NODES) -> str:
    """DOT source of the handoff tree; loops beyond `max_nodes` are collapsed (and counted)."""
    shown = visible_loops(view, max_nodes)
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
