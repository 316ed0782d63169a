"""A loop that transferred is one node per agent that held the conversation (agent segments), on the
Trace page's model, the structure every source reads, `usage_by`, the agent map and the CLI's JSON;
and a turn whose loop raised is failed on every surface, whether or not a handoff failed.

The runs are real runtime turns (scripted models) traced into memory; the expected figures are the
scripted rounds priced by each agent's own `Cost`, and the runtime's own `RunResult.bill`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.runtime import Agent, Cost, HandoffPolicy
from janux.runtime.result import RunResult
from janux.runtime.testing import ScriptedModel, call_tools, fail, reply, transfer
from janux.tracing.analysis.api_json import trace_row
from janux.tracing.analysis.readers.structure import structure_facts
from janux.tracing.analysis.report import trace_report
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sdk.convert import span_records_from_readable
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter, TraceSource
from tests.support.clickhouse_rows import insert_statement
from tests.support.three_sources import derived_clickhouse, three_sources

TRIAGE = Cost(input=1.0, output=2.0)
BILLING = Cost(input=4.0, output=8.0)


def _usd(cost: Cost, tokens_in: int, tokens_out: int) -> float:
    return (tokens_in * cost.input + tokens_out * cost.output) / 1e6


def _traced(agent: Agent, text: str = "charged twice") -> tuple[RunResult | BaseException, list[SpanRecord]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    outcome: RunResult | BaseException
    try:
        outcome = asyncio.run(agent.run(text, thread_id="t-seg", tracer_provider=provider))
    except Exception as exc:  # the run's own outcome, compared below with the trace's status
        outcome = exc
    provider.shutdown()
    return outcome, list(span_records_from_readable(exporter.get_finished_spans()))


def _transfer(*, billing_fails: bool = False, billing_priced: bool = True) -> Agent:
    """triage (1 round: transfer) -> billing: a transfer to refunds (denied by billing's deny-list),
    then an answer (or a failing round)."""
    refunds = Agent("refunds", model=ScriptedModel([reply("never")], model_name="m-refunds"))
    done = reply("Done.", input_tokens=30, output_tokens=3)
    last = fail("upstream returned 503") if billing_fails else done
    billing = Agent(
        "billing",
        model=ScriptedModel(
            [call_tools(transfer("refunds", "a refund"), input_tokens=200, output_tokens=20), last],
            model_name="m-billing",
        ),
        handoffs=[refunds],
        cost=BILLING if billing_priced else None,
        policy=HandoffPolicy(denied_tools=["handoff.refunds"]),
    )
    triage_model = ScriptedModel(
        [call_tools(transfer("billing", "double charge"), input_tokens=100, output_tokens=10)],
        model_name="m-triage",
    )
    return Agent("triage", model=triage_model, handoffs=[billing], cost=TRIAGE)


def test_a_transfer_is_one_node_per_agent_with_its_own_rounds() -> None:
    result, spans = _traced(_transfer())
    assert isinstance(result, RunResult)
    view = reconstruct(spans)
    assert [(n.agent, n.segment) for n in view.nodes] == [("triage", 0), ("billing", 1)]
    own = {n.agent: n.own for n in view.nodes}
    assert (own["triage"].input_tokens, own["triage"].output_tokens, own["triage"].rounds) == (100, 10, 1)
    assert own["triage"].cost == pytest.approx(_usd(TRIAGE, 100, 10))
    assert (own["billing"].input_tokens, own["billing"].output_tokens, own["billing"].rounds) == (230, 23, 2)
    assert own["billing"].cost == pytest.approx(_usd(BILLING, 230, 23))
    # The segments add up to the loop's janux.turn.* and to the runtime's own bill: nothing twice.
    total = own["triage"] + own["billing"]
    assert (total.input_tokens, total.output_tokens) == (result.bill.input_tokens, result.bill.output_tokens)
    assert total.cost == pytest.approx(result.bill.cost)
    assert all(check.ok for check in view.checks), [c.message for c in view.checks if not c.ok]
    handoffs = [(d.caller, d.target, d.status, view.nodes[d.parent_node or 0].agent)
                for d in view.delegations]  # fmt: skip
    # The denied transfer is billing's: made by the round after the transfer.
    assert handoffs == [
        ("triage", "billing", "completed", "triage"), ("billing", "refunds", "denied", "billing")
    ]  # fmt: skip
    links = [(n.transferred_from, n.transferred_to) for n in view.nodes]
    assert links == [(None, "billing"), ("triage", None)]
    assert view.nodes[0].start_ns + view.nodes[0].duration_ns == view.nodes[1].start_ns
    assert all(n.duration_ns > 0 for n in view.nodes)


def test_every_surface_counts_the_callers_round_for_the_caller(tmp_path: Path) -> None:
    result, spans = _traced(_transfer(billing_priced=False))
    assert isinstance(result, RunResult)
    # billing has no price and its own model: its rounds are unpriced, never billed at triage's rates
    expected = {"triage": (100, 10, _usd(TRIAGE, 100, 10), 0), "billing": (230, 23, None, 253)}
    facts = structure_facts(spans)
    got = {a.name: (a.input_tokens, a.output_tokens, a.cost, a.unpriced_tokens) for a in facts.agents}
    assert got == expected
    report = trace_report(reconstruct(spans))
    nodes = [(n["agent"], n["own"]["input_tokens"], n["own"]["unpriced_tokens"])
             for n in report["tree"]["nodes"]]  # fmt: skip
    assert nodes == [("triage", 100, 0), ("billing", 230, 253)]
    with three_sources(spans, tmp_path) as sources:
        for kind, source in sources.items():
            groups = {g.key: g for g in source.usage_by("agent", TraceFilter())}
            got = {k: (g.input_tokens, g.output_tokens, g.cost, g.unpriced_tokens) for k, g in groups.items()}
            assert got.keys() == expected.keys(), kind
            for agent, (tokens_in, tokens_out, cost, unpriced) in expected.items():
                assert got[agent][:2] == (tokens_in, tokens_out), (kind, agent)
                assert got[agent][2] == (None if cost is None else pytest.approx(cost)), (kind, agent)
                assert got[agent][3] == unpriced, (kind, agent)
            agent_map = source.agent_map(TraceFilter())
            own = {n.agent: n.own.input_tokens for n in agent_map.nodes}
            assert own == {"triage": 100, "billing": 230}, kind
            edges = {(e.caller, e.target) for e in agent_map.edges}
            assert edges == {("triage", "billing"), ("billing", "refunds")}, kind
    with derived_clickhouse(spans, tmp_path) as (derived, _):
        groups = {g.key: (g.input_tokens, g.output_tokens) for g in derived.usage_by("agent", TraceFilter())}
        assert groups == {agent: want[:2] for agent, want in expected.items()}
        assert {n.agent: n.own.input_tokens for n in derived.agent_map(TraceFilter()).nodes} == {
            "triage": 100, "billing": 230,
        }  # fmt: skip


def test_the_trace_list_names_the_first_agent_and_shows_the_path(tmp_path: Path) -> None:
    # The list's agents cell, its root-agent filter (and drop-down) and `janux traces --json` name
    # the agent the user called first, triage, and show who held the conversation after it.
    result, spans = _traced(_transfer())
    assert isinstance(result, RunResult)
    trace_id = spans[0].trace_id

    def agree(kind: str, source: TraceSource) -> None:
        (row,) = source.list_traces(TraceFilter())
        assert (row.root_agent, row.agent_path, row.agents_shown) == (
            "triage", ("triage", "billing"), "triage → billing"
        ), kind  # fmt: skip
        assert [s.trace_id for s in source.list_traces(TraceFilter(root_agent="triage"))] == [trace_id], kind
        assert source.list_traces(TraceFilter(root_agent="billing")) == [], kind
        assert source.count_traces(TraceFilter(root_agent="triage")) == 1, kind
        assert "triage" in source.distinct_values("root_agent"), kind
        json_row = trace_row(row, None)
        assert (json_row["root_agent"], json_row["agent_path"]) == ("triage", ["triage", "billing"]), kind

    with three_sources(spans, tmp_path) as sources:
        for kind, source in sources.items():
            agree(kind, source)
    with derived_clickhouse(spans, tmp_path / "derived") as (derived, _):
        agree("clickhouse derived", derived)
    # One agent throughout: no path, the agent itself.
    alone = Agent("solo", model=ScriptedModel([reply("hi")], model_name="m-solo"))
    _, solo_spans = _traced(alone)
    (row,) = MemoryTraceSource(solo_spans).list_traces(TraceFilter())
    assert (row.root_agent, row.agent_path, row.agents_shown) == ("solo", (), "solo")


def test_a_turn_that_raised_after_a_transfer_is_failed_everywhere() -> None:
    outcome, spans = _traced(_transfer(billing_fails=True))
    assert isinstance(outcome, Exception)  # the runtime's own outcome: the turn failed
    view = reconstruct(spans)
    assert [(n.agent, n.status) for n in view.nodes] == [("triage", "ok"), ("billing", "error")]
    assert [(f.kind, f.target) for f in view.failures] == [("error", "billing"), ("denied", "refunds")]
    assert trace_report(view)["status"] == "failed"
    (summary,) = MemoryTraceSource(spans).list_traces(TraceFilter())
    assert trace_row(summary, view)["status"] == "failed"


def test_a_turn_whose_loop_raised_without_any_handoff_is_failed() -> None:
    agent = Agent("triage", model=ScriptedModel([fail("upstream returned 503")], model_name="m"), cost=TRIAGE)
    outcome, spans = _traced(agent)
    assert isinstance(outcome, Exception)
    view = reconstruct(spans)
    assert not view.delegations
    assert trace_report(view)["status"] == "failed"
    (summary,) = MemoryTraceSource(spans).list_traces(TraceFilter())
    row = trace_row(summary, view)
    assert (row["status"], row["failed_handoffs"]) == ("failed", 0)
    assert row["failure"] == "error: model_error"


def test_a_denied_transfer_splits_nothing() -> None:
    billing = Agent("billing", model=ScriptedModel([reply("never")], model_name="m-billing"), cost=BILLING)
    triage_model = ScriptedModel(
        [
            call_tools(transfer("billing", "x"), input_tokens=100, output_tokens=10),
            reply("I will answer myself.", input_tokens=50, output_tokens=5),
        ],
        model_name="m-triage",
    )
    from janux.runtime import HandoffPolicy

    triage = Agent("triage", model=triage_model, handoffs=[billing], cost=TRIAGE,
                   policy=HandoffPolicy(denied_tools=["handoff.billing"]))  # fmt: skip
    result, spans = _traced(triage)
    assert isinstance(result, RunResult)
    view = reconstruct(spans)
    assert [n.agent for n in view.nodes] == ["triage"]
    assert view.nodes[0].own_source == "recorded" and view.nodes[0].own.input_tokens == 150
    assert [(d.kind, d.status) for d in view.delegations] == [("transfer", "denied")]


def test_a_clickhouse_database_of_schema_6_reads_and_upgrades_to_the_path(tmp_path: Path) -> None:
    # Facts rows written before schema 7 have no `agent_path` column: the source reads them with an
    # empty path until `init` adds it, and a trace derived after the upgrade carries its path.
    _, spans = _traced(_transfer())
    with derived_clickhouse(spans, tmp_path) as (_, client):
        client.command(f"ALTER TABLE {schema.FACTS} DROP COLUMN agent_path")
        client.command(f"TRUNCATE TABLE {schema.SCHEMA}")
        client.command(f"INSERT INTO {schema.SCHEMA} (version, applied) VALUES (6, now64(3))")
        (row,) = ClickHouseSource(client).list_traces(TraceFilter())
        assert row.agent_path == ()
        assert schema.init(client) == schema.SCHEMA_VERSION == 9
        (row,) = ClickHouseSource(client).list_traces(TraceFilter())
        assert row.agent_path == ()  # derived before the upgrade
        _, again = _traced(_transfer())
        client.command(insert_statement(again))
        derive_pending(client, quiet_s=0)
        rows = {r.trace_id: r for r in ClickHouseSource(client).list_traces(TraceFilter())}
        assert rows[again[0].trace_id].agent_path == ("triage", "billing")
