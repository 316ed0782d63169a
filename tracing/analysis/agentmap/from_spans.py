"""Link rows straight from spans: what the in-memory source (and tests) feed the map builder.

A trace with Janux accounting gives one row per agent and tool span (`classify_span`) plus its
inference sums; any other trace is read whole, as the Trace page reads it (`foreign_rows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from janux.tracing import conventions as c
from janux.tracing.analysis.agentmap.build import build_agent_map
from janux.tracing.analysis.agentmap.classify import classify_span
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap
from janux.tracing.analysis.agentmap.foreign_rows import foreign_links
from janux.tracing.analysis.agentmap.loops import TraceLinks
from janux.tracing.analysis.readers.structure import is_read_whole
from janux.tracing.analysis.spanread import contract_operation
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.records import SpanRecord, attr_float, attr_int


def round_usage(span: SpanRecord) -> Usage:
    """One inference round's usage; a round without `janux.round.cost` is unpriced."""
    attrs = span.attributes
    tokens_in = attr_int(attrs, c.GEN_AI_USAGE_INPUT_TOKENS) or 0
    tokens_out = attr_int(attrs, c.GEN_AI_USAGE_OUTPUT_TOKENS) or 0
    cost = attr_float(attrs, c.JANUX_ROUND_COST)
    unpriced = 0 if cost is not None else tokens_in + tokens_out
    return Usage(tokens_in, tokens_out, cost, unpriced)


def links_of_spans(trace_id: str, spans: Sequence[SpanRecord]) -> TraceLinks:
    """Link rows, inference sums and parent links of one trace's spans (each span once)."""
    if is_read_whole(spans):
        return foreign_links(trace_id, spans)
    links = TraceLinks(trace_id, [])
    rows = []
    for span in spans:
        row = classify_span(span)
        if row is not None:
            rows.append(row)
            continue
        links.parents[span.span_id] = span.parent_span_id
        if contract_operation(span) in c.INFERENCE_OPERATIONS:
            usage = links.inference.get(span.parent_span_id)
            if usage is None:
                links.inference[span.parent_span_id] = round_usage(span)
            else:
                usage.add(round_usage(span))
    links.rows = rows
    return links


def agent_map_of_traces(
    traces: Iterable[tuple[str, Sequence[SpanRecord]]], bucket_ns: int | None = None
) -> AgentMap:
    """The agent map of in-memory traces, given as (trace id, spans) pairs."""
    return build_agent_map((links_of_spans(trace_id, spans) for trace_id, spans in traces), bucket_ns)
