"""Builders of expected normalized span trees, written from the trace contract (not from the code).

Every builder takes each contract value explicitly and returns the exact node `normalized_tree`
must produce: name, kind, status, every kept attribute, every event, every child. A test compares
a whole trace with `==`, so a missing, extra, renamed or mistyped attribute anywhere fails it.
Absent values (`None`) are left out, as the contract says (cost absent when unpriced, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from janux.tracing import conventions as c

PROVIDER = "janux.scripted"
"""`gen_ai.provider.name` of the scripted test models."""

Node = dict[str, Any]


def usd(value: float) -> float:
    """A cost as the normalizer compares it (12 significant digits)."""
    return float(f"{value:.12g}")


@dataclass(frozen=True)
class Own:
    """One loop's own usage: `janux.turn.*` (cost `None` when no round of the loop was priced)."""

    input: int
    output: int
    cost: float | None
    unpriced: int
    rounds: int

    def attributes(self) -> dict[str, Any]:
        """The `janux.turn.*` attributes."""
        found: dict[str, Any] = {
            c.JANUX_TURN_INPUT_TOKENS: self.input,
            c.JANUX_TURN_OUTPUT_TOKENS: self.output,
            c.JANUX_TURN_UNPRICED_TOKENS: self.unpriced,
            c.JANUX_TURN_ROUNDS: self.rounds,
        }
        if self.cost is not None:
            found[c.JANUX_TURN_COST] = usd(self.cost)
        return found


@dataclass(frozen=True)
class Bill:
    """The whole turn: `janux.bill.*` on the root."""

    input: int
    output: int
    cost: float | None
    unpriced: int

    def attributes(self) -> dict[str, Any]:
        """The `janux.bill.*` attributes."""
        found: dict[str, Any] = {
            c.JANUX_BILL_INPUT_TOKENS: self.input,
            c.JANUX_BILL_OUTPUT_TOKENS: self.output,
            c.JANUX_BILL_UNPRICED_TOKENS: self.unpriced,
        }
        if self.cost is not None:
            found[c.JANUX_BILL_COST] = usd(self.cost)
        return found


def _node(
    name: str,
    kind: str,
    attributes: dict[str, Any],
    *,
    error_type: str | None = None,
    events: list[Node] | None = None,
    children: list[Node] | None = None,
) -> Node:
    if error_type is not None:
        attributes = {**attributes, c.ERROR_TYPE: error_type}
    return {
        "name": name,
        "kind": kind,
        "status": "Error" if error_type is not None else "Unset",
        "attributes": dict(sorted(attributes.items())),
        "events": events or [],
        "children": children or [],
    }


def turn(
    agent: str,
    thread: str,
    *,
    own: Own,
    bill: Bill,
    children: list[Node],
    error_type: str | None = None,
    stop_reason: str | None = None,
    transfer_from: str | None = None,
    path: tuple[str, ...] | None = None,
) -> Node:
    """The root `invoke_agent` span of a turn (`agent` is the holder at the end of the turn; after a
    transfer from `transfer_from`, `path` is every holder in turn: `(transfer_from, agent)` unless
    given)."""
    attributes: dict[str, Any] = {
        c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
        c.GEN_AI_AGENT_NAME: agent,
        c.GEN_AI_CONVERSATION_ID: thread,
        c.JANUX_AGENT_DEPTH: 0,
        **own.attributes(),
        **bill.attributes(),
    }
    if stop_reason is not None:
        attributes[c.JANUX_STOP_REASON] = stop_reason
    if transfer_from is not None:
        attributes[c.JANUX_HANDOFF_FROM] = transfer_from
        attributes[c.JANUX_HANDOFF_TO] = agent
        attributes[c.JANUX_HANDOFF_PATH] = list(path or (transfer_from, agent))
    name = c.invoke_agent_span_name(transfer_from or agent)
    return _node(name, "Internal", attributes, error_type=error_type, children=children)


def attempt(
    agent: str,
    *,
    depth: int,
    number: int,
    own: Own,
    children: list[Node],
    max_turns: int | None = None,
    max_tokens: int | None = None,
    max_ms: int | None = None,
    error_type: str | None = None,
    stop_reason: str | None = None,
) -> Node:
    """One delegation attempt: a child `invoke_agent` span of the delegate tool span."""
    attributes: dict[str, Any] = {
        c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
        c.GEN_AI_AGENT_NAME: agent,
        c.JANUX_AGENT_DEPTH: depth,
        c.JANUX_HANDOFF_ATTEMPT: number,
        **own.attributes(),
    }
    for key, value in (
        (c.JANUX_BUDGET_MAX_TURNS, max_turns),
        (c.JANUX_BUDGET_MAX_TOKENS, max_tokens),
        (c.JANUX_BUDGET_MAX_MS, max_ms),
        (c.JANUX_STOP_REASON, stop_reason),
    ):
        if value is not None:
            attributes[key] = value
    return _node(
        c.invoke_agent_span_name(agent), "Internal", attributes, error_type=error_type, children=children
    )


def chat(
    model: str, agent: str, *, tokens: tuple[int, int], cost: float | None, finish: str = "stop"
) -> Node:
    """A completed model round of `agent`'s loop (`finish` is `stop` or `tool_calls`)."""
    attributes: dict[str, Any] = {
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
        c.GEN_AI_PROVIDER_NAME: PROVIDER,
        c.GEN_AI_REQUEST_MODEL: model,
        c.GEN_AI_RESPONSE_MODEL: model,
        c.GEN_AI_RESPONSE_FINISH_REASONS: [finish],
        c.GEN_AI_AGENT_NAME: agent,
        c.GEN_AI_USAGE_INPUT_TOKENS: tokens[0],
        c.GEN_AI_USAGE_OUTPUT_TOKENS: tokens[1],
    }
    if cost is not None:
        attributes[c.JANUX_ROUND_COST] = usd(cost)
    return _node(c.chat_span_name(model), "Client", attributes)


def failed_chat(model: str, agent: str, error_type: str) -> Node:
    """A round that failed or was cancelled: ERROR, `error.type`, no usage, no response."""
    attributes = {
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
        c.GEN_AI_PROVIDER_NAME: PROVIDER,
        c.GEN_AI_REQUEST_MODEL: model,
        c.GEN_AI_AGENT_NAME: agent,
    }
    return _node(c.chat_span_name(model), "Client", attributes, error_type=error_type)


def function_tool(name: str, call_id: str, *, error_type: str | None = None) -> Node:
    """A plain function tool call."""
    attributes = {
        c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
        c.GEN_AI_TOOL_NAME: name,
        c.GEN_AI_TOOL_CALL_ID: call_id,
        c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_FUNCTION,
    }
    return _node(c.execute_tool_span_name(name), "Internal", attributes, error_type=error_type)


@dataclass(frozen=True)
class Handoff:
    """What HANDOFF_START/END and the tool span say about one delegation or transfer."""

    call_id: str
    kind: str
    tool: str
    target: str
    depth: int
    status: str
    attempts: int
    session_mode: str = c.SESSION_NEW
    error: str | None = None
    deny_reason: str | None = None
    stop_reason: str | None = None
    output: str | None = None

    def _outcome(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in (
            (c.JANUX_HANDOFF_ERROR, self.error),
            (c.JANUX_HANDOFF_DENY_REASON, self.deny_reason),
            (c.JANUX_HANDOFF_STOP_REASON, self.stop_reason),
        ):
            if value is not None:
                found[key] = value
        return found

    def events(self) -> list[Node]:
        """HANDOFF_START then HANDOFF_END (id and duration_ms differ per run and are not compared)."""
        common = {
            c.JANUX_HANDOFF_CALL_ID: self.call_id,
            c.JANUX_HANDOFF_KIND: self.kind,
            c.JANUX_HANDOFF_TOOL: self.tool,
            c.JANUX_HANDOFF_TARGET: self.target,
            c.JANUX_HANDOFF_DEPTH: self.depth,
            c.JANUX_HANDOFF_SESSION_MODE: self.session_mode,
        }
        start = {**common, c.JANUX_HANDOFF_STATUS: c.STATUS_STARTING}
        end = {
            **common,
            c.JANUX_HANDOFF_STATUS: self.status,
            c.JANUX_HANDOFF_ATTEMPTS: self.attempts,
            **self._outcome(),
        }
        if self.output is not None:
            end[c.JANUX_HANDOFF_OUTPUT] = self.output
        return [
            {"name": c.EVENT_HANDOFF_START, "attributes": dict(sorted(start.items()))},
            {"name": c.EVENT_HANDOFF_END, "attributes": dict(sorted(end.items()))},
        ]

    def span_attributes(self) -> dict[str, Any]:
        """The final outcome as the execute_tool span carries it."""
        return {
            c.JANUX_HANDOFF_STATUS: self.status,
            c.JANUX_HANDOFF_ATTEMPTS: self.attempts,
            c.JANUX_HANDOFF_TARGET: self.target,
            **self._outcome(),
        }


def handoff_tool(
    handoff: Handoff, *, children: list[Node] | None = None, error_type: str | None = None
) -> Node:
    """A `delegate.*` or `handoff.*` tool span with its event pair and final outcome."""
    tool_type = c.TOOL_TYPE_DELEGATE if handoff.kind == c.KIND_DELEGATE else c.TOOL_TYPE_HANDOFF
    attributes = {
        c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
        c.GEN_AI_TOOL_NAME: handoff.tool,
        c.GEN_AI_TOOL_CALL_ID: handoff.call_id,
        c.GEN_AI_TOOL_TYPE: tool_type,
        **handoff.span_attributes(),
    }
    return _node(
        c.execute_tool_span_name(handoff.tool),
        "Internal",
        attributes,
        error_type=error_type,
        events=handoff.events(),
        children=children,
    )
