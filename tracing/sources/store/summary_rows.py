"""What one batch adds to `trace_summary`: one row per trace, computed in Python from the staged rows.

The write path upserts these rows with one multi-row statement (see `ingest.py`), so the summary
costs no staging table and no GROUP BY inside the write transaction. Counts, sums and the earliest
span/root are merged with the stored row by the upsert; `Attempts` and `ForeignFailed` need the
spans already stored and stay set-based SQL.

These sums are the write path's form of `analysis.summary.summarize` (the trace-list row of one
whole trace): incremental per batch, which the one-trace rule cannot be. The two are held equal by
the three-source tests (tests/tracing/sources/test_foreign_sources.py, test_clickhouse_source.py,
tests/tracing/analysis/test_trace_facts.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from janux.tracing.analysis.trace_parts import plus
from janux.tracing.columns import positions
from janux.tracing.records import STATUS_ERROR
from janux.tracing.sources.store.schema import (
    FLAG_DELEGATION,
    FLAG_FAILING,
    FLAG_JANUX,
    FLAG_TRANSFER,
    FLAG_UNRECOGNISED,
    SPAN_AT,
    USAGE_AT,
)

ROOT_FIELDS = (
    "RootAgent", "ConversationId", "RootHasBill", "BillCost", "BillInput", "BillOutput", "BillUnpriced",
    "BillEstimate", "AgentPath",
)  # fmt: skip
"""What `rows.root_fields` reads off a root span's attributes, in its order."""

ROOT_COLUMNS = ("TraceId", "SpanId", "RootStartNs", "RootName", "RootService", *ROOT_FIELDS)
"""One root row: the root span's ids, its `Timestamp`, `SpanName` and `ServiceName`, then `ROOT_FIELDS`."""

SUMMARY_COLUMNS = (
    "TraceId", "StartNs", "EndNs", "SpanCount", "Delegations", "FailedHandoffs", "ErrorSpans",
    "FirstService", "InferenceInput", "InferenceOutput", "Attempts", "ForeignFailed", "Janux", "Transfers",
    "InferenceSpans", "UsageReadSpans", "UnrecognisedSpans", *ROOT_COLUMNS[2:],
)  # fmt: skip
"""Columns of one summary row (`Attempts` and `ForeignFailed` are 0: SQL adds them after the upsert)."""

ROOT_FIRST = SUMMARY_COLUMNS.index("RootStartNs")
"""Index of the first root column; the root columns (`ROOT_COLUMNS[2:]`) run to the end of a summary row."""

_ROOT_AT = positions(ROOT_COLUMNS)
_ROOT_TRACE, _ROOT_VALUES = _ROOT_AT["TraceId"], _ROOT_AT["RootStartNs"]
_A = positions(SUMMARY_COLUMNS)
_A_TRACE, _A_START, _A_END, _A_FIRST_SERVICE = _A["TraceId"], _A["StartNs"], _A["EndNs"], _A["FirstService"]
_A_SPANS, _A_DELEGATIONS, _A_FAILED, _A_ERRORS = (
    _A["SpanCount"], _A["Delegations"], _A["FailedHandoffs"], _A["ErrorSpans"],
)  # fmt: skip
_A_INPUT, _A_OUTPUT, _A_ROOT_START = _A["InferenceInput"], _A["InferenceOutput"], _A["RootStartNs"]
_ZERO = frozenset({"SpanCount", "Delegations", "FailedHandoffs", "ErrorSpans", "Attempts", "ForeignFailed",
                   "RootHasBill", "Janux", "Transfers", "InferenceSpans", "UsageReadSpans",
                   "UnrecognisedSpans"})  # fmt: skip
_A_JANUX, _A_TRANSFERS, _A_UNRECOGNISED = _A["Janux"], _A["Transfers"], _A["UnrecognisedSpans"]
_A_CALLS, _A_READ = _A["InferenceSpans"], _A["UsageReadSpans"]
_EMPTY: list[Any] = [0 if name in _ZERO else None for name in SUMMARY_COLUMNS]
"""A summary row before any span is added: counts 0, the rest unknown."""

_START, _TRACE, _SERVICE = SPAN_AT["Timestamp"], SPAN_AT["TraceId"], SPAN_AT["ServiceName"]
_DURATION, _STATUS = SPAN_AT["Duration"], SPAN_AT["StatusCode"]
_U_TRACE, _U_DIM = USAGE_AT["TraceId"], USAGE_AT["Dim"]
_U_IN, _U_OUT, _U_UNREAD = USAGE_AT["InputTokens"], USAGE_AT["OutputTokens"], USAGE_AT["Unread"]


def summarize(
    rows: Sequence[tuple[Any, ...]],
    flags: Sequence[int],
    usage: Sequence[tuple[Any, ...]],
    roots: Sequence[tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    """Summary rows (`SUMMARY_COLUMNS`) of the spans in `rows` (each span once).

    `rows` are `otel_traces` rows (`schema.SPAN_COLUMNS`), `flags` the `FLAG_*` bits of each row,
    `usage` the span_usage rows of these spans and `roots` one `ROOT_COLUMNS` row per root.
    The first service is that of the earliest span, the root that of the earliest root.
    """
    traces: dict[str, list[Any]] = {}
    for row, flag in zip(rows, flags, strict=True):
        start = row[_START]
        end = start + row[_DURATION]
        acc = traces.get(row[_TRACE])
        if acc is None:
            acc = _EMPTY.copy()
            acc[_A_TRACE], acc[_A_START], acc[_A_END] = row[_TRACE], start, end
            acc[_A_FIRST_SERVICE] = row[_SERVICE]
            traces[row[_TRACE]] = acc
        else:
            if start < acc[_A_START]:
                acc[_A_START] = start
                acc[_A_FIRST_SERVICE] = row[_SERVICE]
            if end > acc[_A_END]:
                acc[_A_END] = end
        acc[_A_SPANS] += 1
        if flag:
            acc[_A_DELEGATIONS] += (flag & FLAG_DELEGATION) != 0
            acc[_A_FAILED] += (flag & FLAG_FAILING) != 0
            acc[_A_TRANSFERS] += (flag & FLAG_TRANSFER) != 0
            acc[_A_UNRECOGNISED] += (flag & FLAG_UNRECOGNISED) != 0
            if flag & FLAG_JANUX:
                acc[_A_JANUX] = 1
        if row[_STATUS] == STATUS_ERROR:
            acc[_A_ERRORS] += 1
    for item in usage:
        if item[_U_DIM] == "model":
            acc = traces[item[_U_TRACE]]
            acc[_A_INPUT] = plus(acc[_A_INPUT], item[_U_IN])
            acc[_A_OUTPUT] = plus(acc[_A_OUTPUT], item[_U_OUT])
            unread = item[_U_UNREAD]
            if unread is not None:  # a failed call that returned no usage is not counted
                acc[_A_CALLS] += 1
                acc[_A_READ] += not unread
    for root in roots:
        acc = traces[root[_ROOT_TRACE]]
        root_start = root[_ROOT_VALUES]
        if acc[_A_ROOT_START] is None or root_start < acc[_A_ROOT_START]:
            acc[ROOT_FIRST:] = root[_ROOT_VALUES:]
    return [tuple(acc) for acc in traces.values()]
