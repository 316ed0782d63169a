"""Usage rows read off a trace's structure, for traces without Janux accounting.

Another runtime's agent span records no usage of its own loop (what it may carry is accumulated
over its rounds or its whole subtree, and is never added): its own usage is the sum of the model
calls whose nearest loop it is, and a delegation's usage that of its attempts. Both need the whole
trace (`janux.tracing.analysis.readers.structure`), so every source derives these rows from the same facts:
the in-memory source when it aggregates, the embedded store when it stores a batch, the ClickHouse
source when it reads.

Row ids follow the `span_usage` table: an agent row's parent is the delegation it is an attempt of
(its tool span, however deep below it, or `direct:<agent span>` for an agent nested directly in
another), so "the attempts of a delegation" is one key lookup in every source.
"""

from __future__ import annotations

from collections.abc import Sequence

from janux.tracing.analysis.readers.structure import AgentFacts, EdgeFacts, StructureFacts, structure_facts
from janux.tracing.analysis.usage_rows import UsageRow
from janux.tracing.records import SpanRecord

DIRECT_PREFIX = "direct:"
"""Id of a delegation with no tool span: this prefix and the attempt's agent span id."""
LOOSE_PREFIX = "loose:"
"""Span id of the stand-in loop holding model calls outside any agent loop: prefix and trace id."""

DerivedRow = tuple[str, str, UsageRow]
"""(span id, parent id, row) of one derived `span_usage` row."""


def _edge_id(facts: StructureFacts, edge: EdgeFacts) -> str:
    if edge.tool_span_id:
        return edge.tool_span_id
    first = facts.agents[edge.attempt_agents[0]] if edge.attempt_agents else None
    return DIRECT_PREFIX + (first.span_id if first else "")


def _agent_row(facts: StructureFacts, agent: AgentFacts) -> DerivedRow:
    span_id = agent.loop_id if agent.span_id else LOOSE_PREFIX + facts.trace_id
    parent = agent.parent_span_id
    if agent.via is not None and facts.edges[agent.via].kind == "delegate":
        parent = _edge_id(facts, facts.edges[agent.via])
    # Rounds priced by the runtime (`janux.round.cost`: an agent segment of a Janux loop) keep
    # their cost; every other round's tokens are unpriced.
    row = UsageRow(
        "agent", agent.name, agent.input_tokens, agent.output_tokens, agent.cost, agent.unpriced_tokens,
        agent.status == "error", agent.unread_calls > 0,
    )  # fmt: skip
    return span_id, parent, row


def _tool_row(facts: StructureFacts, edge: EdgeFacts) -> DerivedRow:
    unread = any(facts.agents[a].unread_calls > 0 for a in edge.attempt_agents)
    row = UsageRow("tool", edge.tool, None, None, None, None, edge.failed, unread)
    return _edge_id(facts, edge), "", row


def derived_rows(facts: StructureFacts) -> list[DerivedRow]:
    """The agent and tool rows of a trace read structurally: one per loop, one per delegation."""
    rows = [_agent_row(facts, agent) for agent in facts.agents]
    rows += [_tool_row(facts, edge) for edge in facts.edges if edge.kind == "delegate"]
    return rows


def trace_rows(
    spans: Sequence[SpanRecord], janux: bool | None = None
) -> tuple[StructureFacts, list[DerivedRow]]:
    """Facts and derived rows of one trace's spans (`janux`: see `facts_of`)."""
    facts = structure_facts(spans, janux)
    return facts, derived_rows(facts)
