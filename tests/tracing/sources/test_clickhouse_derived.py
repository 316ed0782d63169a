"""The ClickHouse source over Janux's derived tables (`janux clickhouse init` + the deriver): for the
demo set and every foreign fixture, every list, count and aggregate equals the embedded store's
and the memory source's, under every filter; and none of them reads spans from `otel_traces`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, MapKey, MapRefs
from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import USAGE_DIMENSIONS, TraceFilter, TraceSource
from janux.tracing.sources.store import open_store
from tests.support.clickhouse_rows import RecordingClient
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import all_spans
from tests.support.three_sources import derived_clickhouse

HOUR_NS = 3_600 * 10**9


def _spans() -> list[SpanRecord]:
    return [*demo_traces().spans, *all_spans()]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    spans = _spans()
    work = tmp_path_factory.mktemp("derived")
    with derived_clickhouse(spans, work) as (clickhouse, client), open_store(work / "store") as store:
        store.write(spans)
        yield {"memory": MemoryTraceSource(spans), "store": store, "clickhouse": clickhouse, "client": client}


def _filters(memory: TraceSource) -> list[TraceFilter]:
    """Every filter field, with values the data has (and one it has not)."""
    rows = memory.list_traces(TraceFilter(), limit=1_000)
    starts = sorted(r.start_ns for r in rows)
    middle = starts[len(starts) // 2]
    with_agent = next(r for r in rows if r.root_agent)
    with_conversation = next(r for r in rows if r.conversation_id)
    costs = sorted(r.bill_cost for r in rows if r.bill_cost is not None)
    return [
        TraceFilter(),
        TraceFilter(start_ns=middle),
        TraceFilter(end_ns=middle),
        TraceFilter(start_ns=starts[0], end_ns=starts[-1] + 1),
        TraceFilter(service=rows[0].service_name),
        TraceFilter(root_agent=with_agent.root_agent),
        TraceFilter(conversation_id=with_conversation.conversation_id),
        TraceFilter(status="error"),
        TraceFilter(status="ok"),
        TraceFilter(has_failed_handoffs=True),
        TraceFilter(min_cost=costs[len(costs) // 2]),
        TraceFilter(trace_id=rows[0].trace_id[:3].upper()),
        TraceFilter(trace_id="zz"),
        TraceFilter(root_agent="nobody"),
    ]


def _ids(spans: list[SpanRecord]) -> list[tuple[str, str, int]]:
    return [(s.trace_id, s.span_id, s.start_ns) for s in spans]


def _assert_refs_equal(
    source: TraceSource, expected: TraceSource, flt: TraceFilter, agent_map: AgentMap
) -> None:
    """Every node's and edge's newest traces (and failures) equal the reference's."""
    keys: list[MapKey] = [*(n.agent for n in agent_map.nodes), *(e.key for e in agent_map.edges)]
    for key in keys:
        refs = expected.map_refs(flt, key)
        assert refs.recent, (key, flt)  # a node or edge on the map has traces
        assert source.map_refs(flt, key) == refs, (key, flt)
    assert source.map_refs(flt, "nobody") == MapRefs() == expected.map_refs(flt, "nobody")


def test_the_derived_tables_hold_every_trace(sources: dict[str, Any]) -> None:
    traces = {s.trace_id for s in _spans()}
    assert sources["clickhouse"].count_traces(TraceFilter()) == len(traces)
    assert sources["clickhouse"].pending_traces() == 0


@pytest.mark.parametrize("reference", ["memory", "store"])
def test_every_page_query_equals_the_reference_under_every_filter(
    sources: dict[str, Any], reference: str
) -> None:
    clickhouse: ClickHouseSource = sources["clickhouse"]
    expected: TraceSource = sources[reference]
    for flt in _filters(sources["memory"]):
        assert clickhouse.list_traces(flt, limit=1_000) == expected.list_traces(flt, limit=1_000), flt
        assert clickhouse.list_traces(flt, limit=3, offset=2) == expected.list_traces(
            flt, limit=3, offset=2
        ), flt
        assert clickhouse.count_traces(flt) == expected.count_traces(flt), flt
        for dimension in USAGE_DIMENSIONS:
            assert clickhouse.usage_by(dimension, flt, 1_000) == expected.usage_by(dimension, flt, 1_000), (
                dimension,
                flt,
            )
        agent_map = expected.agent_map(flt, HOUR_NS)
        assert clickhouse.agent_map(flt, HOUR_NS) == agent_map, flt
        _assert_refs_equal(clickhouse, expected, flt, agent_map)
        assert clickhouse.model_timeline(flt, HOUR_NS) == expected.model_timeline(flt, HOUR_NS), flt
        assert _ids(clickhouse.failed_handoff_spans(flt, 5)) == _ids(expected.failed_handoff_spans(flt, 5)), (
            flt
        )
        assert _ids(clickhouse.failed_handoff_spans(flt)) == _ids(expected.failed_handoff_spans(flt)), flt
    for what in ("service", "root_agent", "conversation"):
        assert clickhouse.distinct_values(what) == expected.distinct_values(what), what  # type: ignore[arg-type]


def test_lists_and_aggregates_read_facts_never_spans(sources: dict[str, Any]) -> None:
    # Without the derived tables every one of these reads otel_traces (and pulls spans into Python).
    recording = RecordingClient(sources["client"])
    source = ClickHouseSource(recording)
    flt = TraceFilter(status="error")
    assert source.list_traces(flt) and source.count_traces(flt)
    for dimension in USAGE_DIMENSIONS:
        source.usage_by(dimension, flt)
    assert source.agent_map(flt, HOUR_NS).nodes
    assert source.model_timeline(flt, HOUR_NS)
    source.distinct_values("root_agent")
    assert not [q for q in recording.queries if "otel_traces" in q]
    recording.queries.clear()
    failed = source.failed_handoff_spans(TraceFilter(), limit=4)
    assert len(failed) == 4
    span_reads = [q for q in recording.queries if "otel_traces" in q]
    assert len(span_reads) == 1 and "SpanId IN" in span_reads[0]  # one bounded read of the named spans
