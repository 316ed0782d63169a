"""What one batch adds to `trace_summary`: one row per trace, computed in Python from the staged rows.

The write path upserts these rows with one multi-row statement (see `ingest.py`), so the summary
costs no staging table and no GROUP BY inside the write transaction. Counts, sums and the earliest
span/root are merged with the stored row by the upsert; `Attempts` and `ForeignFailed` need the
spans already stored and stay set-based SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from janux.tracing.records import STATUS_ERROR
from janux.tracing.sources.store.schema import FLAG_DELEGATION, FLAG_FAILING

SUMMARY_COLUMNS = (
    "TraceId", "StartNs", "EndNs", "SpanCount", "Delegations", "FailedHandoffs", "ErrorSpans",
    "FirstService", "InferenceInput", "InferenceOutput", "Attempts", "ForeignFailed",
    "RootStartNs", "RootName", "RootService", "RootAgent", "ConversationId", "RootHasBill", "BillCost",
    "BillInput", "BillOutput", "BillUnpriced",
)  # fmt: skip
"""Columns of one summary row (`Attempts` and `ForeignFailed` are 0: SQL adds them after the upsert)."""

ROOT_FIRST = SUMMARY_COLUMNS.index("RootStartNs")
"""Index of the first root column; the root columns run to the end of a summary row."""

# Positions in an `otel_traces` row (`schema.SPAN_COLUMNS`) and a `span_usage` row (`USAGE_COLUMNS`).
_START, _TRACE, _SPAN, _NAME, _SERVICE, _DURATION, _STATUS = 0, 1, 2, 5, 7, 12, 13
_U_TRACE, _U_DIM, _U_IN, _U_OUT = 0, 3, 5, 6


def _plus(total: int | None, value: int | None) -> int | None:
    """SQL `sum` semantics: None while nothing was reported."""
    if value is None:
        return total
    return value if total is None else total + value


def summarize(
    rows: Sequence[tuple[Any, ...]],
    flags: Sequence[int],
    usage: Sequence[tuple[Any, ...]],
    roots: Sequence[tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    """Summary rows (`SUMMARY_COLUMNS`) of the spans in `rows` (each span once).

    `flags` holds the `FLAG_*` bits of each row, `usage` the span_usage rows of these spans and
    `roots` one `(TraceId, SpanId, Timestamp, SpanName, ServiceName, *rows.root_fields)` per root.
    The first service is that of the earliest span, the root that of the earliest root.
    """
    traces: dict[str, list[Any]] = {}
    for row, flag in zip(rows, flags, strict=True):
        start = row[_START]
        end = start + row[_DURATION]
        acc = traces.get(row[_TRACE])
        if acc is None:
            acc = [row[_TRACE], start, end, 0, 0, 0, 0, row[_SERVICE], None, None, 0, 0]
            acc += (None, None, None, None, None, 0, None, None, None, None)
            traces[row[_TRACE]] = acc
        else:
            if start < acc[1]:
                acc[1] = start
                acc[7] = row[_SERVICE]
            if end > acc[2]:
                acc[2] = end
        acc[3] += 1
        if flag:
            acc[4] += (flag & FLAG_DELEGATION) != 0
            acc[5] += (flag & FLAG_FAILING) != 0
        if row[_STATUS] == STATUS_ERROR:
            acc[6] += 1
    for item in usage:
        if item[_U_DIM] == "model":
            acc = traces[item[_U_TRACE]]
            acc[8] = _plus(acc[8], item[_U_IN])
            acc[9] = _plus(acc[9], item[_U_OUT])
    for root in roots:
        acc = traces[root[0]]
        if acc[ROOT_FIRST] is None or root[2] < acc[ROOT_FIRST]:
            acc[ROOT_FIRST:] = root[2:]
    return [tuple(acc) for acc in traces.values()]
