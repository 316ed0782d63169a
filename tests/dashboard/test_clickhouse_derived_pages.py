"""Pages on a derived ClickHouse source (`janux clickhouse init` + the deriver, on chdb): the Traces,
Trace, Costs, Failures and Agent map pages show the derived facts, and the Traces page says how
many received traces are still being derived instead of leaving them silently out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from janux.tracing.analysis import formatting as fmt
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from tests.dashboard.app_helpers import OpenPage, chart_data
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement
from tests.support.contract_traces import DENY_RULE, TOTAL_COST, contract_trace, plain_trace
from tests.support.demo_traces import demo_traces

CONTRACT_ID = contract_trace()[0].trace_id


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ClickHouseSource, ChdbClient]]:
    client = ChdbClient(str(tmp_path_factory.mktemp("chdb")))
    try:
        client.command(EXPORTER_DDL)
        client.command(insert_statement(contract_trace() + plain_trace()))
        schema.init(client)
        derive_pending(client, quiet_s=0)
        yield ClickHouseSource(client), client
    finally:
        client.close()


def _table(at: Any, *columns: str) -> Any:
    return next(e.value for e in at.dataframe if set(columns) <= set(e.value.columns))


def test_traces_trace_costs_and_failures_pages(
    open_page: OpenPage, derived: tuple[ClickHouseSource, Any]
) -> None:
    source, _ = derived
    at = open_page(source)
    table = _table(at, "trace", "checks").set_index("trace")
    assert table.loc[CONTRACT_ID, "cost USD"] == TOTAL_COST and len(table) == 2
    assert not any("still being derived" in c.value for c in at.caption)
    at = open_page(source, "trace.py", trace_id=CONTRACT_ID)
    assert {m.label: m.value for m in at.metric}["Total cost"] == fmt.usd(TOTAL_COST)
    at = open_page(source, "costs.py")
    assert {m.label: m.value for m in at.metric}["Traces"] == "2"
    at = open_page(source, "failures.py")
    failures = _table(at, "kind", "reason", "task")
    assert list(failures[failures["kind"] == "denied"]["reason"]) == [DENY_RULE]
    expected = MemoryTraceSource(contract_trace() + plain_trace()).agent_map(TraceFilter())
    at = open_page(source, "agent_map.py")
    dot = "\n".join(chart_data(at, "choice", "detail")["detail"])
    assert expected.nodes
    for node in expected.nodes:  # the memory source's map, drawn from the derived tables
        assert f"{node.agent} · {node.runs:,} runs" in dot
    # an inspected edge lists its newest failures and delegations, read for it alone (`map_refs`)
    memory = MemoryTraceSource(contract_trace() + plain_trace())
    edge = next(e for e in expected.edges if e.failed)
    refs = memory.map_refs(TraceFilter(), edge.key)
    at.selectbox(key="map_inspect").set_value(f"edge: {edge.caller} → {edge.target} ({edge.kind})").run()
    assert not at.exception, at.exception
    assert list(_table(at, "started (UTC)", "kind", "reason")["trace"]) == [f.trace_id for f in refs.failures]
    delegations = _table(at, "started (UTC)", "trace", "span")
    assert list(delegations["span"]) == [r.span_id for r in refs.recent] and refs.recent


def test_the_traces_page_says_how_many_traces_are_still_being_derived(
    open_page: OpenPage, derived: tuple[ClickHouseSource, ChdbClient]
) -> None:
    source, client = derived
    spans = list(demo_traces().spans)
    client.command(insert_statement(spans))  # received, not derived yet (no deriver run since)
    pending = len({s.trace_id for s in spans})
    at = open_page(source)
    assert [c.value for c in at.caption if "still being derived" in c.value] == [
        f"{pending:,} traces still being derived: received, not in this list and its totals yet "
        "(the ClickHouse deriver adds them once quiet)."
    ]
    assert len(_table(at, "trace", "checks")) == 2  # the derived ones; the others are counted above
