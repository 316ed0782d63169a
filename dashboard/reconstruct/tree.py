"""The handoff tree: agent loops as nodes, delegations and transfers as edges, attempts per edge.

One pass over the spans in parent-before-child order carries, per span, its nearest agent loop
and the nearest tool span below that loop; an agent span's caller and delegating tool fall out
of its parent's two values, so the tree is built in linear time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from janux.dashboard.reconstruct import spanread as sr
from janux.dashboard.reconstruct.model import AgentNode, Attempt, Delegation
from janux.tracing import conventions as c
from janux.tracing.records import attr_int, attr_str
from janux.tracing.spantree.index import NO_PARENT, SpanIndex

LOOSE_AGENT = "(no agent)"
"""Name of the stand-in node holding inference spans that run outside any agent loop."""


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
    """Span position of each delegation's tool span (-1 for direct nesting)."""
    node_of_span: list[int] = field(default_factory=list)
    """Per span: the agent loop it belongs to (-1 when none)."""


class _Builder:
    """State of one pass over the span index."""

    def __init__(self, index: SpanIndex) -> None:
        self.index = index
        self.tree = HandoffTree(node_of_span=[-1] * len(index.spans))
        self.tool_below_agent = [NO_PARENT] * len(index.spans)
        self.delegation_of_tool: dict[int, int] = {}
        self.loose_node = -1

    def run(self) -> HandoffTree:
        index = self.index
        for pos in index.order:
            op = sr.operation(index.spans[pos])
            parent = index.parent[pos]
            if op == c.OP_INVOKE_AGENT:
                self._agent(pos, parent)
                continue
            if parent != NO_PARENT:
                self.tree.node_of_span[pos] = self.tree.node_of_span[parent]
                self.tool_below_agent[pos] = self.tool_below_agent[parent]
            if op == c.OP_EXECUTE_TOOL:
                self.tool_below_agent[pos] = pos
                if sr.is_delegation_tool(index.spans[pos]):
                    self._delegation_for_tool(pos)
            elif sr.is_inference(op):
                self._inference(pos)
        return self.tree

    def _agent(self, pos: int, parent: int) -> None:
        span = self.index.spans[pos]
        tree = self.tree
        caller = tree.node_of_span[parent] if parent != NO_PARENT else -1
        tool = self.tool_below_agent[parent] if parent != NO_PARENT else NO_PARENT
        node = AgentNode(
            index=len(tree.nodes),
            span_id=span.span_id,
            agent=sr.agent_name(span),
            start_ns=span.start_ns,
            duration_ns=span.duration_ns,
            incomplete=self.index.incomplete[pos],
        )
        tree.nodes.append(node)
        tree.node_span.append(pos)
        tree.node_of_span[pos] = node.index
        if caller >= 0 and caller != self.loose_node:
            node.parent = caller
            node.depth = tree.nodes[caller].depth + 1
        if tool != NO_PARENT:
            delegation = self._delegation_for_tool(tool)
        elif node.parent is not None:
            delegation = self._new_delegation(f"direct:{span.span_id}", NO_PARENT, node.parent)
        else:
            return
        node.via = delegation
        tree.delegations[delegation].attempts.append(
            Attempt(number=0, node=node.index, span_id=span.span_id, duration_ms=None, status="ok")
        )

    def _delegation_for_tool(self, tool_pos: int) -> int:
        found = self.delegation_of_tool.get(tool_pos)
        if found is None:
            caller = self.tree.node_of_span[tool_pos]
            key = self.index.spans[tool_pos].span_id
            found = self._new_delegation(key, tool_pos, caller if caller >= 0 else None)
            self.delegation_of_tool[tool_pos] = found
        return found

    def _new_delegation(self, key: str, tool_pos: int, caller: int | None) -> int:
        tree = self.tree
        if caller == self.loose_node:
            caller = None
        delegation = Delegation(
            index=len(tree.delegations),
            key=key,
            tool_span_id=self.index.spans[tool_pos].span_id if tool_pos != NO_PARENT else None,
            parent_node=caller,
            tool="",
            kind="delegate",
            target="",
            status="completed",
        )
        tree.delegations.append(delegation)
        tree.delegation_span.append(tool_pos)
        if caller is not None:
            tree.nodes[caller].delegations.append(delegation.index)
        return delegation.index

    def _inference(self, pos: int) -> None:
        tree = self.tree
        owner = tree.node_of_span[pos]
        if owner < 0:
            owner = self._loose()
            tree.node_of_span[pos] = owner
            if self.index.incomplete[pos]:
                tree.nodes[owner].incomplete = True
        tree.nodes[owner].chat_spans.append(pos)

    def _loose(self) -> int:
        if self.loose_node < 0:
            first = self.index.spans[self.index.order[0]]
            node = AgentNode(
                index=len(self.tree.nodes),
                span_id="",
                agent=LOOSE_AGENT,
                start_ns=first.start_ns,
                duration_ns=0,
                synthetic=True,
            )
            self.tree.nodes.append(node)
            self.tree.node_span.append(NO_PARENT)
            self.loose_node = node.index
        return self.loose_node


def build_tree(index: SpanIndex) -> HandoffTree:
    """Agent loops and delegations of one indexed trace (fields filled by `describe_tree`)."""
    tree = _Builder(index).run()
    describe_tree(index, tree)
    return tree


def describe_tree(index: SpanIndex, tree: HandoffTree) -> None:
    """Fill node and delegation fields from their spans and HANDOFF events."""
    for node, pos in zip(tree.nodes, tree.node_span, strict=True):
        if pos != NO_PARENT:
            _describe_node(node, index, pos)
    for delegation, pos in zip(tree.delegations, tree.delegation_span, strict=True):
        _number_attempts(delegation, tree)
        if pos != NO_PARENT:
            _describe_tool(delegation, index, pos)
        _finish_delegation(delegation, tree)


def _describe_node(node: AgentNode, index: SpanIndex, pos: int) -> None:
    span = index.spans[pos]
    attrs = span.attributes
    node.status = "open" if span.duration_ns < 0 else ("error" if sr.is_error(span) else "ok")
    node.error_type = attr_str(attrs, c.ERROR_TYPE)
    node.stop_reason = attr_str(attrs, c.JANUX_STOP_REASON)
    node.attempt = attr_int(attrs, c.JANUX_HANDOFF_ATTEMPT)
    node.conversation_id = attr_str(attrs, c.GEN_AI_CONVERSATION_ID)
    node.transferred_from = attr_str(attrs, c.JANUX_HANDOFF_FROM)
    node.transferred_to = attr_str(attrs, c.JANUX_HANDOFF_TO)
    node.janux = sr.is_janux_loop(span)


def _number_attempts(delegation: Delegation, tree: HandoffTree) -> None:
    """Attempt numbers from `janux.handoff.attempt`, else sibling order; status from each span."""
    for order, attempt in enumerate(delegation.attempts, start=1):
        node = tree.nodes[attempt.node]
        attempt.number = node.attempt if node.attempt is not None else order
        attempt.status = node.status
        attempt.error_type = node.error_type
        attempt.stop_reason = node.stop_reason
        attempt.duration_ms = None if node.duration_ns < 0 else node.duration_ns / 1e6
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
    if sr.is_error(span) and span.status_message:
        delegation.error = span.status_message
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
