"""`usage_by`: cost and tokens by agent, delegation tool, model and conversation, counted once.

The same spans go into the embedded store, into `otel_traces` in chdb (rows shaped as the
Collector's ClickHouse exporter writes them, both enum spellings, some rows written twice) and
into the in-memory source; all three must give the same groups.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from janux.tracing import conventions as c
from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import USAGE_DIMENSIONS, TraceFilter, TraceSource, UsageAggregate
from janux.tracing.sources.store import open_store
from janux.tracing.sources.store.schema import DB_FILE_NAME
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement
from tests.support.demo_traces import demo_traces
from tests.support.otlp_build import record

T1, T2 = "1" * 32, "2" * 32


def _agent(span_id: str, parent: str, name: str, turn: tuple[Any, ...], **kw: Any) -> SpanRecord:
    attrs = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: name}
    attrs.update({k: v for k, v in zip(c.TURN_USAGE_KEYS, turn, strict=True) if v is not None})
    attrs.update(kw.pop("attrs", {}))
    return record(span_id, parent, f"invoke_agent {name}", attrs, trace_id=kw.pop("trace_id", T1), **kw)


def _chat(
    span_id: str, parent: str, model: str, usage: tuple[int, int, float | None], **kw: Any
) -> SpanRecord:
    attrs: dict[str, Any] = {
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
        c.GEN_AI_REQUEST_MODEL: model,
        c.GEN_AI_USAGE_INPUT_TOKENS: usage[0],
        c.GEN_AI_USAGE_OUTPUT_TOKENS: usage[1],
    }
    if usage[2] is not None:
        attrs[c.JANUX_ROUND_COST] = usage[2]
    return record(span_id, parent, f"chat {model}", attrs, trace_id=kw.pop("trace_id", T1), **kw)


def _delegate(span_id: str, parent: str, tool: str, status: str) -> SpanRecord:
    attrs = {
        c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
        c.GEN_AI_TOOL_NAME: tool,
        c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_DELEGATE,
        c.JANUX_HANDOFF_STATUS: status,
    }
    return record(span_id, parent, f"execute_tool {tool}", attrs, trace_id=T1, start=1_010)


def hand_built() -> list[SpanRecord]:
    """A janux turn (a retried delegation with a nested one inside, a failed unpriced delegation)
    and a plain GenAI trace of another runtime."""
    bill = {c.GEN_AI_CONVERSATION_ID: "c1"} | dict(zip(c.BILL_KEYS, (165, 40, 0.51, 40), strict=True))
    janux = [
        _agent("a1" * 8, "", "planner", (100, 20, 0.3, 0), attrs=bill, start=1_000),
        _chat("c1" * 8, "a1" * 8, "gpt-4o", (60, 10, 0.2)),
        _chat("c2" * 8, "a1" * 8, "gpt-4o", (40, 10, 0.1)),
        _delegate("d1" * 8, "a1" * 8, "delegate.researcher", c.STATUS_COMPLETED),
        _agent("a2" * 8, "d1" * 8, "researcher", (10, 0, 0.05, 0), status="Error"),
        _chat("c3" * 8, "a2" * 8, "gpt-4o", (10, 0, 0.05), status="Error"),
        _agent("a3" * 8, "d1" * 8, "researcher", (20, 5, 0.15, 0)),
        _chat("c4" * 8, "a3" * 8, "gpt-4o", (20, 5, 0.15)),
        _delegate("d3" * 8, "a3" * 8, "delegate.writer", c.STATUS_COMPLETED),
        _agent("a5" * 8, "d3" * 8, "writer", (5, 5, 0.01, 0)),
        _chat("c6" * 8, "a5" * 8, "gpt-4o-mini", (5, 5, 0.01)),
        _delegate("d2" * 8, "a1" * 8, "delegate.fact_checker", c.STATUS_FAILED),
        _agent("a4" * 8, "d2" * 8, "fact_checker", (30, 10, None, 40), status="Error"),
        _chat("c5" * 8, "a4" * 8, "llama", (30, 10, None)),
    ]
    other = [
        _agent("b1" * 8, "", "triage", (None,) * 4, trace_id=T2, start=5_000),
        _chat("b2" * 8, "b1" * 8, "gpt-4o", (7, 3, None), trace_id=T2, start=5_001),
        # Usage reported on an agent span counts only where nothing below it carries any (here).
        _agent(
            "b3" * 8,
            "b1" * 8,
            "sub",
            (None,) * 4,
            trace_id=T2,
            attrs={c.GEN_AI_USAGE_INPUT_TOKENS: 1000},
            start=5_002,
        ),
    ]
    return janux + other


def demo_spans() -> list[SpanRecord]:
    """The runtime's demo scenarios, traced with an SDK TracerProvider into memory."""
    return list(demo_traces().spans)


Sources = dict[str, TraceSource]


@pytest.fixture(scope="module")
def chdb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChdbClient]:
    client = ChdbClient(str(tmp_path_factory.mktemp("chdb")))
    yield client
    client.close()


def _three_sources(spans: list[SpanRecord], table: str, chdb: ChdbClient, data_dir: Path) -> Sources:
    chdb.command(EXPORTER_DDL.replace("otel_traces", table))
    chdb.command(insert_statement(spans).replace("otel_traces", table))
    chdb.command(insert_statement(spans[::3]).replace("otel_traces", table))  # exporter retries
    store = open_store(data_dir)
    store.write(spans)
    store.write(spans[::2])  # a client retry: stored once
    return {"store": store, "clickhouse": ClickHouseSource(chdb, table), "memory": MemoryTraceSource(spans)}


@pytest.fixture(scope="module")
def hand(chdb: ChdbClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sources]:
    sources = _three_sources(hand_built(), "hand_traces", chdb, tmp_path_factory.mktemp("hand"))
    yield sources
    sources["store"].close()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def demo(chdb: ChdbClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sources]:
    sources = _three_sources(demo_spans(), "demo_traces", chdb, tmp_path_factory.mktemp("demo"))
    yield sources
    sources["store"].close()  # type: ignore[attr-defined]


def _g(
    key: str, count: int, failed: int, i: int | None, o: int | None, cost: float | None, u: int | None
) -> UsageAggregate:
    return UsageAggregate(
        key=key, count=count, failed=failed, input_tokens=i, output_tokens=o, cost=cost, unpriced_tokens=u
    )


EXPECTED = {
    "agent": [
        _g("planner", 1, 0, 100, 20, 0.3, 0),
        _g("researcher", 2, 1, 30, 5, 0.2, 0),
        _g("writer", 1, 0, 5, 5, 0.01, 0),
        # Another runtime's loops: own usage is the sum of their own model calls; "sub" has none
        # and nothing below it carries usage, so the 1000 tokens its agent span reports are its own
        # (`readers.agent_usage`: usage at the finest level that carries it, never two levels).
        _g("sub", 1, 0, 1000, 0, None, 1000),
        _g("fact_checker", 1, 1, 30, 10, None, 40),
        _g("triage", 1, 0, 7, 3, None, 10),
    ],
    # The researcher tool holds its two attempts only; the writer delegation made inside attempt 2
    # is counted under its own tool.
    "tool": [
        _g("delegate.researcher", 1, 0, 30, 5, 0.2, 0),
        _g("delegate.writer", 1, 0, 5, 5, 0.01, 0),
        # Another runtime's agent nested directly in another is a delegation too (named after it).
        _g("sub", 1, 0, 1000, 0, None, 1000),
        _g("delegate.fact_checker", 1, 1, 30, 10, None, 40),
    ],
    "model": [
        _g("gpt-4o", 5, 1, 137, 28, 0.5, 10),
        _g("gpt-4o-mini", 1, 0, 5, 5, 0.01, 0),
        _g("llama", 1, 0, 30, 10, None, 40),
    ],
    "conversation": [
        _g("c1", 1, 1, 165, 40, 0.51, 40),
        _g("", 1, 0, 7, 3, None, 10),
    ],
}


@pytest.mark.parametrize("kind", ["store", "clickhouse", "memory"])
@pytest.mark.parametrize("dimension", USAGE_DIMENSIONS)
def test_each_source_follows_the_accounting_rule(hand: Sources, kind: str, dimension: str) -> None:
    assert hand[kind].usage_by(dimension, TraceFilter()) == EXPECTED[dimension]  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["store", "clickhouse", "memory"])
def test_filters_limit_and_unknown_dimension(hand: Sources, kind: str) -> None:
    source = hand[kind]
    assert source.usage_by("conversation", TraceFilter(start_ns=4_000)) == [EXPECTED["conversation"][1]]
    assert source.usage_by("model", TraceFilter(root_agent="planner"), limit=1) == [
        _g("gpt-4o", 4, 1, 130, 25, 0.5, 0)
    ]
    assert source.usage_by("agent", TraceFilter(trace_id="9")) == []
    with pytest.raises(ValueError, match="dimension: expected one of agent, tool, model, conversation"):
        source.usage_by("service", TraceFilter())  # type: ignore[arg-type]


FILTERS = [
    TraceFilter(),
    TraceFilter(status="error"),
    TraceFilter(has_failed_handoffs=True),
    TraceFilter(min_cost=0.004),
]


@pytest.mark.parametrize("dimension", USAGE_DIMENSIONS)
@pytest.mark.parametrize("flt", FILTERS, ids=[str(i) for i in range(len(FILTERS))])
def test_three_sources_agree_on_the_demo_scenarios(demo: Sources, dimension: str, flt: TraceFilter) -> None:
    got = {kind: source.usage_by(dimension, flt) for kind, source in demo.items()}  # type: ignore[arg-type]
    assert got["store"], "the demo data has usage in every dimension"
    assert got["clickhouse"] == got["store"] == got["memory"]


def _totals(groups: list[UsageAggregate]) -> tuple[int, int, float, int]:
    return (
        sum(g.input_tokens or 0 for g in groups),
        sum(g.output_tokens or 0 for g in groups),
        round(sum(g.cost or 0.0 for g in groups), 9),
        sum(g.unpriced_tokens or 0 for g in groups),
    )


def test_demo_totals_agree_across_dimensions(demo: Sources) -> None:
    store = demo["store"]
    by = {d: store.usage_by(d, TraceFilter(), limit=10_000) for d in USAGE_DIMENSIONS}
    # Own loops (agent) == rounds (model) == whole-turn bills (conversation): nothing counted twice.
    assert _totals(by["agent"]) == _totals(by["model"]) == _totals(by["conversation"])
    assert sum(g.count for g in by["conversation"]) == store.count_traces(TraceFilter())
    assert any(g.cost is None and g.unpriced_tokens for g in by["agent"]), "an unpriced subagent"
    tool_tokens = _totals(by["tool"])[0]
    assert 0 < tool_tokens < _totals(by["agent"])[0]


def test_upgrade_from_a_store_without_usage_rows(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        store.write(hand_built())
    with sqlite3.connect(tmp_path / DB_FILE_NAME) as conn:  # the shape schema version 1 had
        conn.execute("DROP TABLE span_usage")
        conn.execute("PRAGMA user_version = 1")
    with open_store(tmp_path) as store:
        for dimension in USAGE_DIMENSIONS:
            assert store.usage_by(dimension, TraceFilter()) == EXPECTED[dimension]


def test_prune_removes_usage_rows(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        store.write(hand_built())
        store.prune(older_than_days=0)
        assert store.usage_by("model", TraceFilter()) == []
    with sqlite3.connect(tmp_path / DB_FILE_NAME) as conn:
        assert conn.execute("SELECT count(*) FROM span_usage").fetchone()[0] == 0


def test_odd_numbers_count_as_absent_not_fatal(chdb: ChdbClient, tmp_path: Path) -> None:
    odd: tuple[Any, ...] = ("12.7", math.inf, math.nan, True)  # input, output, cost, unpriced
    spans = [
        _agent("e1" * 8, "", "odd", odd, attrs=dict(zip(c.BILL_KEYS, odd, strict=True))),
        _chat("e2" * 8, "e1" * 8, "m", (math.inf, "7", math.nan)),  # type: ignore[arg-type]
    ]
    chdb.command(EXPORTER_DDL.replace("otel_traces", "odd_traces"))
    chdb.command(insert_statement(spans).replace("otel_traces", "odd_traces"))
    with open_store(tmp_path) as store:
        store.write(spans)
        for source in (store, ClickHouseSource(chdb, "odd_traces")):
            assert source.usage_by("agent", TraceFilter()) == [_g("odd", 1, 0, 12, None, None, None)]
            assert source.usage_by("model", TraceFilter()) == [_g("m", 1, 0, None, 7, None, 7)]
            assert source.usage_by("conversation", TraceFilter()) == [_g("", 1, 0, 12, None, None, None)]
            (summary,) = source.list_traces(TraceFilter())
            assert (summary.bill_input_tokens, summary.bill_output_tokens, summary.bill_cost) == (
                12,
                None,
                None,
            )


def test_upgrade_rebuilds_usage_rows_of_an_older_layout(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        store.write(hand_built())
    with sqlite3.connect(tmp_path / DB_FILE_NAME) as conn:  # the layout schema versions 2 and 3 had
        conn.execute("DROP TABLE span_usage")
        conn.execute(
            "CREATE TABLE span_usage (TraceId TEXT, SpanId TEXT, ParentSpanId TEXT, Dim TEXT, Key TEXT, "
            "InputTokens INTEGER, OutputTokens INTEGER, Cost REAL, Unpriced INTEGER, Failed INTEGER, "
            "PRIMARY KEY (TraceId, SpanId)) WITHOUT ROWID"
        )
        conn.execute("CREATE INDEX span_usage_parent ON span_usage (TraceId, ParentSpanId, Dim)")
        conn.execute("PRAGMA user_version = 3")
    with open_store(tmp_path) as store:
        for dimension in USAGE_DIMENSIONS:
            assert store.usage_by(dimension, TraceFilter()) == EXPECTED[dimension]
    with sqlite3.connect(tmp_path / DB_FILE_NAME) as conn:
        indexes = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")]
    assert "span_usage_parent" not in indexes


def test_tool_usage_finds_attempts_by_key_prefix(tmp_path: Path) -> None:
    # Walking a trace's rows for every tool span would be quadratic in big traces.
    from janux.tracing.sources.store.queries import _TOOL_USAGE

    with open_store(tmp_path) as store:
        store.write(hand_built())
    sql = "EXPLAIN QUERY PLAN " + _TOOL_USAGE.format(traces="SELECT TraceId FROM trace_summary")
    with sqlite3.connect(tmp_path / DB_FILE_NAME) as conn:
        plan = " ".join(str(r[3]) for r in conn.execute(sql))
    assert "SEARCH a USING PRIMARY KEY (TraceId=? AND ParentSpanId=?)" in plan


@pytest.mark.parametrize("kind", ["store", "clickhouse", "memory"])
def test_reconciliation_flag_of_the_trace_list(hand: Sources, demo: Sources, kind: str) -> None:
    flags = {s.trace_id: s.bill_reconciled for s in hand[kind].list_traces(TraceFilter())}
    assert flags == {T1: True, T2: None}  # the janux bill equals its turns; no bill, nothing to check
    demo_flags = {s.bill_reconciled for s in demo[kind].list_traces(TraceFilter(), limit=1_000)}
    assert demo_flags == {True}


def test_reconciliation_flag_catches_a_bill_that_differs(chdb: ChdbClient, tmp_path: Path) -> None:
    spans = hand_built()
    spans[0].attributes[c.JANUX_BILL_COST] = 0.52  # one cent more than the turns add up to
    sources = _three_sources(spans, "wrong_bill", chdb, tmp_path)
    for kind in ("store", "clickhouse", "memory"):
        flags = {s.trace_id: s.bill_reconciled for s in sources[kind].list_traces(TraceFilter())}
        assert flags == {T1: False, T2: None}, kind
    sources["store"].close()  # type: ignore[attr-defined]


def test_three_sources_list_the_demo_traces_alike(demo: Sources) -> None:
    lists = {kind: source.list_traces(TraceFilter(), limit=1_000) for kind, source in demo.items()}
    assert lists["clickhouse"] == lists["store"] == lists["memory"]
