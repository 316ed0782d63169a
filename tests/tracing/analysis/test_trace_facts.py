"""A trace's facts are computed once per (trace, span count) and serve every query of a source."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from janux.tracing.analysis.readers import structure as structure_module
from janux.tracing.analysis.trace_facts import analyse
from janux.tracing.analysis.usage_aggregate import group_rows
from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import USAGE_DIMENSIONS, TraceFilter
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import all_spans
from tests.support.three_sources import three_sources


def _by_trace(spans: list[SpanRecord]) -> dict[str, list[SpanRecord]]:
    traces: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        traces[span.trace_id].append(span)
    return traces


def _every_page(source: MemoryTraceSource) -> None:
    everything = TraceFilter()
    source.list_traces(everything, limit=1000)
    source.count_traces(everything)
    for dimension in USAGE_DIMENSIONS:
        source.usage_by(dimension, everything)
    source.agent_map(everything)
    source.failed_handoff_spans(everything)
    source.model_timeline(everything, 60 * 10**9)
    source.distinct_values("root_agent")


def test_each_trace_is_read_once_for_every_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The structure of a trace is built once, however many pages and aggregates read it."""
    spans = list(demo_traces().spans) + all_spans()
    built: list[str] = []
    real = structure_module.structure

    def counting(index: structure_module.SpanIndex) -> structure_module.Structure:
        built.append(index.trace_id)
        return real(index)

    monkeypatch.setattr(structure_module, "structure", counting)
    monkeypatch.setattr("janux.tracing.analysis.trace_facts.structure", counting)
    source = MemoryTraceSource(spans)
    _every_page(source)
    _every_page(source)
    traces = _by_trace(spans)
    assert sorted(built) == sorted(traces), "each trace's structure read exactly once"
    assert source.analysed == len(traces)


def test_a_trace_that_grows_is_analysed_again_and_only_it() -> None:
    spans = list(demo_traces().spans)
    traces = _by_trace(spans)
    grown_id = next(iter(traces))
    held_back = traces[grown_id][-1]
    source = MemoryTraceSource([s for s in spans if s is not held_back])
    _every_page(source)
    assert source.analysed == len(traces)
    source.add([held_back])
    _every_page(source)
    assert source.analysed == len(traces) + 1
    row = next(s for s in source.list_traces(TraceFilter(trace_id=grown_id)))
    assert row.span_count == len(traces[grown_id])


def test_usage_groups_of_the_facts_are_the_per_dimension_rule() -> None:
    """`TraceFacts.usage` holds, per dimension, exactly what `group_rows` counts for that trace."""
    for trace_id, spans in _by_trace(list(demo_traces().spans) + all_spans()).items():
        facts = analyse(trace_id, spans)
        for dimension in USAGE_DIMENSIONS:
            from_facts = sorted((row for dim, row in facts.usage if dim == dimension), key=repr)
            assert from_facts == sorted(group_rows(dimension, [spans]), key=repr), (trace_id, dimension)


def test_facts_failures_are_the_failed_handoffs_of_the_summary() -> None:
    for trace_id, spans in _by_trace(list(demo_traces().spans) + all_spans()).items():
        facts = analyse(trace_id, spans)
        assert len(facts.failures) == facts.summary.failed_handoffs, trace_id
        assert len(facts.failed_span_ids) == facts.summary.failed_handoffs, trace_id
        assert facts.span_count == len(spans)


def test_memory_source_from_facts_answers_as_the_store_and_clickhouse(tmp_path: Path) -> None:
    """The in-memory source now reads facts only; every aggregate still equals the other sources'."""
    spans = list(demo_traces().spans) + all_spans()
    everything = TraceFilter()
    with three_sources(spans, tmp_path) as sources:
        answers = {
            kind: (
                [s.trace_id for s in source.list_traces(everything, limit=1000)],
                {d: source.usage_by(d, everything) for d in USAGE_DIMENSIONS},
                sorted(s.span_id for s in source.failed_handoff_spans(everything)),
                source.model_timeline(everything, 3600 * 10**9),
            )
            for kind, source in sources.items()
        }
    assert answers["memory"] == answers["store"]
    assert answers["memory"] == answers["clickhouse"]


def test_one_money_rule_for_text_csv_and_json() -> None:
    """One exact form (at least 6 decimals, at most 10) on pages, in files and in JSON; no float noise."""
    import pandas as pd

    from janux.tracing.analysis import formatting, money_cells
    from janux.tracing.analysis.report import json_cell

    noisy = 0.03147250000000001
    assert json_cell(noisy) == 0.0314725
    assert json_cell(0.1 + 0.2) == 0.3
    assert formatting.money(0.0002865) == 0.0002865  # files keep every audited digit
    assert formatting.usd(0.0002865) == "$0.0002865"  # the page shows the digits the file keeps
    assert money_cells.money_text(0.0002865) == "$0.0002865"
    assert formatting.money(0.0038639499999999997) == 0.00386395
    assert formatting.usd(0.0038639499999999997) == "$0.00386395"
    csv = money_cells.csv_bytes(pd.DataFrame({"cost USD": [noisy, 0.1 + 0.2]})).decode()
    assert csv.splitlines()[1:] == ["0.0314725", "0.300000"]
