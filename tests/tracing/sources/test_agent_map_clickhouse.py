"""The agent map on the real ClickHouse engine (chdb, exporter rows) equals the Trace pages' sums and
the embedded store's map, under the trace list's filters; with Janux traces and every committed
trace of another runtime (tests/support/foreign) side by side."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import TraceStore, open_store
from janux.tracing.testing import synthetic_trace
from tests.support.agent_map_expect import actual, expected, nested_foreign_trace
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement
from tests.support.contract_traces import contract_trace, plain_trace
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import Case, all_spans, cases
from tests.tracing.sources.test_agent_map import by_trace

SPANS = [
    *demo_traces().spans, *contract_trace(), *plain_trace(), *synthetic_trace(200, seed=5, janux=False),
    *nested_foreign_trace(), *all_spans(),
]  # fmt: skip


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ClickHouseSource, TraceStore]]:
    client = ChdbClient(str(tmp_path_factory.mktemp("chdb")))
    client.command(EXPORTER_DDL)
    client.command(insert_statement(SPANS))
    client.command(insert_statement(SPANS[:5]))  # an exporter retry: rows written twice
    store = open_store(tmp_path_factory.mktemp("store"))
    store.write(SPANS)
    yield ClickHouseSource(client), store
    store.close()
    client.close()


def test_clickhouse_map_equals_the_trace_pages(sources: tuple[ClickHouseSource, TraceStore]) -> None:
    clickhouse, store = sources
    want = expected(by_trace(SPANS).values())
    assert actual(clickhouse.agent_map(TraceFilter())) == want
    assert actual(store.agent_map(TraceFilter())) == want


@pytest.mark.parametrize("case", cases(), ids=lambda case: case.id)
def test_each_foreign_fixture_equals_its_trace_page(
    sources: tuple[ClickHouseSource, TraceStore], case: Case
) -> None:
    clickhouse, store = sources
    want = expected([list(case.spans)])
    flt = TraceFilter(trace_id=case.trace_id)
    assert actual(clickhouse.agent_map(flt)) == want
    assert actual(store.agent_map(flt)) == want


def test_nested_foreign_shape_is_read_through_chains_and_tasks(
    sources: tuple[ClickHouseSource, TraceStore], tmp_path: Path
) -> None:
    clickhouse, store = sources
    flt = TraceFilter(trace_id="c" * 32)
    for source in (clickhouse, store):
        agent_map = source.agent_map(flt)
        edge = agent_map.edge("boss", "helper")
        assert edge is not None and edge.count == 1 and edge.attempts == 2
        assert agent_map.edge("helper", "intern") is not None
        boss = agent_map.node("boss")
        assert boss is not None and boss.inclusive.cost == 0.75 and boss.inclusive.unpriced_tokens == 41
        assert agent_map.node("orphan") is not None and agent_map.node("(no agent)") is not None


@pytest.mark.parametrize(
    "flt",
    [TraceFilter(status="error"), TraceFilter(has_failed_handoffs=True), TraceFilter(root_agent="triage")],
    ids=["errors", "failed-handoffs", "root-agent"],
)
def test_filters_agree_with_the_embedded_store(
    sources: tuple[ClickHouseSource, TraceStore], flt: TraceFilter
) -> None:
    clickhouse, store = sources
    from_store = store.agent_map(flt)
    assert from_store.traces > 0
    assert actual(clickhouse.agent_map(flt)) == actual(from_store)
    # each node's and edge's newest traces, read spans at query time, equal the store's
    for key in [*(n.agent for n in from_store.nodes), *(e.key for e in from_store.edges)]:
        refs = store.map_refs(flt, key)
        assert refs.recent and clickhouse.map_refs(flt, key) == refs, key


def test_alert_rules_read_the_same_on_clickhouse(sources: tuple[ClickHouseSource, TraceStore]) -> None:
    from janux.tracing.alerts import RuleFile, evaluate

    rules = RuleFile.model_validate(
        {"rules": [
            {"name": "edges", "edge_failure_rate": {"max": 0.1}},
            {"name": "cuts", "budget_cut_rate": {"max": 0.05}},
            {"name": "p95", "cost_per_turn_p95": {"max_usd": 0.0001}},
            {"name": "books", "unreconciled_traces": {"max": 0}},
        ]}
    )  # fmt: skip
    clickhouse, store = sources
    on_clickhouse = evaluate(rules, clickhouse, TraceFilter()).findings
    on_store = evaluate(rules, store, TraceFilter()).findings
    assert on_clickhouse == on_store
    assert {f.rule for f in on_store if f.crossed} >= {"edges", "cuts", "p95"}


def test_model_timeline_is_the_same_in_every_source(sources: tuple[ClickHouseSource, TraceStore]) -> None:
    from janux.tracing.sources.memory import MemoryTraceSource

    clickhouse, store = sources
    bucket = 3_600 * 10**9
    memory = MemoryTraceSource(SPANS).model_timeline(TraceFilter(), bucket)
    assert store.model_timeline(TraceFilter(), bucket) == memory
    assert clickhouse.model_timeline(TraceFilter(), bucket) == memory
    # Summed over time, each model is its usage_by("model") row: every round once.
    for row in store.usage_by("model", TraceFilter()):
        rows = [u for _, model, u in memory if model == row.key]
        assert sum(u.input_tokens for u in rows) == (row.input_tokens or 0)
        assert sum(u.unpriced_tokens for u in rows) == (row.unpriced_tokens or 0)
        priced = [u.cost for u in rows if u.cost is not None]
        assert (round(sum(priced), 9) if priced else None) == (
            None if row.cost is None else round(row.cost, 9)
        )
    filtered = store.model_timeline(TraceFilter(root_agent="triage"), bucket)
    assert filtered == clickhouse.model_timeline(TraceFilter(root_agent="triage"), bucket) != memory
