"""Estimates the processor records are shown as estimates: Trace page (AppTest) and `janux trace --json`.

One real SDK run: `triage` (priced by a Janux `Cost`) delegates to a `researcher` without a Cost
(its round gets a genai-prices estimate recorded in the trace), then hands off to `billing`, whose
model names no model (nothing can price it). The dashboard must show the researcher's cost as an
estimate with its price source, never as a recorded cost nor as $0, and billing's tokens as unpriced.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from agents import Agent, set_trace_processors
from genai_prices import Usage as PriceUsage
from genai_prices import __version__ as prices_version
from genai_prices import calc_price

from janux.cli.main import main
from janux.dashboard.ui.view_cache import SHARED
from janux.integrations.openai_agents import JanuxProcessor
from janux.tracing import conventions as c
from janux.tracing.analysis import formatting as fmt
from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from tests.dashboard.app_helpers import run_page, show_section
from tests.dashboard.shown import detail_tables
from tests.integrations.openai_agents.scripts import COSTS, MODEL_NAME, calls, model, price, reply, run
from tests.integrations.openai_agents.verify import checked, spans_named
from tests.support.contract_checker import Traced
from tests.support.three_sources import three_sources

SOURCE = f"genai-prices {prices_version}, recorded in the trace"
"""How the page and the CLI name the origin of the processor's estimates."""
BILLING_TOKENS = 700 + 25
"""The billing round: no Cost, and its model is not named (the SDK's ScriptedModel): unpriced."""


def _list_price(input_tokens: int, output_tokens: int) -> float:
    """genai-prices' own figure for one gpt-4o-mini round (what the estimate must be)."""
    usage = PriceUsage(input_tokens=input_tokens, output_tokens=output_tokens)
    return float(calc_price(usage, MODEL_NAME, provider_id="openai").total_price)


def _desk() -> Agent[None]:
    researcher = Agent(
        name="researcher",
        instructions="Research.",
        model=model("responses", reply("30 days.", 300, 8)),
    )
    billing = Agent(name="billing", instructions="Billing.", model=model("sdk", reply("Refunded.", 700, 25)))
    return Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            "responses",
            calls(("researcher", {"input": "refund rules"}), input_tokens=400, output_tokens=30),
            calls(("transfer_to_billing", {}), input_tokens=600, output_tokens=12),
        ),
        tools=[researcher.as_tool(tool_name="researcher", tool_description="Research.")],
        handoffs=[billing],
    )


@pytest.fixture(autouse=True)
def _isolated_app_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The page reads only the source given to it (not ~/.janux nor a configured source)."""
    for name in ("JANUX_SOURCE", "JANUX_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    SHARED.clear()


async def _traced_desk(traced: Traced) -> list[SpanRecord]:
    set_trace_processors([JanuxProcessor(costs={"triage": COSTS["triage"]}, tracer_provider=traced.provider)])
    outcome = await run(_desk(), "Refund my annual plan?")
    assert outcome.result.final_output == "Refunded."
    records, _ = checked(traced)  # contract checker and every reconciliation check pass
    return records


RECORDED = price("triage", 400, 30) + price("triage", 600, 12)
ESTIMATE = _list_price(300, 8)


async def test_trace_page_shows_the_recorded_estimate_as_an_estimate_with_its_source(traced: Traced) -> None:
    records = await _traced_desk(traced)
    at = run_page(MemoryTraceSource(records), "trace.py", trace_id=records[0].trace_id)
    metrics = {m.label: m.value for m in at.metric}
    assert "Total cost" not in metrics  # labelled an estimate, never passed off as a recorded bill
    assert metrics["Total cost (estimated)"] == fmt.usd(RECORDED + ESTIMATE, estimated=True)
    assert metrics["Unpriced tokens"] == f"{BILLING_TOKENS:,}"  # only billing's: the estimate is not unpriced
    captions = [cap.value for cap in at.caption]
    note = (
        f"Total: recorded {fmt.usd(RECORDED)} + estimated {fmt.usd(ESTIMATE, estimated=True)} for 308 "
        f"tokens without a recorded price (list prices from {SOURCE}), never counted as recorded cost."
    )
    assert fmt.markdown_text(note) in captions
    captions = [cap.value for cap in show_section(at, "Cost per loop").caption]  # drawn when chosen
    sources = f"Estimated costs (≈) come from {SOURCE}; models no table knows stay unpriced."
    assert fmt.markdown_text(sources) in captions
    (loops,) = [e.value for e in at.dataframe if "own unpriced tokens" in e.value.columns]
    rows = {str(row["loop"]).strip(): row for row in loops.to_dict("records")}
    researcher = rows["researcher #1"]
    assert researcher["own cost"] == fmt.usd(ESTIMATE, estimated=True)
    assert researcher["own unpriced tokens"] == 0
    assert rows["billing"]["own unpriced tokens"] == BILLING_TOKENS  # the run, named after its holder
    show_section(at, "Delegations & attempts")
    (delegations,) = [e.value for e in at.dataframe if "attempt errors" in e.value.columns]
    by_tool = {str(row["tool"]): row for row in delegations.to_dict("records")}
    assert by_tool["researcher"]["cost"] == fmt.usd(ESTIMATE, estimated=True)
    assert by_tool["researcher"]["unpriced tokens"] == 0
    assert "price" not in detail_tables(at)  # the root loop is selected: no round, no price


async def test_span_inspector_gives_each_rounds_price_and_its_source(traced: Traced) -> None:
    records = await _traced_desk(traced)
    source = MemoryTraceSource(records)
    sub = spans_named(records, "invoke_agent researcher")[0]
    chats = spans_named(records, "chat")
    (estimated,) = [s for s in chats if s.parent_span_id == sub.span_id]
    (unpriced,) = [s for s in chats if s.attributes.get(c.GEN_AI_AGENT_NAME) == "billing"]
    priced = next(s for s in chats if s.attributes.get(c.GEN_AI_AGENT_NAME) == "triage")
    expected = {
        estimated.span_id: f"Price: {fmt.usd(ESTIMATE, estimated=True)}, an estimate from {SOURCE}: "
        "not a recorded cost.",
        unpriced.span_id: "Price: unpriced (no recorded cost and no estimate): its tokens count as unpriced.",
        priced.span_id: f"Price: {fmt.usd(price('triage', 400, 30))}, recorded (janux.round.cost).",
    }
    for span_id, line in expected.items():
        at = run_page(source, "trace.py", trace_id=records[0].trace_id, span=span_id)
        assert detail_tables(at)["price"]["caption"] == line


async def test_trace_json_reports_an_estimated_cost_and_its_parts(
    traced: Traced, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = await _traced_desk(traced)
    with open_store(tmp_path / "store") as store:
        store.write(records)
    trace_id = records[0].trace_id
    assert main(["trace", trace_id, "--json", "--data-dir", str(tmp_path / "store")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cost_kind"] == "estimated"
    assert math.isclose(report["estimated_cost_usd"], ESTIMATE, rel_tol=1e-9)
    assert math.isclose(report["recorded_cost_usd"], RECORDED, rel_tol=1e-9)
    assert math.isclose(report["cost_usd"], RECORDED + ESTIMATE, rel_tol=1e-9)
    assert (report["unpriced_tokens"], report["estimated_tokens"]) == (BILLING_TOKENS, 308)
    assert report["price_sources"] == [SOURCE]
    assert report["checks"] == {"turn_vs_rounds": "pass", "bill_vs_turns": "pass", "usage_read": "pass"}
    nodes = {node["agent"]: node for node in report["tree"]["nodes"]}
    own = nodes["researcher"]["own"]
    assert (own["cost_kind"], own["recorded_cost_usd"], own["unpriced_tokens"]) == ("estimated", None, 0)
    assert math.isclose(own["estimated_cost_usd"], ESTIMATE, rel_tol=1e-9)
    (edge,) = [e for e in report["tree"]["edges"] if e["kind"] == "delegate"]
    assert edge["usage"]["cost_kind"] == "estimated"
    assert main(["trace", trace_id, "--data-dir", str(tmp_path / "store")]) == 0
    tree = capsys.readouterr().out
    assert f"researcher: own 300 in / 8 out, {fmt.usd(ESTIMATE, estimated=True)}" in tree
    assert f"estimated costs (≈) from: {SOURCE}" in tree


async def test_a_run_with_no_cost_at_all_is_estimated_never_unpriced_or_zero(traced: Traced) -> None:
    """`instrument()` without costs: the recorded bill has no cost; the page shows the estimate."""
    set_trace_processors([JanuxProcessor(tracer_provider=traced.provider)])
    desk = _desk()
    desk.handoffs = []
    desk.model = model("responses", calls(("researcher", {"input": "q"}), input_tokens=400, output_tokens=30),
                       reply("Done.", 600, 12))  # fmt: skip
    await run(desk, "Refund?")
    records, view = checked(traced)
    assert view.bill is not None and view.bill.cost is None
    total = ESTIMATE + _list_price(400, 30) + _list_price(600, 12)
    at = run_page(MemoryTraceSource(records), "trace.py", trace_id=records[0].trace_id)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Total cost (estimated)"] == fmt.usd(total, estimated=True)
    assert metrics["Unpriced tokens"] == "0"


async def test_the_trace_list_shows_the_estimate_and_the_page_s_unpriced_tokens(
    traced: Traced, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The list agrees with the Trace page: recorded cost, the estimate beside it, and only the
    tokens nothing priced as unpriced (not the estimated rounds' too, as the bill counts them)."""
    records = await _traced_desk(traced)
    trace_id = records[0].trace_id
    with three_sources(records, tmp_path) as sources:
        for kind, source in sources.items():
            (summary,) = source.list_traces(TraceFilter())
            assert summary.bill_cost_estimate is not None, kind
            assert math.isclose(summary.bill_cost_estimate, ESTIMATE, rel_tol=1e-9), kind
            # the run's first agent, and the path of the transfer the contract's turn span records
            assert (summary.root_agent, summary.agent_path) == ("triage", ("triage", "billing")), kind
            at = run_page(source, "traces.py")
            (table,) = [e for e in at.dataframe if "estimated USD" in e.value.columns]
            row = table.value.set_index("trace").loc[trace_id]
            assert math.isclose(row["cost USD"], RECORDED, rel_tol=1e-9), kind
            assert math.isclose(row["estimated USD"], ESTIMATE, rel_tol=1e-9), kind
            assert row["unpriced tokens"] == BILLING_TOKENS, kind
    assert main(["traces", "--json", "--data-dir", str(tmp_path / "store")]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    listed = json.loads(line)
    assert math.isclose(listed["estimated_cost_usd"], ESTIMATE, rel_tol=1e-9)
    assert listed["unpriced_tokens"] == BILLING_TOKENS
