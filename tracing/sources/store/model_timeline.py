"""Usage per model per time bucket (by trace start): the Costs page's "over time, by model" picture.

Every inference round counts once under its requested model, with the `usage_by("model")` rule
(a round without `janux.round.cost` is unpriced); a round is placed at its trace's start, the
time the range filters by. The embedded store and ClickHouse compute it in SQL, in memory here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from janux.tracing import conventions as c
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.analysis.usage_rows import span_usage
from janux.tracing.records import SpanRecord

TimelineRow = tuple[int, str, Usage]
"""(bucket start in Unix ns, model, usage)."""
TimelineSums = dict[tuple[int, str], Usage]
"""Unrounded usage per (bucket start, model)."""


def _op(span: SpanRecord) -> str:
    value = span.attributes.get(c.GEN_AI_OPERATION_NAME)
    return value if isinstance(value, str) else ""


def finish_timeline(rows: Iterable[Sequence[Any]]) -> list[TimelineRow]:
    """(bucket, model, input, output, cost, unpriced) rows as `TimelineRow`s, in time then model order."""
    out = []
    for r in rows:
        cost = None if r[4] is None else float(r[4])
        usage = Usage(int(r[2] or 0), int(r[3] or 0), cost, int(r[5] or 0))
        out.append((int(r[0]), str(r[1] or ""), usage.rounded()))
    return sorted(out, key=lambda row: (row[0], row[1]))


def timeline_sums(
    traces: Iterable[Sequence[SpanRecord]], bucket_ns: int, sums: TimelineSums | None = None
) -> TimelineSums:
    """Usage per (bucket, model) of in-memory traces (each a list of its spans, each span once),
    added to `sums` when given; unrounded, for `finish_timeline`."""
    sums = {} if sums is None else sums
    for spans in traces:
        if not spans:
            continue
        bucket = min(s.start_ns for s in spans) // bucket_ns * bucket_ns
        for span in spans:
            row = span_usage(_op(span), span.attributes, span.status_code)
            if row is None or row.dimension != "model":
                continue
            usage = Usage(
                row.input_tokens or 0, row.output_tokens or 0, row.cost, row.unpriced_tokens or 0
            )
            sums.setdefault((bucket, row.key), Usage()).add(usage)
    return sums


def sums_as_rows(sums: TimelineSums) -> list[tuple[int, str, int, int, float | None, int]]:
    """`timeline_sums` as (bucket, model, input, output, cost, unpriced) rows for `finish_timeline`."""
    return [(b, m, u.input_tokens, u.output_tokens, u.cost, u.unpriced_tokens) for (b, m), u in sums.items()]


def model_timeline_of(traces: Iterable[Sequence[SpanRecord]], bucket_ns: int) -> list[TimelineRow]:
    """The model timeline of in-memory traces (each a list of its spans, each span once)."""
    return finish_timeline(sums_as_rows(timeline_sums(traces, bucket_ns)))


STORE_SQL = """
SELECT (t.StartNs / ?) * ? AS b, u.Key, sum(u.InputTokens), sum(u.OutputTokens), sum(u.Cost),
    sum(u.Unpriced)
FROM ({traces}) t JOIN span_usage u ON u.TraceId = t.TraceId AND u.Dim = 'model'
GROUP BY b, u.Key
"""
"""The embedded store's query: parameters are the bucket twice, then those of `traces`
(`SELECT TraceId, StartNs FROM trace_summary WHERE ...`)."""
