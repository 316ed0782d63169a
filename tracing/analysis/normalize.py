"""A deterministic, exporter-independent view of a span tree, for comparing traces.

`normalized_tree` keeps what the trace contract promises (names, kinds, statuses, `error.type`,
the contract attributes, event names and attributes) and drops what differs between two runs of
the same workload or between two exporters (ids, timestamps, durations, handoff ids). Values are
coerced by key (ints, floats, string lists, strings), so a typed in-memory export, a decoded OTLP
file and a ClickHouse row (all strings) normalize to the same structure. The tree itself comes
from `build_index`, the dashboard's span index, so both sides read one structure.

Bad input never raises: spans whose parent is missing become roots, duplicate span ids are kept
once, and a parent cycle is cut at its earliest span.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from janux.tracing import conventions as c
from janux.tracing.analysis.span_index import build_index
from janux.tracing.records import Attributes, SpanRecord, attr_float, attr_int, attr_list, attr_str

INT_KEYS: frozenset[str] = frozenset(
    {
        c.GEN_AI_USAGE_INPUT_TOKENS,
        c.GEN_AI_USAGE_OUTPUT_TOKENS,
        c.JANUX_TURN_INPUT_TOKENS,
        c.JANUX_TURN_OUTPUT_TOKENS,
        c.JANUX_TURN_UNPRICED_TOKENS,
        c.JANUX_TURN_ROUNDS,
        c.JANUX_BILL_INPUT_TOKENS,
        c.JANUX_BILL_OUTPUT_TOKENS,
        c.JANUX_BILL_UNPRICED_TOKENS,
        c.JANUX_AGENT_DEPTH,
        c.JANUX_HANDOFF_ATTEMPT,
        c.JANUX_HANDOFF_ATTEMPTS,
        c.JANUX_HANDOFF_DEPTH,
        c.JANUX_BUDGET_MAX_TURNS,
        c.JANUX_BUDGET_MAX_TOKENS,
        c.JANUX_BUDGET_MAX_MS,
    }
)
"""Contract attributes compared as integers."""

FLOAT_KEYS: frozenset[str] = frozenset(
    {c.JANUX_ROUND_COST, c.JANUX_TURN_COST, c.JANUX_BILL_COST, *c.ESTIMATE_KEYS}
)
"""Contract attributes compared as floats (12 significant digits)."""

LIST_KEYS: frozenset[str] = frozenset({c.GEN_AI_RESPONSE_FINISH_REASONS, c.JANUX_HANDOFF_PATH})
"""Contract attributes compared as lists of strings."""

SPAN_KEYS: frozenset[str] = (
    INT_KEYS
    | FLOAT_KEYS
    | LIST_KEYS
    | frozenset(
        {
            c.GEN_AI_OPERATION_NAME,
            c.GEN_AI_PROVIDER_NAME,
            c.GEN_AI_REQUEST_MODEL,
            c.GEN_AI_RESPONSE_MODEL,
            c.GEN_AI_AGENT_NAME,
            c.GEN_AI_CONVERSATION_ID,
            c.GEN_AI_TOOL_NAME,
            c.GEN_AI_TOOL_CALL_ID,
            c.GEN_AI_TOOL_TYPE,
            c.ERROR_TYPE,
            c.JANUX_STOP_REASON,
            c.JANUX_DENY_REASON,
            c.JANUX_HANDOFF_TO,
            c.JANUX_HANDOFF_FROM,
            c.JANUX_HANDOFF_STATUS,
            c.JANUX_HANDOFF_TARGET,
            c.JANUX_HANDOFF_ERROR,
            c.JANUX_HANDOFF_DENY_REASON,
            c.JANUX_HANDOFF_STOP_REASON,
        }
    )
)
"""Span attributes a normalized node keeps (contract attributes that are stable across runs)."""

EVENT_DROPPED_KEYS: frozenset[str] = frozenset({c.JANUX_HANDOFF_ID, c.JANUX_HANDOFF_DURATION_MS})
"""Event attributes that differ between runs and are dropped; every other event attribute is kept."""


def normalized_value(key: str, value: Any) -> Any:
    """`value` of attribute `key` in its comparable form (typed by key, not by source)."""
    holder: Attributes = {key: value}
    if key in INT_KEYS:
        number = attr_int(holder, key)
        return number if number is not None else attr_str(holder, key)
    if key in FLOAT_KEYS:
        real = attr_float(holder, key)
        return float(f"{real:.12g}") if real is not None else attr_str(holder, key)
    if key in LIST_KEYS:
        items = attr_list(holder, key) or []
        return [str(item) for item in items]
    return attr_str(holder, key)


def normalized_attributes(attributes: Attributes, keep: Collection[str] | None) -> dict[str, Any]:
    """Attributes restricted to `keep` (all when `None`), coerced and sorted by key."""
    return {
        key: normalized_value(key, attributes[key])
        for key in sorted(attributes)
        if (keep is None or key in keep) and attributes[key] is not None
    }


def normalized_span(span: SpanRecord, keep: Collection[str] = SPAN_KEYS) -> dict[str, Any]:
    """One node without children: name, kind, status, kept attributes and events."""
    return {
        "name": span.name,
        "kind": span.kind,
        "status": span.status_code,
        "attributes": normalized_attributes(span.attributes, keep),
        "events": [
            {
                "name": event.name,
                "attributes": {
                    key: value
                    for key, value in normalized_attributes(event.attributes, None).items()
                    if key not in EVENT_DROPPED_KEYS
                },
            }
            for event in span.events
        ],
    }


def _order_key(span: SpanRecord) -> tuple[int, str, str]:
    return (span.start_ns, span.name, attr_str(span.attributes, c.GEN_AI_TOOL_CALL_ID) or "")


def normalized_tree(spans: Iterable[SpanRecord], keep: Collection[str] = SPAN_KEYS) -> list[dict[str, Any]]:
    """Nested nodes (`children` lists) of `spans`, roots first, siblings in start order.

    The tree is the dashboard's (`build_index`): duplicates kept once; real roots come first, then
    orphans and spans whose parent link closed a cycle. Siblings are ordered by start time, name and tool
    call id rather than span id, so two runs of the same workload compare equal.
    """
    index = build_index(spans)
    records = index.spans

    def ordered(positions: Iterable[int]) -> list[int]:
        return sorted(positions, key=lambda i: _order_key(records[i]))

    roots = [top for top in index.tops if not records[top].parent_span_id]
    broken = [top for top in index.tops if records[top].parent_span_id]
    tree: list[dict[str, Any]] = []
    for top in ordered(roots) + ordered(broken):
        root = normalized_span(records[top], keep)
        tree.append(root)
        # Iterative, so a very deep chain cannot exhaust the stack.
        stack: list[tuple[int, dict[str, Any]]] = [(top, root)]
        while stack:
            position, node = stack.pop()
            node["children"] = []
            for kid in ordered(index.children[position]):
                kid_node = normalized_span(records[kid], keep)
                node["children"].append(kid_node)
                stack.append((kid, kid_node))
    return tree
