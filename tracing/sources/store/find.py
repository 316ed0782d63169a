"""Find inside traces on the embedded store, over the whole filtered range, from its indexes.

The attribute and error-text fields are answered by the find indexes the write path keeps
(`span_terms`, `span_errors`), the agent field by `agent_links` (every agent loop's name, Janux's
or resolved from another runtime's structure), all in one SQL statement with the trace list's
filter, so the count and the page come from SQL without reading a span. A failure reason needs the
rebuilt tree: SQL narrows the range to the traces that can have one
(`trace_find.may_have_reason`), whose kept find facts (`FindFactsCache`) say which do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from janux.tracing.analysis.agentmap.classify import ROLE_AGENT
from janux.tracing.analysis.trace_find import FoundTraces, TraceQuery, parse_attribute, term_value
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store.queries import filter_sql, list_where

ReasonsOf = Callable[[dict[str, int]], dict[str, frozenset[str]]]
"""Failure reasons of the traces in a {trace id: span count} map."""

# `trace_find.may_have_reason` over `trace_summary` (failed handoffs of any runtime, or ERROR spans).
_MAY_HAVE_REASON = "(FailedHandoffs + ForeignFailed > 0 OR ErrorSpans > 0)"
_IDS_PER_QUERY = 500


def _where(flt: TraceFilter, query: TraceQuery) -> tuple[str, list[Any]]:
    """The trace list's WHERE clause for `flt` plus the index tests of a `checked` query."""
    where, params = filter_sql(flt)
    clauses = [where.removeprefix(" WHERE ")] if where else []
    if query.attribute:
        key, value = parse_attribute(query.attribute)
        if value is None:
            clauses.append("TraceId IN (SELECT TraceId FROM span_terms WHERE Key = ?)")
            params.append(key)
        else:
            clauses.append("TraceId IN (SELECT TraceId FROM span_terms WHERE Key = ? AND Value = ?)")
            params += [key, term_value(value)]
    if query.agent:
        clauses.append("TraceId IN (SELECT TraceId FROM agent_links WHERE Role = ? AND Name = ?)")
        params += [ROLE_AGENT, query.agent]
    if query.error:
        clauses.append("TraceId IN (SELECT TraceId FROM span_errors WHERE instr(Text, ?) > 0)")
        params.append(query.error.lower())
    if query.reason:
        clauses.append(_MAY_HAVE_REASON)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def find_traces(
    conn: sqlite3.Connection,
    flt: TraceFilter,
    query: TraceQuery,
    reasons_of: ReasonsOf,
    limit: int,
    offset: int,
) -> FoundTraces:
    """One page of the traces of `flt` with what `query` asks for, and how many there are."""
    query = query.checked()
    where, params = _where(flt, query)
    limit, offset = max(0, limit), max(0, offset)
    if not query.reason:
        total = int(conn.execute(f"SELECT count(*) FROM trace_summary{where}", params).fetchone()[0])
        return FoundTraces(total=total, summaries=list_where(conn, where, params, limit, offset))
    sql = f"SELECT TraceId, SpanCount FROM trace_summary{where} ORDER BY StartNs DESC, TraceId"
    versions = dict(conn.execute(sql, params).fetchall())
    reasons = reasons_of(versions)
    ids = [trace_id for trace_id in versions if query.reason in reasons.get(trace_id, ())]
    page = ids[offset : offset + limit]
    marks = ", ".join("?" * len(page))
    summaries = list_where(conn, f" WHERE TraceId IN ({marks})", page, len(page), 0) if page else []
    return FoundTraces(total=len(ids), summaries=summaries)
