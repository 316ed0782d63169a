"""What one span of a Janux trace is to the agent map: an agent loop, a tool call (maybe a
delegation), or neither.

`classify_span` is the only function that reads contract attributes for the map; the embedded
store stores its rows at write time (`agent_links`), the in-memory source and ClickHouse call it
at read time, so every source sees the same facts. It reads traces carrying Janux accounting only:
a trace without it is read whole by `janux.tracing.analysis.readers.structure`, and `agentmap.foreign_rows`
writes its rows (`LinkRow.resolved`).
"""

from __future__ import annotations

import math
from typing import Any, Final, NamedTuple

from janux.tracing import conventions as c
from janux.tracing.analysis.readers.structure import DELEGATING_TOOL_TYPES
from janux.tracing.analysis.spanread import contract_operation, named
from janux.tracing.records import STATUS_ERROR, SpanRecord, attr_float, attr_int, attr_str

ROLE_AGENT: Final = "agent"
"""An `invoke_agent` span: one agent loop."""
ROLE_TOOL: Final = "tool"
"""An `execute_tool` span: a delegation when `delegating`, else a plain tool (its agent children,
if any, still make it a delegation of another runtime)."""



class LinkRow(NamedTuple):
    """The facts of one agent or tool span (the columns of the store's `agent_links` table)."""

    trace_id: str
    """Trace id."""
    span_id: str
    """Span id."""
    parent_span_id: str
    """Parent span id ("" at a root)."""
    role: str
    """`ROLE_AGENT` or `ROLE_TOOL`."""
    start_ns: int
    """Span start."""
    duration_ns: int
    """Span duration (negative while open)."""
    name: str
    """Agent name (agent) or tool name (tool)."""
    status: str
    """Agent: `ok`, `error` or `open`. Tool: the final recorded handoff status ("" when none)."""
    error_type: str | None
    """`error.type` of the span."""
    stop_reason: str | None
    """Agent: `janux.stop_reason`. Tool: `janux.handoff.stop_reason`."""
    attempt: int | None
    """Agent: `janux.handoff.attempt`. Tool: `janux.handoff.attempts` as recorded."""
    janux: bool
    """Agent: the loop carries janux accounting or depth. Tool: janux handoff fields were recorded."""
    input_tokens: int | None
    """Agent: `janux.turn.input_tokens` (None when the loop has no `janux.turn.*`)."""
    output_tokens: int | None
    """Agent: `janux.turn.output_tokens`."""
    cost: float | None
    """Agent: `janux.turn.cost`."""
    unpriced_tokens: int | None
    """Agent: `janux.turn.unpriced_tokens`."""
    has_turn: bool
    """Agent: any `janux.turn.*` usage attribute is present (own usage is recorded, not summed)."""
    transfer_from: str | None
    """Agent: `janux.handoff.from` (a turn a transfer handed over)."""
    transfer_to: str | None
    """Agent: `janux.handoff.to`."""
    delegating: bool
    """Tool: a `delegate`/`handoff` tool, or one carrying HANDOFF events."""
    kind: str
    """Tool: `delegate` or `transfer`."""
    target: str
    """Tool: `janux.handoff.target` ("" when not recorded)."""
    deny_reason: str | None
    """Tool: the policy rule that denied it."""
    error: str | None
    """Tool: `janux.handoff.error`, else the status message of an ERROR span."""
    handoff_ms: float | None
    """Tool: `janux.handoff.duration_ms` (None: use the span's duration)."""
    has_start: bool
    """Tool: a HANDOFF_START event was seen."""
    has_end: bool
    """Tool: a HANDOFF_END event was seen."""
    via: str
    """Resolved agent rows: the span id of the edge row it is an attempt of ("" when none)."""
    resolved: bool
    """True for the rows of a trace without Janux accounting, read whole by
    `analysis.readers.structure` (`agentmap.foreign_rows`): an agent row's `parent_span_id` is its
    parent loop, an edge row's (role tool) its calling loop, and an agent row's own usage is in it."""


def _str(attrs: dict[str, Any], key: str) -> str | None:
    """`attr_str` with the common cases (absent, a str) first: the write path calls this per span."""
    value = attrs.get(key)
    if value is None or type(value) is str:
        return value
    return attr_str(attrs, key)


def _int(attrs: dict[str, Any], key: str) -> int | None:
    """`attr_int` with the common cases (absent, an int) first."""
    value = attrs.get(key)
    if value is None or type(value) is int:
        return value
    return attr_int(attrs, key)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _agent_row(span: SpanRecord) -> LinkRow:
    attrs = span.attributes
    status = span.status
    has_turn = any(key in attrs for key in c.TURN_USAGE_KEYS)
    return LinkRow(
        span.trace_id, span.span_id, span.parent_span_id, ROLE_AGENT, span.start_ns, span.duration_ns,
        named(span, c.GEN_AI_AGENT_NAME), status, _str(attrs, c.ERROR_TYPE),
        _str(attrs, c.JANUX_STOP_REASON), _int(attrs, c.JANUX_HANDOFF_ATTEMPT),
        c.JANUX_AGENT_DEPTH in attrs or has_turn,
        _int(attrs, c.JANUX_TURN_INPUT_TOKENS), _int(attrs, c.JANUX_TURN_OUTPUT_TOKENS),
        _finite(attr_float(attrs, c.JANUX_TURN_COST)), _int(attrs, c.JANUX_TURN_UNPRICED_TOKENS),
        has_turn, _str(attrs, c.JANUX_HANDOFF_FROM), _str(attrs, c.JANUX_HANDOFF_TO),
        False, c.KIND_DELEGATE, "", None, None, None, False, False, "", False,
    )  # fmt: skip


class _Handoff:
    """`janux.handoff.*` fields of a tool span, the span attributes first, then its events (which win)."""

    __slots__ = ("attempts", "deny", "error", "kind", "ms", "recorded", "status", "stop", "target", "tool")

    def __init__(self) -> None:
        self.status = ""
        self.kind = ""
        self.target = ""
        self.tool = ""
        self.deny: str | None = None
        self.stop: str | None = None
        self.error: str | None = None
        self.attempts: int | None = None
        self.ms: float | None = None
        self.recorded = False

    def read(self, attrs: dict[str, Any]) -> None:
        status = _str(attrs, c.JANUX_HANDOFF_STATUS)
        if status and status != c.STATUS_STARTING:
            self.status = status
        kind = _str(attrs, c.JANUX_HANDOFF_KIND)
        if kind in (c.KIND_DELEGATE, c.KIND_TRANSFER):
            self.kind = kind
        self.target = _str(attrs, c.JANUX_HANDOFF_TARGET) or self.target
        self.tool = _str(attrs, c.JANUX_HANDOFF_TOOL) or self.tool
        self.deny = _str(attrs, c.JANUX_HANDOFF_DENY_REASON) or self.deny
        self.stop = _str(attrs, c.JANUX_HANDOFF_STOP_REASON) or self.stop
        self.error = _str(attrs, c.JANUX_HANDOFF_ERROR) or self.error
        attempts = _int(attrs, c.JANUX_HANDOFF_ATTEMPTS)
        self.attempts = attempts if attempts is not None else self.attempts
        ms = _finite(attr_float(attrs, c.JANUX_HANDOFF_DURATION_MS))
        self.ms = ms if ms is not None else self.ms
        self.recorded = self.recorded or status is not None or kind is not None


def _tool_row(span: SpanRecord) -> LinkRow:
    attrs = span.attributes
    handoff = _Handoff()
    if span.status_code == STATUS_ERROR and span.status_message:
        handoff.error = span.status_message
    handoff.read(attrs)
    has_start = has_end = False
    for event in span.events:
        if event.name == c.EVENT_HANDOFF_START:
            has_start = True
            handoff.read(event.attributes)
        elif event.name == c.EVENT_HANDOFF_END:
            has_end = True
            handoff.read(event.attributes)
    tool_type = attr_str(attrs, c.GEN_AI_TOOL_TYPE)
    delegating = tool_type in DELEGATING_TOOL_TYPES or has_start or has_end
    kind = handoff.kind or (c.KIND_TRANSFER if tool_type == c.TOOL_TYPE_HANDOFF else c.KIND_DELEGATE)
    return LinkRow(
        span.trace_id, span.span_id, span.parent_span_id, ROLE_TOOL, span.start_ns, span.duration_ns,
        handoff.tool or named(span, c.GEN_AI_TOOL_NAME), handoff.status, attr_str(attrs, c.ERROR_TYPE),
        handoff.stop, handoff.attempts, handoff.recorded, None, None, None, None, False, None, None,
        delegating, kind, handoff.target, handoff.deny, handoff.error, handoff.ms, has_start, has_end, "",
        False,
    )  # fmt: skip


def classify_span(span: SpanRecord) -> LinkRow | None:
    """The link row of an agent loop or tool span; None for every other span."""
    op = contract_operation(span)
    if op == c.OP_INVOKE_AGENT:
        return _agent_row(span)
    if op == c.OP_EXECUTE_TOOL:
        return _tool_row(span)
    return None
