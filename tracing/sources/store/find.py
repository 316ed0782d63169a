"""Find inside traces on the embedded store, over the whole filtered range.

The error-text field is answered by the index the write path keeps (`span_errors`), the agent
field by `agent_links` (every agent loop's name, Janux's or resolved from another runtime's
structure), a span attribute by SQLite's JSON functions over the spans of the range's traces (an
index of every attribute cost the write path a third of its speed): all in one SQL statement with
the trace list's filter. Attribute values whose text SQL cannot reproduce exactly (floats, arrays)
make a trace a candidate that `trace_find.spans_have_attribute` confirms from its spans. A failure
reason needs the rebuilt tree: SQL narrows the range to the traces that can have one
(`trace_find.may_have_reason`), whose kept find facts (`FindFactsCache`) say which do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from janux.tracing.analysis.agentmap.classify import ROLE_AGENT
from janux.tracing.analysis.trace_find import (
    FoundTraces,
    TraceQuery,
    parse_attribute,
    spans_have_attribute,
)
from janux.tracing.records import SpanRecord
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store.queries import filter_sql, list_where

ReasonsOf = Callable[[dict[str, int]], dict[str, frozenset[str]]]
"""Failure reasons of the traces in a {trace id: span count} map."""
ReadSpans = Callable[[list[str]], dict[str, list[SpanRecord]]]
"""All spans of the named traces (the store's `get_traces`)."""

# A span of the trace carries the attribute, with a value whose text SQL gives as `attribute_text`
# does (text, integers, booleans), or (`_UNSURE`) a value only Python renders (floats, arrays).
_SPAN_OF_TRACE = "SELECT 1 FROM otel_traces o WHERE o.TraceId = trace_summary.TraceId AND "
_HAS_KEY = f"EXISTS ({_SPAN_OF_TRACE}json_type(o.SpanAttributes, ?) IS NOT NULL)"
_HAS_VALUE = (
    f"EXISTS ({_SPAN_OF_TRACE}CASE json_type(o.SpanAttributes, ?) "
    "WHEN 'text' THEN json_extract(o.SpanAttributes, ?) = ? "
    "WHEN 'integer' THEN CAST(json_extract(o.SpanAttributes, ?) AS TEXT) = ? "
    "WHEN 'true' THEN ? = 'true' WHEN 'false' THEN ? = 'false' ELSE 0 END)"
)
_UNSURE = f"EXISTS ({_SPAN_OF_TRACE}json_type(o.SpanAttributes, ?) IN ('real', 'array', 'object'))"

# `trace_find.may_have_reason` over `trace_summary` (failed handoffs of any runtime, ERROR spans, or
# more attempts than delegations).
_MAY_HAVE_REASON = "(FailedHandoffs + ForeignFailed > 0 OR ErrorSpans > 0 OR Attempts > Delegations)"
_IDS_PER_QUERY = 500


def _where(flt: TraceFilter, query: TraceQuery) -> tuple[str, list[Any]]:
    """The trace list's WHERE clause for `flt` plus the agent, error and reason tests of a
    `checked` query (the attribute's are `_attribute_tests`)."""
    where, params = filter_sql(flt)
    clauses = [where.removeprefix(" WHERE ")] if where else []
    if query.agent:
        clauses.append("TraceId IN (SELECT TraceId FROM agent_links WHERE Role = ? AND Name = ?)")
        params += [ROLE_AGENT, query.agent]
    if query.error:
        clauses.append("TraceId IN (SELECT TraceId FROM span_errors WHERE instr(Text, ?) > 0)")
        params.append(query.error.lower())
    if query.reason:
        clauses.append(_MAY_HAVE_REASON)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _attribute_tests(attribute: str) -> tuple[str, list[Any], str | None, list[Any]]:
    """(sure test, its parameters, unsure test or None, its parameters) of a `key[=value]` field.

    A key SQLite's JSON path cannot name (a quote or a backslash in it) makes every trace unsure."""
    key, value = parse_attribute(attribute)
    if '"' in key or "\\" in key:
        return "0", [], "1", []
    path = f'$."{key}"'
    if value is None:
        return _HAS_KEY, [path], None, []
    return _HAS_VALUE, [path, path, value, path, value, value, value], _UNSURE, [path]


def find_traces(
    conn: sqlite3.Connection,
    flt: TraceFilter,
    query: TraceQuery,
    reasons_of: ReasonsOf,
    read_spans: ReadSpans,
    limit: int,
    offset: int,
) -> FoundTraces:
    """One page of the traces of `flt` with what `query` asks for, and how many there are."""
    query = query.checked()
    where, params = _where(flt, query)
    limit, offset = max(0, limit), max(0, offset)
    sure, sure_params, unsure, unsure_params = (
        _attribute_tests(query.attribute) if query.attribute else ("1", [], None, [])
    )
    if not query.reason and unsure is None:
        where, params = _and(where, params, sure, sure_params)
        total = int(conn.execute(f"SELECT count(*) FROM trace_summary{where}", params).fetchone()[0])
        return FoundTraces(total=total, summaries=list_where(conn, where, params, limit, offset))
    either = f"({sure} OR {unsure})" if unsure is not None else sure
    where, params = _and(where, params, either, sure_params + unsure_params)
    sql = f"SELECT TraceId, SpanCount, {sure} FROM trace_summary{where} ORDER BY StartNs DESC, TraceId"
    rows = conn.execute(sql, sure_params + params).fetchall()
    versions = {trace_id: count for trace_id, count, _ in rows}
    ids = list(versions)
    if unsure is not None and query.attribute:
        confirmed = _confirmed([t for t, _, is_sure in rows if not is_sure], query.attribute, read_spans)
        ids = [t for t, _, is_sure in rows if is_sure or t in confirmed]
    if query.reason:
        reasons = reasons_of({trace_id: versions[trace_id] for trace_id in ids})
        ids = [trace_id for trace_id in ids if query.reason in reasons.get(trace_id, ())]
    page = ids[offset : offset + limit]
    marks = ", ".join("?" * len(page))
    summaries = list_where(conn, f" WHERE TraceId IN ({marks})", page, len(page), 0) if page else []
    return FoundTraces(total=len(ids), summaries=summaries)


def _and(where: str, params: list[Any], clause: str, clause_params: list[Any]) -> tuple[str, list[Any]]:
    if clause == "1":
        return where, params
    joined = f"{where} AND {clause}" if where else f" WHERE {clause}"
    return joined, params + clause_params


def _confirmed(trace_ids: list[str], attribute: str, read_spans: ReadSpans) -> set[str]:
    """The traces among `trace_ids` a span of which carries `attribute`, read `_IDS_PER_QUERY` at a time."""
    found: set[str] = set()
    for start in range(0, len(trace_ids), _IDS_PER_QUERY):
        chunk = read_spans(trace_ids[start : start + _IDS_PER_QUERY])
        found.update(trace_id for trace_id, spans in chunk.items() if spans_have_attribute(spans, attribute))
    return found
