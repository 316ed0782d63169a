"""The range what-if ("this range if researcher ran on X") gives the same exact figures on every
source: the embedded store, ClickHouse read at query time and ClickHouse's derived tables (chdb),
for the demo scenarios and every foreign fixture, every agent, a list price and a custom one."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from janux.tracing.analysis.facts import UsageAggregate
from janux.tracing.analysis.repricing import RangeRepricing, reprice_agent
from janux.tracing.prices import TokenPrice, flat_list_prices
from janux.tracing.records import SpanRecord
from janux.tracing.sources.protocol import TraceFilter, TraceSource
from janux.tracing.sources.store import open_store
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import all_spans
from tests.support.three_sources import derived_clickhouse, three_sources

ALL = TraceFilter()
LIMIT = 1_000
CUSTOM = TokenPrice("custom", Decimal("0.1"), Decimal("0.3"))


def _spans() -> list[SpanRecord]:
    return [*demo_traces().spans, *all_spans()]


def _prices() -> list[TokenPrice]:
    (mini,) = [p for p in flat_list_prices() if p.name == "openai · gpt-4o-mini"]
    return [mini, CUSTOM]


def _what_ifs(source: TraceSource) -> dict[tuple[str, str], RangeRepricing]:
    agents: list[UsageAggregate] = source.usage_by("agent", ALL, limit=LIMIT)
    return {(g.key, p.name): reprice_agent(agents, g.key, p) for g in agents for p in _prices()}


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], RangeRepricing]:
    """The embedded store's what-ifs (the reference)."""
    with open_store(tmp_path_factory.mktemp("store")) as store:
        store.write(_spans())
        return _what_ifs(store)


def test_the_reference_is_not_vacuous(expected: dict[tuple[str, str], RangeRepricing]) -> None:
    results = list(expected.values())
    assert len({agent for agent, _ in expected}) > 5
    assert any(r.newly_priced_tokens for r in results)  # an unpriced agent priced by the what-if
    assert any(r.still_unpriced for r in results)
    assert any(r.unread for r in results)  # some foreign agent's usage could not be read


def test_clickhouse_at_query_time_gives_the_store_s_figures(
    expected: dict[tuple[str, str], RangeRepricing], tmp_path: Path
) -> None:
    with three_sources(_spans(), tmp_path) as sources:
        assert _what_ifs(sources["clickhouse"]) == expected


def test_clickhouse_derived_tables_give_the_store_s_figures(
    expected: dict[tuple[str, str], RangeRepricing], tmp_path: Path
) -> None:
    with derived_clickhouse(_spans(), tmp_path) as (clickhouse, _):
        assert _what_ifs(clickhouse) == expected
