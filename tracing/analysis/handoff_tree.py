"""The handoff tree: agent loops as nodes, delegations and transfers as edges, attempts per edge.

Which spans are loops and which edges join them is read by `janux.tracing.analysis.readers.structure` (the one
structural reading every source and the CLI share, for Janux's own traces and every other
convention); this module turns it into the dashboard's nodes and delegations and fills their
details from the spans and HANDOFF events. A trace without Janux accounting records no final
status: its delegations' status and error are the facts' too, the ones the trace list counts.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from janux.tracing import conventions as c
from janux.tracing.analysis import spanread as sr
from janux.tracing.analysis.readers.spans import error_text
from janux.tracing.analysis.readers.structure import LOOSE_AGENT as LOOSE_AGENT
from janux.tracing.analysis.readers.structure import (
    RETRIED_ERROR,
    Structure,
    coverage_of,
    edge_status,
    is_janux_trace,
    segment_time,
    structure,
)
from janux.tracing.analysis.span_index import NO_PARENT, SpanIndex
from janux.tracing.analysis.trace_parts import AgentNode, Attempt, Delegation
from janux.tracing.records import attr_int, attr_str


@dataclass(slots=True)
class HandoffTree:
    """Nodes and edges of the handoff tree, plus the span position of each."""

    nodes: list[AgentNode] = field(default_factory=list)
    """Agent loops in depth-first start order (parents before children)."""
    delegations: list[Delegation] = field(default_factory=list)
    """Delegations and transfers in depth-first start order."""
    node_span: list[int] = field(default_factory=list)
    """Span position of each node (-1 for the synthetic node)."""
    delegation_span: list[int] = field(default_factory=list)
    """Span position of each delegation's tool (or handoff) span (-1 when it has none)."""
    node_of_span: list[int] = field(default_factory=list)
    """Per span: the agent loop it belongs to (-1 when none)."""
    coverage: list[str] = field(default_factory=list)
    """What could not be read about the structure and usage, in words (`structure.coverage_of`)."""


def _nodes(index: SpanIndex, s: Structure, tree: HandoffTree) -> None:
    for number, loop in enumerate(s.loops):
        if loop.pos == NO_PARENT:  # the stand-in holding model calls outside any loop
            start = index.spans[index.order[0]].start_ns
            broken = any(index.incomplete[p] for p in loop.calls)
            node = AgentNode(index=number, span_id="", agent=loop.name, start_ns=start, duration_ns=0,
                             synthetic=True, incomplete=broken)  # fmt: skip
        else:
            span = index.spans[loop.pos]
            start, duration = segment_time(span, loop)
            node = AgentNode(index=number, span_id=span.span_id, agent=loop.name, start_ns=start,
                             duration_ns=duration, incomplete=index.incomplete[loop.pos],
                             segment=loop.segment, segmented=loop.segmented)  # fmt: skip
        node.parent = loop.parent
        node.depth = 0 if loop.parent is None else tree.nodes[loop.parent].depth + 1
        node.via = loop.via
        node.chat_spans = loop.calls  # the structure is not kept: no copy
        node.delegations = loop.edges
        tree.nodes.append(node)
        tree.node_span.append(loop.pos)
    _link_segments(tree)


def _delegations(index: SpanIndex, s: Structure, tree: HandoffTree) -> None:
    for number, edge in enumerate(s.edges):
        if edge.tool_pos != NO_PARENT:
            key = index.spans[edge.tool_pos].span_id
        elif edge.attempts:
            prefix = "transfer" if edge.kind == "transfer" else "direct"
            key = f"{prefix}:{tree.nodes[edge.attempts[0]].span_id}"
            if edge.shares_run and edge.caller is not None:  # another edge has that key
                key += f":{tree.nodes[edge.caller].span_id}"
        else:
            key = f"transfer:{number}"
        delegation = Delegation(
            index=number, key=key,
            tool_span_id=index.spans[edge.tool_pos].span_id if edge.tool_pos != NO_PARENT else None,
            parent_node=edge.caller, tool="", kind=edge.kind, target=edge.target, status="completed",
            shares_run=edge.shares_run, found=edge.found,
        )  # fmt: skip
        delegation.attempts = [
            Attempt(number=0, node=node, span_id=tree.nodes[node].span_id, duration_ms=None, status="ok")
            for node in edge.attempts
        ]
        tree.delegations.append(delegation)
        tree.delegation_span.append(edge.tool_pos)


def build_tree(index: SpanIndex) -> HandoffTree:
    """Agent loops and delegations of one indexed trace, with their fields filled."""
    s = structure(index)
    janux = is_janux_trace(index.spans)
    tree = HandoffTree(node_of_span=list(s.loop_of), coverage=coverage_of(s, janux))
    _nodes(index, s, tree)
    _delegations(index, s, tree)
    describe_tree(index, tree)
    if not janux:
        _outcomes_from_facts(s, tree)
    return tree


def _outcomes_from_facts(s: Structure, tree: HandoffTree) -> None:
    """Status and error of each delegation of a trace without Janux accounting, as its facts say
    (the error text kept from the span when the facts have none)."""
    for delegation, edge in zip(tree.delegations, s.edges, strict=True):
        status, error = edge_status(s, edge)
        delegation.status = status
        delegation.error = error if error is not None else delegation.error
        for attempt in delegation.attempts:  # an attempt the library re-ran inside itself failed
            if s.loops[attempt.node].retried and attempt.status == "ok":
                attempt.status, attempt.error = "error", RETRIED_ERROR
                tree.nodes[attempt.node].status = "error"


def describe_tree(index: SpanIndex, tree: HandoffTree) -> None:
    """Fill node and delegation fields from their spans and HANDOFF events."""
    for node, pos in zip(tree.nodes, tree.node_span, strict=True):
        if pos != NO_PARENT:
            _describe_node(node, index, pos)
    for delegation, pos in zip(tree.delegations, tree.delegation_span, strict=True):
        _number_attempts(delegation, tree, index)
        if pos != NO_PARENT:
            _describe_tool(delegation, index, pos)
        _finish_delegation(delegation, tree)


def _describe_node(node: AgentNode, index: SpanIndex, pos: int) -> None:
    span = index.spans[pos]
    attrs = span.attributes
    node.janux = sr.is_janux_loop(span)
    node.attempt = attr_int(attrs, c.JANUX_HANDOFF_ATTEMPT)
    node.conversation_id = attr_str(attrs, c.GEN_AI_CONVERSATION_ID)
    if node.segmented:  # `_link_segments` named the agents before and after it
        if node.transferred_to is not None:
            return  # it ended by handing the conversation over: the span's outcome is a later segment's
    else:
        node.transferred_from = attr_str(attrs, c.JANUX_HANDOFF_FROM)
        node.transferred_to = attr_str(attrs, c.JANUX_HANDOFF_TO)
    node.status = "open" if node.duration_ns < 0 else ("error" if sr.is_error(span) else "ok")
    node.error_type = attr_str(attrs, c.ERROR_TYPE)
    node.stop_reason = attr_str(attrs, c.JANUX_STOP_REASON)


def _link_segments(tree: HandoffTree) -> None:
    """Name, on each agent segment of a span, the agent it took the conversation from and the one
    it handed it to (None at the ends)."""
    by_span: dict[str, list[AgentNode]] = {}
    for node in tree.nodes:
        if node.segmented:
            by_span.setdefault(node.span_id, []).append(node)
    for segments in by_span.values():
        segments.sort(key=lambda n: n.segment)
        for before, after in itertools.pairwise(segments):
            before.transferred_to = after.agent
            after.transferred_from = before.agent


def _number_attempts(delegation: Delegation, tree: HandoffTree, index: SpanIndex) -> None:
    """Attempt numbers from `janux.handoff.attempt`, else sibling order; status and error from each
    span."""
    for order, attempt in enumerate(delegation.attempts, start=1):
        node = tree.nodes[attempt.node]
        attempt.number = node.attempt if node.attempt is not None else order
        attempt.status = node.status
        attempt.error_type = node.error_type
        attempt.stop_reason = node.stop_reason
        attempt.duration_ms = None if node.duration_ns < 0 else node.duration_ns / 1e6
        pos = tree.node_span[attempt.node]
        if attempt.status == "error" and pos >= 0:
            attempt.error = error_text(index.spans[pos])[0]
    delegation.attempts.sort(key=lambda a: (a.number, tree.nodes[a.node].start_ns))


def _describe_tool(delegation: Delegation, index: SpanIndex, pos: int) -> None:
    """Fields from the tool span attributes, then from its HANDOFF events (which win)."""
    span = index.spans[pos]
    attrs = span.attributes
    delegation.tool = sr.tool_name(span)
    delegation.start_ns = span.start_ns
    delegation.duration_ms = sr.duration_ms(span)
    if attr_str(attrs, c.GEN_AI_TOOL_TYPE) == c.TOOL_TYPE_HANDOFF:
        delegation.kind = "transfer"
    delegation.task = attr_str(attrs, c.GEN_AI_TOOL_CALL_ARGUMENTS)
    delegation.error_type = attr_str(attrs, c.ERROR_TYPE)
    if sr.is_error(span):
        delegation.error = error_text(span)[0]
    _read_handoff_fields(delegation, attrs)
    for event in span.events:
        if event.name == c.EVENT_HANDOFF_START:
            delegation.has_start = True
            _read_handoff_fields(delegation, event.attributes)
        elif event.name == c.EVENT_HANDOFF_END:
            delegation.has_end = True
            _read_handoff_fields(delegation, event.attributes)


def _read_handoff_fields(delegation: Delegation, attrs: dict[str, object]) -> None:
    """Copy every `janux.handoff.*` field present in `attrs` onto the delegation."""
    status = attr_str(attrs, c.JANUX_HANDOFF_STATUS)
    if status and status != c.STATUS_STARTING:
        delegation.status = status
    kind = attr_str(attrs, c.JANUX_HANDOFF_KIND)
    if kind in (c.KIND_DELEGATE, c.KIND_TRANSFER):
        delegation.kind = "transfer" if kind == c.KIND_TRANSFER else "delegate"
    for key, name in _TEXT_FIELDS:
        value = attr_str(attrs, key)
        if value is not None:
            setattr(delegation, name, value)
    attempts = attr_int(attrs, c.JANUX_HANDOFF_ATTEMPTS)
    if attempts is not None:
        delegation.recorded_attempts = attempts
    depth = attr_int(attrs, c.JANUX_HANDOFF_DEPTH)
    if depth is not None:
        delegation.depth = depth
    if c.JANUX_HANDOFF_DURATION_MS in attrs:
        delegation.duration_ms = _float(attrs.get(c.JANUX_HANDOFF_DURATION_MS), delegation.duration_ms)
    if status is not None or kind is not None:
        delegation.recorded = True


_TEXT_FIELDS = (
    (c.JANUX_HANDOFF_TARGET, "target"),
    (c.JANUX_HANDOFF_TOOL, "tool"),
    (c.JANUX_HANDOFF_ERROR, "error"),
    (c.JANUX_HANDOFF_DENY_REASON, "deny_reason"),
    (c.JANUX_HANDOFF_STOP_REASON, "stop_reason"),
    (c.JANUX_HANDOFF_ID, "handoff_id"),
    (c.JANUX_HANDOFF_SESSION_MODE, "session_mode"),
    (c.JANUX_HANDOFF_OUTPUT, "output"),
)


def _float(value: object, default: float | None) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default


def _caller(delegation: Delegation, tree: HandoffTree) -> str | None:
    if delegation.parent_node is None:
        return None
    loop = tree.nodes[delegation.parent_node]
    if delegation.kind == "transfer" and loop.transferred_from and loop.transferred_to == delegation.target:
        return loop.transferred_from
    return loop.agent


def _finish_delegation(delegation: Delegation, tree: HandoffTree) -> None:
    """Fill what the tool span did not say: target, start, caller, status for other runtimes."""
    first = tree.nodes[delegation.attempts[0].node] if delegation.attempts else None
    if not delegation.target:
        delegation.target = first.agent if first else sr.target_from_tool(delegation.tool)
    if not delegation.tool:
        delegation.tool = delegation.target
    delegation.caller = _caller(delegation, tree)
    if first is not None and (not delegation.start_ns or delegation.tool_span_id is None):
        delegation.start_ns = first.start_ns
    if delegation.has_start and not delegation.has_end:
        delegation.status = "open"
    elif not delegation.recorded and delegation.attempts:
        delegation.status = _inferred_status(delegation)
    if delegation.error_type is None:
        failed = [a for a in delegation.attempts if a.error_type]
        if failed:
            delegation.error_type = failed[-1].error_type
    if delegation.duration_ms is None and first is not None and delegation.tool_span_id is None:
        delegation.duration_ms = first.duration_ns / 1e6 if first.duration_ns >= 0 else None


def _inferred_status(delegation: Delegation) -> str:
    """Status of another runtime's delegation: the last attempt decides."""
    last = delegation.attempts[-1].status
    if last == "open":
        return "open"
    return c.STATUS_FAILED if last == "error" else c.STATUS_COMPLETED
