"""Every trace-list filter reads the same on ClickHouse (chdb, exporter rows) as on the embedded store
and in memory, with Janux traces (the demo set) and every committed trace of another runtime side by
side: the trace list (whole and paged), its count, the failed handoffs, `usage_by`, the agent map
and the model timeline."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

import pytest

from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import USAGE_DIMENSIONS, TraceFilter, TraceSource
from janux.tracing.sources.store import open_store
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import all_spans, cases

SPANS = [*all_spans(), *demo_traces().spans]
FOREIGN = {case.trace_id for case in cases()}
MEMORY = MemoryTraceSource(SPANS)


def _window() -> TraceFilter:
    """A time range holding the newest third of the foreign traces and the oldest half of the Janux ones."""
    rows = MEMORY.list_traces(TraceFilter(), limit=1_000)
    foreign = sorted(r.start_ns for r in rows if r.trace_id in FOREIGN)
    janux = sorted(r.start_ns for r in rows if r.trace_id not in FOREIGN)
    return TraceFilter(start_ns=foreign[len(foreign) * 2 // 3], end_ns=janux[len(janux) // 2])


def _median_bill() -> float:
    costs = sorted(r.bill_cost for r in MEMORY.list_traces(TraceFilter(), limit=1_000) if r.bill_cost)
    return costs[len(costs) // 2]


FILTERS = {
    "all": TraceFilter(),
    "errors": TraceFilter(status="error"),
    "ok": TraceFilter(status="ok"),
    "failed-handoffs": TraceFilter(has_failed_handoffs=True),
    "root-agent": TraceFilter(root_agent="triage"),
    "root-agent-and-errors": TraceFilter(root_agent="triage", status="error"),
    "min-cost": TraceFilter(min_cost=_median_bill()),
    "time-range": _window(),
    "service": TraceFilter(service="openai-agents-app"),
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChdbClient]:
    client = ChdbClient(str(tmp_path_factory.mktemp("chdb")))  # one embedded server per process
    yield client
    client.close()


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory, client: ChdbClient) -> Iterator[dict[str, TraceSource]]:
    client.command(EXPORTER_DDL)
    client.command(insert_statement(SPANS))
    client.command(insert_statement(SPANS[:40]))  # an exporter retry: rows written twice
    store = open_store(tmp_path_factory.mktemp("store"))
    store.write(SPANS)
    yield {"memory": MEMORY, "store": store, "clickhouse": ClickHouseSource(client)}
    store.close()


def test_every_filter_selects_traces_of_both_kinds() -> None:
    """The cases below compare something: each filter keeps some traces, and (but for the minimum
    cost, which a trace without a bill never meets) some of other runtimes and some of Janux."""
    for name, flt in FILTERS.items():
        kept = {s.trace_id for s in MEMORY.list_traces(flt, limit=1_000)}
        assert kept & FOREIGN or name == "min-cost", name
        assert kept - FOREIGN or name == "service", name


@pytest.mark.parametrize("name", FILTERS)
def test_trace_list_and_count_agree(sources: dict[str, TraceSource], name: str) -> None:
    flt = FILTERS[name]
    want = MEMORY.list_traces(flt, limit=1_000)
    for kind in ("store", "clickhouse"):
        source = sources[kind]
        assert source.list_traces(flt, limit=1_000) == want, kind
        assert source.count_traces(flt) == len(want), kind
        paged = [s for offset in range(0, len(want) + 4, 4) for s in source.list_traces(flt, 4, offset)]
        assert paged == want, kind


@pytest.mark.parametrize("name", FILTERS)
def test_failed_handoff_spans_agree(sources: dict[str, TraceSource], name: str) -> None:
    flt = FILTERS[name]
    want = [(s.trace_id, s.span_id) for s in MEMORY.failed_handoff_spans(flt)]
    for kind in ("store", "clickhouse"):
        assert [(s.trace_id, s.span_id) for s in sources[kind].failed_handoff_spans(flt)] == want, kind
    if name == "failed-handoffs":
        assert {trace_id for trace_id, _ in want} & FOREIGN


@pytest.mark.parametrize("name", FILTERS)
def test_usage_by_agrees(sources: dict[str, TraceSource], name: str) -> None:
    flt = FILTERS[name]
    for dimension in USAGE_DIMENSIONS:
        want = MEMORY.usage_by(dimension, flt, limit=1_000)
        for kind in ("store", "clickhouse"):
            assert sources[kind].usage_by(dimension, flt, limit=1_000) == want, (kind, dimension)


@pytest.mark.parametrize("name", FILTERS)
def test_agent_map_and_model_timeline_agree(sources: dict[str, TraceSource], name: str) -> None:
    flt = FILTERS[name]
    bucket = 600 * 10**9
    want = asdict(MEMORY.agent_map(flt, bucket))
    timeline = MEMORY.model_timeline(flt, bucket)
    for kind in ("store", "clickhouse"):
        assert asdict(sources[kind].agent_map(flt, bucket)) == want, kind
        assert sources[kind].model_timeline(flt, bucket) == timeline, kind


def test_a_foreign_trace_that_grows_is_read_again(client: ChdbClient) -> None:
    """Summaries are kept per span count: a trace whose spans keep arriving is summarized anew."""
    case = next(c for c in cases() if c.truth["scenario"] == "raised")
    spans = sorted(case.spans, key=lambda s: s.start_ns)
    client.command(EXPORTER_DDL.replace("otel_traces", "growing_traces"))
    clickhouse = ClickHouseSource(client, table="growing_traces")
    flt = TraceFilter(has_failed_handoffs=True)
    for stored in (spans[:2], spans):
        # the first two again on the second round: an exporter retry
        client.command(insert_statement(stored).replace("INTO otel_traces", "INTO growing_traces"))
        memory = MemoryTraceSource(stored)
        assert clickhouse.list_traces(TraceFilter()) == memory.list_traces(TraceFilter())
        assert clickhouse.count_traces(flt) == memory.count_traces(flt)
    assert clickhouse.count_traces(flt) == 1
