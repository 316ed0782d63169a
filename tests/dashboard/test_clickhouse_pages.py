"""Pages on the ClickHouse source (real ClickHouse engine via chdb, rows shaped as the Collector's
exporter writes them: every attribute value a string)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from janux.cli.commands.ui import free_port
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from tests.dashboard.app_helpers import OpenPage
from tests.dashboard.shown import rendered
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement
from tests.support.contract_traces import DENY_RULE, TOTAL_COST, contract_trace, plain_trace

CONTRACT_ID = contract_trace()[0].trace_id


@pytest.fixture(scope="module")
def chdb_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChdbClient]:
    client = ChdbClient(str(tmp_path_factory.mktemp("chdb")))
    client.command(EXPORTER_DDL)
    client.command(insert_statement(contract_trace() + plain_trace()))
    yield client
    client.close()


@pytest.fixture(scope="module")
def clickhouse(chdb_client: ChdbClient) -> ClickHouseSource:
    return ClickHouseSource(chdb_client)


def _table(at: Any, *columns: str) -> Any:
    return next(e.value for e in at.dataframe if set(columns) <= set(e.value.columns))


def test_traces_and_trace_pages_on_clickhouse_rows(open_page: OpenPage, clickhouse: ClickHouseSource) -> None:
    at = open_page(clickhouse)
    table = _table(at, "trace", "checks").set_index("trace")
    assert table.loc[CONTRACT_ID, "cost USD"] == TOTAL_COST
    assert table.loc[CONTRACT_ID, "checks"] == "✓ ok"
    at = open_page(clickhouse, "trace.py", trace_id=CONTRACT_ID)
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Total cost"], metrics["Attempts"]) == (fmt.usd(TOTAL_COST), "4")
    assert [s.value for s in at.success] == ["All reconciliation checks pass."]


def test_failures_page_on_clickhouse_rows(open_page: OpenPage, clickhouse: ClickHouseSource) -> None:
    at = open_page(clickhouse, "failures.py")
    table = _table(at, "kind", "reason", "task")
    assert list(table[table["kind"] == "denied"]["reason"]) == [DENY_RULE]


def test_costs_page_on_clickhouse_rows(open_page: OpenPage, clickhouse: ClickHouseSource) -> None:
    """The exact tables come from ClickHouse's own aggregates (`usage_by` in SQL)."""
    at = open_page(clickhouse, "costs.py")
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Recorded cost"], metrics["Traces"]) == (fmt.compact_usd(TOTAL_COST), "2")
    agents = _table(at, "agent", "failed loops").set_index("agent")
    assert agents.loc["researcher", "loops"] == 2 + 2  # the contract's 2 attempts, the plain trace's 2
    assert agents.loc["translator", "own unpriced tokens"] == 100
    assert agents.loc["translator", "own cost USD"] == cells.UNPRICED


def test_clickhouse_choice_without_a_server_says_why(
    open_page: OpenPage, monkeypatch: Any, tmp_path: Path
) -> None:
    monkeypatch.setenv("JANUX_SOURCE", "clickhouse")
    monkeypatch.setenv("JANUX_CLICKHOUSE_PORT", str(free_port()))
    at = open_page(None)
    assert any("cannot open ClickHouse table otel.otel_traces" in rendered(e.value) for e in at.error)
    assert any("No trace source is open" in i.value for i in at.info)


def test_clickhouse_is_selectable_in_the_sidebar(
    open_page: OpenPage, chdb_client: ChdbClient, monkeypatch: Any
) -> None:
    """Choosing "ClickHouse otel_traces" and typing the server's settings opens that table.

    Only the network client is swapped for the in-process ClickHouse engine (chdb) holding the
    same rows; the sidebar, the settings, `open_source` and `ClickHouseSource` are the real ones.
    """
    import clickhouse_connect

    asked: dict[str, Any] = {}

    def get_client(**settings: Any) -> ChdbClient:
        asked.update(settings)
        return chdb_client

    monkeypatch.setattr(clickhouse_connect, "get_client", get_client)
    monkeypatch.setenv("JANUX_ALLOW_SOURCE_EDIT", "1")  # the server lets the page choose the connection
    port = free_port()
    at = open_page(None)
    at.sidebar.radio(key="janux_source_choice").set_value("ClickHouse otel_traces").run()
    at.sidebar.text_input(key="janux_ch_host").set_value("ch.internal").run()
    at.sidebar.number_input(key="janux_ch_port").set_value(port).run()
    at.sidebar.text_input(key="janux_ch_user").set_value("reader").run()
    assert not at.exception
    assert (asked["host"], asked["port"], asked["username"], asked["database"]) == (
        "ch.internal",
        port,
        "reader",
        "otel",
    )
    table = _table(at, "trace", "checks").set_index("trace")
    assert set(table.index) == {CONTRACT_ID, plain_trace()[0].trace_id}
    assert table.loc[CONTRACT_ID, "cost USD"] == TOTAL_COST
