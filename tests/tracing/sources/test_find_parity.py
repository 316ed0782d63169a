"""Find inside traces means one thing on every source: on the demo set and every foreign fixture
(other runtimes' traces), each source finds exactly the traces `trace_find.matches` finds in the
rebuilt traces, for every failure reason, agent, error word and attribute the data holds."""

from __future__ import annotations

from pathlib import Path

from janux.tracing.analysis.trace_find import TraceQuery, matches
from janux.tracing.analysis.trace_view import TraceView, reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sources.protocol import TraceFilter, TraceSource
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import all_spans
from tests.support.three_sources import derived_clickhouse, three_sources


def _spans() -> list[SpanRecord]:
    return [*demo_traces().spans, *all_spans()]


def _views(spans: list[SpanRecord]) -> dict[str, TraceView]:
    by_trace: dict[str, list[SpanRecord]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    return {trace_id: reconstruct(trace) for trace_id, trace in by_trace.items()}


def _queries(views: dict[str, TraceView]) -> list[TraceQuery]:
    """A query per reason, agent and error word in the data, and attributes of several kinds."""
    reasons = sorted({f.reason for v in views.values() for f in v.failures})
    agents = sorted({n.agent for v in views.values() for n in v.nodes})
    errors = sorted({f.error.split()[-1] for v in views.values() for f in v.failures if f.error})
    assert len(reasons) >= 5 and len(agents) >= 10 and errors
    attributes = ["janux.handoff.status=failed", "gen_ai.request.model=gpt-4o", "gen_ai.tool.name",
                  "janux.handoff.attempts=2", "gen_ai.agent.name=nobody"]  # fmt: skip
    failed = next(v for v in views.values() if v.failures and len(v.nodes) > 1)
    both = TraceQuery(reason=failed.failures[0].reason, agent=failed.nodes[-1].agent)  # at least one
    return [
        *(TraceQuery(reason=r) for r in reasons),
        *(TraceQuery(agent=a) for a in agents),
        *(TraceQuery(error=e.upper()) for e in errors),
        *(TraceQuery(attribute=a) for a in attributes),
        both,
    ]


def _same_as_rebuilt(source: TraceSource, views: dict[str, TraceView], queries: list[TraceQuery]) -> None:
    for query in queries:
        truth = {t for t, view in views.items() if matches(view, query)}
        found = source.find_traces(TraceFilter(), query, limit=10_000)
        assert {s.trace_id for s in found.summaries} == truth, query
        assert found.total == len(truth), query


def test_every_source_finds_what_the_rebuilt_traces_hold(tmp_path: Path) -> None:
    spans = _spans()
    views = _views(spans)
    queries = _queries(views)
    with three_sources(spans, tmp_path) as sources:
        for source in sources.values():
            _same_as_rebuilt(source, views, queries)


def test_clickhouse_derived_tables_find_the_same(tmp_path: Path) -> None:
    spans = _spans()
    views = _views(spans)
    with derived_clickhouse(spans, tmp_path) as (clickhouse, _client):
        _same_as_rebuilt(clickhouse, views, _queries(views))
