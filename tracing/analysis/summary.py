"""A trace's row in the trace list, the filters over it, and its failed handoffs, read from its spans.

Every source that reads traces whole uses these: the in-memory source for every trace, the
ClickHouse source for traces without Janux accounting (their structure is not summed in SQL), the
embedded store for those traces' failed handoffs. The numbers are the trace's facts
(`janux.tracing.analysis.readers.structure`), so the trace list, the Failures page and the agent map agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from janux.tracing import conventions as c
from janux.tracing.analysis.facts import TraceFilter, TraceSummary
from janux.tracing.analysis.readers.structure import StructureFacts, structure_facts
from janux.tracing.analysis.usage_aggregate import SpanRows, turn_sums
from janux.tracing.analysis.usage_rows import bill_reconciled, bill_sums
from janux.tracing.records import STATUS_ERROR, SpanRecord, attr_float, attr_int, attr_list, attr_str


def failed_edge_spans(facts: StructureFacts, by_id: dict[str, SpanRecord]) -> list[SpanRecord]:
    """The tool (else last attempt) span of every failed delegation or transfer of a trace, given its
    facts and its spans by span id."""
    found = []
    for edge in facts.edges:
        if not edge.failed:
            continue
        span_id = edge.tool_span_id
        if span_id is None and edge.attempt_agents:
            span_id = facts.agents[edge.attempt_agents[-1]].span_id
        if span_id in by_id:
            found.append(by_id[span_id])
    return found


def newest_spans(spans: list[SpanRecord], limit: int) -> list[SpanRecord]:
    """The `limit` newest of `spans` (ties by trace and span id): how every source orders failed
    handoffs."""
    return sorted(spans, key=lambda s: (-s.start_ns, s.trace_id, s.span_id))[: max(0, limit)]


def root_span(spans: Sequence[SpanRecord]) -> SpanRecord | None:
    """The trace's root: its earliest span without a parent (None while no such span arrived)."""
    roots = [s for s in spans if not s.parent_span_id]
    return min(roots, key=lambda s: s.start_ns) if roots else None


def root_agent(root: SpanRecord | None, facts: StructureFacts) -> str | None:
    """The agent the trace list names for a trace, the run's first agent: its root span's (unless
    the root only builds it: `create_agent`), or the agent that handed off when the root records a
    Janux transfer (`janux.handoff.from`: the root span is named after the target); else, for a
    trace without Janux accounting whose root names none (the OpenAI Agents SDK's workflow span),
    its structure's first agent."""
    path = agent_path(root, facts)
    if path:
        return path[0]
    named = attr_str(root.attributes, c.GEN_AI_AGENT_NAME) if root is not None else None
    if root is not None and root.attributes.get(c.GEN_AI_OPERATION_NAME) == c.OP_CREATE_AGENT:
        named = None  # an agent built, not run (OpenLLMetry traces building a graph on its own)
    return named or (None if facts.janux else facts.root_agent)


def agent_path(root: SpanRecord | None, facts: StructureFacts) -> tuple[str, ...]:
    """The agents that held the run's conversation in turn, when it was transferred; else empty.

    Janux records the turn's transfers on the root span (`janux.handoff.path`); another runtime's
    transfers are read from its structure (`StructureFacts.agent_path`): a chain keeps every agent."""
    if facts.janux:
        return recorded_path(root.attributes if root is not None else {})
    path = facts.agent_path
    return path if len(path) > 1 else ()


def recorded_path(attrs: dict[str, Any]) -> tuple[str, ...]:
    """The path a Janux root span records: `janux.handoff.path` (every holder in turn); from a
    recorder that wrote one transfer only, the agent that handed off (`janux.handoff.from`), then
    the target (`gen_ai.agent.name`); empty without a transfer."""
    chain = attr_list(attrs, c.JANUX_HANDOFF_PATH)
    if chain is not None and len(chain) > 1 and all(isinstance(name, str) and name for name in chain):
        return tuple(chain)
    handed_off, target = attr_str(attrs, c.JANUX_HANDOFF_FROM), attr_str(attrs, c.GEN_AI_AGENT_NAME)
    return (handed_off, target) if handed_off and target else ()


def recorded_first_agent(attrs: dict[str, Any]) -> str | None:
    """The first agent a root span names: the one that handed off, else its `gen_ai.agent.name`."""
    return attr_str(attrs, c.JANUX_HANDOFF_FROM) or attr_str(attrs, c.GEN_AI_AGENT_NAME)


def summarize(
    trace_id: str, spans: Sequence[SpanRecord], facts: StructureFacts | None = None,
    rows: SpanRows | None = None,
) -> TraceSummary:  # fmt: skip
    """The trace-list row of one trace (spans in any order, each once); `facts` are the trace's
    structure facts and `rows` its `span_rows` when the caller has read them already."""
    facts = structure_facts(spans) if facts is None else facts
    first = min(spans, key=lambda s: s.start_ns)
    root = root_span(spans)
    ends = [s.end_ns for s in spans if s.duration_ns >= 0] or [first.start_ns]
    attrs = root.attributes if root is not None else {}
    has_bill = any(attrs.get(key) is not None for key in c.BILL_KEYS)
    return TraceSummary(
        trace_id=trace_id,
        start_ns=first.start_ns,
        duration_ns=max(ends) - first.start_ns,
        service_name=(root or first).service_name,
        root_name=root.name if root is not None else "",
        root_agent=root_agent(root, facts),
        agent_path=agent_path(root, facts),
        conversation_id=attr_str(attrs, c.GEN_AI_CONVERSATION_ID),
        span_count=len(spans),
        delegations=facts.delegations,
        attempts=facts.attempts,
        failed_handoffs=facts.failed_handoffs,
        error_spans=sum(1 for s in spans if s.status_code == STATUS_ERROR),
        bill_cost=attr_float(attrs, c.JANUX_BILL_COST) if has_bill else None,
        bill_input_tokens=attr_int(attrs, c.JANUX_BILL_INPUT_TOKENS) if has_bill else facts.input_tokens,
        bill_output_tokens=attr_int(attrs, c.JANUX_BILL_OUTPUT_TOKENS) if has_bill else facts.output_tokens,
        bill_unpriced_tokens=attr_int(attrs, c.JANUX_BILL_UNPRICED_TOKENS) if has_bill else None,
        transfers=facts.transfers,
        inference_spans=facts.inference_spans,
        usage_read_spans=facts.usage_read_spans,
        unrecognised_spans=facts.unrecognised_spans,
        bill_cost_estimate=attr_float(attrs, c.JANUX_BILL_COST_ESTIMATE) if has_bill else None,
        bill_reconciled=bill_reconciled(has_bill, bill_sums(attrs), turn_sums(spans, rows))
        if has_bill
        else None,
    )


def matches(summary: TraceSummary, flt: TraceFilter) -> bool:
    """True when a trace summary passes every filter of `flt`."""
    checks = (
        flt.start_ns is None or summary.start_ns >= flt.start_ns,
        flt.end_ns is None or summary.start_ns < flt.end_ns,
        flt.service is None or summary.service_name == flt.service,
        flt.root_agent is None or summary.root_agent == flt.root_agent,
        flt.conversation_id is None or summary.conversation_id == flt.conversation_id,
        flt.status != "error" or summary.error_spans > 0,
        flt.status != "ok" or summary.error_spans == 0,
        not flt.has_failed_handoffs or summary.failed_handoffs > 0,
        flt.min_cost is None or (summary.bill_cost is not None and summary.bill_cost >= flt.min_cost),
        flt.trace_id is None or summary.trace_id.startswith(flt.trace_id.strip().lower()),
    )
    return all(checks)
