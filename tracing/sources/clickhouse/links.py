"""The agent map's links of Janux traces in the Collector's `otel_traces` table: the same link rows
as the embedded store.

Agent and tool spans are read as spans and classified by `agentmap.classify` (the one place that
says what a span is to the map); inference usage is summed per parent span in SQL with the same
per-span rule as `usage_by`; spans between link rows are looked up level by level. Traces without
Janux accounting are read whole by the source instead (`agentmap.foreign_rows`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from janux.tracing import conventions as c
from janux.tracing.analysis.agentmap.classify import LinkRow, classify_span
from janux.tracing.analysis.agentmap.loops import TraceLinks
from janux.tracing.analysis.agentmap.parents import resolve_parents
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.records import SpanRecord

Rows = Callable[[str, dict[str, Any]], list[Any]]
"""Runs SQL with parameters and returns the result rows."""

_LINK_OPS = (c.OP_INVOKE_AGENT, c.OP_EXECUTE_TOOL)
_IS_LINK = " OR ".join(f"SpanAttributes['{c.GEN_AI_OPERATION_NAME}'] = '{op}'" for op in _LINK_OPS)


def clickhouse_links(
    rows: Rows, table: str, traces_sql: str, parameters: dict[str, Any], span_json: str,
    spans: Callable[[str, dict[str, Any]], list[SpanRecord]], inference_sql: str,
) -> list[TraceLinks]:  # fmt: skip
    """The links of the Janux traces `traces_sql` selects (a query returning TraceId); `spans`
    reads the spans of a query selecting `span_json`."""
    by_trace: dict[str, TraceLinks] = {}
    sql = (
        f"SELECT {span_json} FROM {table} WHERE TraceId IN ({traces_sql}) AND ({_IS_LINK}) "
        "LIMIT 1 BY TraceId, SpanId"
    )
    for span in spans(sql, parameters):
        row = classify_span(span)
        if row is not None:
            by_trace.setdefault(row.trace_id, TraceLinks(row.trace_id, [])).rows.append(row)  # type: ignore[attr-defined]
    inference = (
        f"SELECT TraceId, ParentSpanId, sum(i), sum(o), sum(cost), sum(u) FROM ({inference_sql}) "
        "GROUP BY TraceId, ParentSpanId"
    )
    for trace_id, parent, tokens_in, tokens_out, cost, unpriced in rows(inference, parameters):
        links = by_trace.setdefault(str(trace_id), TraceLinks(str(trace_id), []))
        links.inference[str(parent)] = Usage(
            int(tokens_in or 0),
            int(tokens_out or 0),
            None if cost is None else float(cost),
            int(unpriced or 0),
        )

    def lookup(keys: list[tuple[str, str]]) -> list[tuple[str, str, str, LinkRow | None]]:
        sql = (
            f"SELECT DISTINCT TraceId, SpanId, ParentSpanId FROM {table} "
            "WHERE TraceId IN {traces:Array(String)} AND SpanId IN {spans:Array(String)}"
        )
        wanted = set(keys)
        found = rows(sql, {"traces": sorted({t for t, _ in keys}), "spans": sorted({s for _, s in keys})})
        # every tool span was read above: what is left here is neither an agent nor a tool
        return [(str(t), str(s), str(p), None) for t, s, p in found if (str(t), str(s)) in wanted]

    resolve_parents(by_trace, lookup)
    return list(by_trace.values())
