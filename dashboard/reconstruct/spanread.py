"""Read contract fields off single spans: operation, names, usage. No tree logic here.

Other runtimes' conventions are read by `janux.tracing.foreign` (the one mapping every source
shares); this module adds the Janux contract's own fields.
"""

from __future__ import annotations

import math
from typing import Any

from janux.dashboard.reconstruct.model import Usage
from janux.tracing import conventions as c
from janux.tracing.foreign import spans as foreign
from janux.tracing.records import STATUS_ERROR, SpanRecord, attr_float, attr_int, attr_str

_KNOWN_OPS = frozenset({c.OP_INVOKE_AGENT, c.OP_CHAT, c.OP_EXECUTE_TOOL}) | c.INFERENCE_OPERATIONS
_DELEGATING_TOOL_TYPES = frozenset({c.TOOL_TYPE_DELEGATE, c.TOOL_TYPE_HANDOFF})
_HANDOFF_EVENTS = frozenset({c.EVENT_HANDOFF_START, c.EVENT_HANDOFF_END})
_TOOL_PREFIXES = ("delegate.", "handoff.", "transfer_to_")


_OPERATION_OF_ROLE = {"agent": c.OP_INVOKE_AGENT, "inference": c.OP_CHAT, "tool": c.OP_EXECUTE_TOOL}


def operation(span: SpanRecord) -> str:
    """`gen_ai.operation.name`, else the GenAI operation of the role another convention declares
    (an OpenInference LLM span reads as `chat`), else the first word of the span name when it is one."""
    op = span.attributes.get(c.GEN_AI_OPERATION_NAME)
    if isinstance(op, str) and op:
        return op
    role = foreign.classify(span.attributes, span.name)[0]
    if role in _OPERATION_OF_ROLE:
        return _OPERATION_OF_ROLE[role]
    head = span.name.split(" ", 1)[0]
    return head if head in _KNOWN_OPS else ""


def is_inference(op: str) -> bool:
    """True for model-inference operations (the only spans whose usage is summed)."""
    return op in c.READ_INFERENCE_OPERATIONS


def _named(span: SpanRecord, key: str) -> str:
    """The attribute `key`, else the span name without its operation word."""
    name = attr_str(span.attributes, key)
    if name:
        return name
    parts = span.name.split(" ", 1)
    return parts[1] if len(parts) == 2 else span.name


def agent_name(span: SpanRecord) -> str:
    """`gen_ai.agent.name`, else the span name without its operation word."""
    return _named(span, c.GEN_AI_AGENT_NAME)


def tool_name(span: SpanRecord) -> str:
    """The tool's name under any convention read (`gen_ai.tool.name`, `tool.name`, ...; a handoff
    span: `handoff to {agent}`), else the span name without its operation word."""
    name = span.attributes.get(c.GEN_AI_TOOL_NAME)
    if isinstance(name, str) and name:
        return name
    return foreign.read_span(span).tool or _named(span, c.GEN_AI_TOOL_NAME)


def target_from_tool(tool: str) -> str:
    """Best guess of a target name from a tool name (`delegate.researcher` -> `researcher`)."""
    for prefix in _TOOL_PREFIXES:
        if tool.startswith(prefix) and len(tool) > len(prefix):
            return tool[len(prefix) :]
    return tool


def is_delegation_tool(span: SpanRecord) -> bool:
    """True for `delegate`/`handoff` tool spans, or tool spans carrying HANDOFF events."""
    if attr_str(span.attributes, c.GEN_AI_TOOL_TYPE) in _DELEGATING_TOOL_TYPES:
        return True
    return any(event.name in _HANDOFF_EVENTS for event in span.events)


def is_janux_loop(span: SpanRecord) -> bool:
    """True when an agent span carries janux accounting or depth."""
    attrs = span.attributes
    return c.JANUX_AGENT_DEPTH in attrs or any(key in attrs for key in c.TURN_USAGE_KEYS)


def has_bill(span: SpanRecord) -> bool:
    """True when the span carries `janux.bill.*`."""
    return any(key in span.attributes for key in c.BILL_KEYS)


def is_error(span: SpanRecord) -> bool:
    """True when the span ended with status ERROR."""
    return span.status_code == STATUS_ERROR


def span_status(span: SpanRecord) -> str:
    """`open` (no end yet), `error` or `ok`."""
    if span.duration_ns < 0:
        return "open"
    return "error" if is_error(span) else "ok"


def duration_ms(span: SpanRecord) -> float | None:
    """Duration in ms, None while the span has no end."""
    return None if span.duration_ns < 0 else span.duration_ns / 1e6


def _usage_from(attrs: dict[str, Any], keys: tuple[str, str, str, str]) -> Usage:
    """Usage from four attributes in input/output/cost/unpriced order."""
    return Usage(
        input_tokens=attr_int(attrs, keys[0]) or 0,
        output_tokens=attr_int(attrs, keys[1]) or 0,
        cost=attr_float(attrs, keys[2]),
        unpriced_tokens=attr_int(attrs, keys[3]) or 0,
    )


def estimate(attrs: dict[str, Any], key: str) -> float | None:
    """A recorded cost estimate (`janux.*.cost_estimate`): a finite, non-negative double, else None
    (a damaged estimate is no estimate: its tokens stay unpriced)."""
    value = attr_float(attrs, key)
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def turn_usage(span: SpanRecord) -> Usage:
    """The loop's own usage exactly as recorded in `janux.turn.*` (its `unpriced_tokens` still
    include the estimated rounds), with `janux.turn.cost_estimate` as the estimated cost."""
    usage = _usage_from(span.attributes, c.TURN_USAGE_KEYS)
    usage.rounds = attr_int(span.attributes, c.JANUX_TURN_ROUNDS) or 0
    usage.estimated_cost = estimate(span.attributes, c.JANUX_TURN_COST_ESTIMATE)
    return usage


def bill_usage(span: SpanRecord) -> Usage:
    """The whole turn's usage exactly as recorded in `janux.bill.*`, with `janux.bill.cost_estimate`
    as the estimated cost (its `unpriced_tokens` still include the estimated rounds)."""
    usage = _usage_from(span.attributes, c.BILL_KEYS)
    usage.estimated_cost = estimate(span.attributes, c.JANUX_BILL_COST_ESTIMATE)
    return usage


PRICE_SOURCE_LIMIT = 120
"""Longest price-source label kept from a trace (a label, not content)."""


def round_cost(span: SpanRecord) -> float | None:
    """`janux.round.cost` of a round, None when it has none."""
    return attr_float(span.attributes, c.JANUX_ROUND_COST)


def round_estimate(span: SpanRecord) -> tuple[float, str] | None:
    """The estimate a writer recorded for a round without a cost (`janux.round.cost_estimate`) and
    its price source (`janux.price.source`, `unnamed price table` when absent); None when none."""
    value = estimate(span.attributes, c.JANUX_ROUND_COST_ESTIMATE)
    if value is None:
        return None
    source = attr_str(span.attributes, c.JANUX_PRICE_SOURCE) or "unnamed price table"
    return value, source[:PRICE_SOURCE_LIMIT]


def round_usage(span: SpanRecord) -> tuple[foreign.UsageState, int, int]:
    """(state, input, output) of one inference span under any convention read (0 when not read)."""
    state, tokens_in, tokens_out = foreign.read_usage(span.attributes, span.status_code)
    return state, tokens_in or 0, tokens_out or 0


def round_tokens(span: SpanRecord) -> tuple[int, int]:
    """Input and output tokens of one inference span (0 where none was read)."""
    _, tokens_in, tokens_out = round_usage(span)
    return tokens_in, tokens_out


def round_model(span: SpanRecord) -> str:
    """Response model, else request model (`llm.model_name` for OpenInference), else ""."""
    attrs = span.attributes
    return attr_str(attrs, c.GEN_AI_RESPONSE_MODEL) or foreign.first_text(attrs, foreign.MODEL_KEYS)


def round_provider(span: SpanRecord) -> str:
    """`gen_ai.provider.name`, else `gen_ai.system`, `llm.provider` or `llm.system`, else ""."""
    return foreign.first_text(span.attributes, foreign.PROVIDER_KEYS)


def has_agent_usage(span: SpanRecord) -> bool:
    """True when an agent span carries usage of its own (`gen_ai.usage.*`, which contract invariant 3
    forbids; other runtimes' accumulated `gen_ai.aggregated_usage.*` or `llm.token_count.*`)."""
    return any("token" in key.lower() and not key.startswith("janux.") for key in span.attributes)


def agent_usage_tokens(span: SpanRecord) -> tuple[int, int]:
    """The usage an agent span reports for itself (any name read; aggregated names too)."""
    attrs = span.attributes
    aggregated = {
        key.replace(c.GEN_AI_AGGREGATED_USAGE_PREFIX, "gen_ai.usage.", 1): value
        for key, value in attrs.items()
        if key.startswith(c.GEN_AI_AGGREGATED_USAGE_PREFIX)
    }
    _, tokens_in, tokens_out = foreign.read_usage({**attrs, **aggregated}, span.status_code)
    return tokens_in or 0, tokens_out or 0
