"""One figure on every surface: random runs of the runtime (delegations in parallel, retries, failed
delegations, a transfer, a target that fails after taking over, unpriced agents) traced into memory,
and each agent's own tokens and money read off every surface that shows them, all equal to what the
scripted rounds say and, summed, to the runtime's own `RunResult.bill`.

Surfaces: the Trace page's model (`reconstruct`: nodes and header), the structure every source reads
(`structure_facts`), `usage_by("agent")` and the agent map of the in-memory source and of the
embedded store, `janux trace --json` (`trace_report`) and `janux traces --json` (`trace_row`). The
hypothesis test runs every example through them; a seeded batch of the same scenarios is loaded
once into ClickHouse (chdb, read at query time and from the derived tables) and compared per trace.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.runtime import Agent, Cost, HandoffPolicy, Subagent
from janux.runtime.result import RunResult
from janux.runtime.testing import ScriptedModel, call_tools, delegate, fail, reply, transfer
from janux.tracing.analysis.api_json import trace_row
from janux.tracing.analysis.readers.structure import structure_facts
from janux.tracing.analysis.report import trace_report
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sdk.convert import span_records_from_readable
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter, TraceSource
from janux.tracing.sources.store import open_store
from tests.support.three_sources import derived_clickhouse, three_sources

PRICES = (None, Cost(input=1.0, output=2.0), Cost(input=0.25, output=0.5), Cost(input=3.0, output=15.0))
"""Agent prices (USD per million tokens); None: unpriced."""

Figures = tuple[int, int, float | None, int]
"""An agent's own (input tokens, output tokens, USD or None, unpriced tokens)."""


@dataclass(frozen=True)
class Sub:
    """A subagent the entry agent delegates to, in the first round, all in parallel."""

    name: str
    attempts: tuple[bool, ...]
    """Each attempt's outcome: True answers, False fails (model error); retried once at most."""
    tokens: tuple[int, int]
    price: Cost | None


@dataclass(frozen=True)
class Scenario:
    """One turn: triage delegates to `subs`, then answers or transfers to billing."""

    triage_price: Cost | None
    triage_tokens: tuple[tuple[int, int], tuple[int, int]]
    subs: tuple[Sub, ...]
    transfer: bool
    billing_price: Cost | None
    billing_tokens: tuple[int, int]
    billing_fails: bool
    seed_label: str = field(default="")


TOKENS = st.tuples(st.integers(1, 5_000), st.integers(0, 800))
OUTCOMES = st.sampled_from([(True,), (False, True), (False, False)])
PRICE = st.sampled_from(PRICES)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    names = draw(st.lists(st.sampled_from(["researcher", "writer", "fact_checker"]), unique=True, max_size=3))
    subs = tuple(Sub(name, draw(OUTCOMES), draw(TOKENS), draw(PRICE)) for name in names)
    transfer_to = draw(st.booleans())
    return Scenario(
        triage_price=draw(PRICE), triage_tokens=(draw(TOKENS), draw(TOKENS)), subs=subs, transfer=transfer_to,
        billing_price=draw(PRICE), billing_tokens=draw(TOKENS),
        billing_fails=transfer_to and draw(st.booleans()),
    )  # fmt: skip


def _agents(s: Scenario) -> Agent:
    subagents = []
    for sub in s.subs:
        steps = [reply(f"{sub.name} answer", input_tokens=sub.tokens[0], output_tokens=sub.tokens[1])
                 if ok else fail("upstream returned 503") for ok in sub.attempts]  # fmt: skip
        agent = Agent(sub.name, model=ScriptedModel(steps, model_name=f"m-{sub.name}"), cost=sub.price)
        subagents.append(Subagent(agent=agent, max_turns=2))
    (t1, t2) = s.triage_tokens
    steps = []
    if s.subs:
        calls = [delegate(sub.name, f"task for {sub.name}") for sub in s.subs]
        steps.append(call_tools(*calls, input_tokens=t1[0], output_tokens=t1[1]))
    last = (call_tools(transfer("billing", "billing question"), input_tokens=t2[0], output_tokens=t2[1])
            if s.transfer else reply("done", input_tokens=t2[0], output_tokens=t2[1]))  # fmt: skip
    steps.append(last)
    handoffs = []
    if s.transfer:
        billed = reply("billed", input_tokens=s.billing_tokens[0], output_tokens=s.billing_tokens[1])
        answer = fail("upstream returned 503") if s.billing_fails else billed
        model = ScriptedModel([answer], model_name="m-billing")
        handoffs.append(Agent("billing", model=model, cost=s.billing_price))
    return Agent(
        "triage", model=ScriptedModel(steps, model_name="m-triage"), subagents=subagents, handoffs=handoffs,
        policy=HandoffPolicy(max_retries=1), cost=s.triage_price,
    )  # fmt: skip


def _priced(price: Cost | None, tokens: tuple[int, int]) -> Figures:
    if price is None:
        return tokens[0], tokens[1], None, tokens[0] + tokens[1]
    return tokens[0], tokens[1], (tokens[0] * price.input + tokens[1] * price.output) / 1e6, 0


def _add(a: Figures | None, b: Figures) -> Figures:
    if a is None:
        return b
    cost = b[2] if a[2] is None else (a[2] if b[2] is None else a[2] + b[2])
    return a[0] + b[0], a[1] + b[1], cost, a[3] + b[3]


def expected(s: Scenario) -> dict[str, Figures]:
    """Each agent's own figures, by the script: every round it answered, at its own price."""
    found: dict[str, Figures] = {}
    rounds = [s.triage_tokens[0], s.triage_tokens[1]] if s.subs else [s.triage_tokens[1]]
    for tokens in rounds:
        found["triage"] = _add(found.get("triage"), _priced(s.triage_price, tokens))
    for sub in s.subs:
        for ok in sub.attempts:
            if ok:
                found[sub.name] = _add(found.get(sub.name), _priced(sub.price, sub.tokens))
        found.setdefault(sub.name, (0, 0, None, 0))  # ran, failed: no tokens reported
    if s.transfer:
        tokens = (0, 0) if s.billing_fails else s.billing_tokens
        found["billing"] = _priced(s.billing_price, tokens)
        if s.billing_fails:
            found["billing"] = (0, 0, None, 0)
    return found


def run(s: Scenario) -> tuple[RunResult | None, list[SpanRecord]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    result: RunResult | None
    try:
        result = asyncio.run(_agents(s).run("a question", thread_id="t-prop", tracer_provider=provider))
    except Exception:  # billing failed after taking over: the turn raised (checked below)
        result = None
    provider.shutdown()
    return result, list(span_records_from_readable(exporter.get_finished_spans()))


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return b == pytest.approx(a, rel=1e-9, abs=1e-12)


def _same(got: dict[str, Figures], want: dict[str, Figures], where: str) -> None:
    assert got.keys() == want.keys(), where
    for agent, figures in want.items():
        g = got[agent]
        assert g[0:2] == figures[0:2], (where, agent, g, figures)
        assert _close(figures[2], g[2]), (where, agent, g, figures)
        assert g[3] == figures[3], (where, agent, g, figures)


def _per_agent(items: list[tuple[str, Figures]]) -> dict[str, Figures]:
    found: dict[str, Figures] = {}
    for agent, figures in items:
        found[agent] = _add(found.get(agent), figures)
    return found


def _report_figures(usage: dict[str, Any]) -> Figures:
    return usage["input_tokens"], usage["output_tokens"], usage["recorded_cost_usd"], usage["unpriced_tokens"]


def source_figures(source: TraceSource, flt: TraceFilter) -> tuple[dict[str, Figures], dict[str, Figures]]:
    """(usage_by agent, agent map nodes' own) of one source."""
    groups = {g.key: (g.input_tokens or 0, g.output_tokens or 0, g.cost, g.unpriced_tokens or 0)
              for g in source.usage_by("agent", flt)}  # fmt: skip
    nodes = {n.agent: (n.own.input_tokens, n.own.output_tokens, n.own.cost, n.own.unpriced_tokens)
             for n in source.agent_map(flt).nodes}  # fmt: skip
    return groups, nodes


def check_trace(s: Scenario, result: RunResult | None, spans: list[SpanRecord]) -> None:
    """Every in-process surface against the script (and the bill)."""
    want = expected(s)
    view = reconstruct(spans)
    assert all(check.ok for check in view.checks), [c.message for c in view.checks if not c.ok]
    own = [(n.agent, (n.own.input_tokens, n.own.output_tokens, n.own.cost, n.own.unpriced_tokens))
           for n in view.nodes]  # fmt: skip
    _same(_per_agent(own), want, "trace page nodes")
    facts = [(a.name, (a.input_tokens or 0, a.output_tokens or 0, a.cost, a.unpriced_tokens or 0))
             for a in structure_facts(spans).agents]  # fmt: skip
    _same(_per_agent(facts), want, "structure facts")
    report = trace_report(view)
    nodes = [(n["agent"], _report_figures(n["own"])) for n in report["tree"]["nodes"]]
    _same(_per_agent(nodes), want, "janux trace --json")
    total = _per_agent([("all", f) for f in want.values()])["all"]
    header = view.total
    assert (header.input_tokens, header.output_tokens, header.unpriced_tokens) == (*total[:2], total[3])
    assert _close(total[2], header.cost)
    if result is not None:  # the runtime's own bill
        bill = result.bill
        assert (bill.input_tokens, bill.output_tokens, bill.unpriced_tokens) == (total[0], total[1], total[3])
        assert _close(total[2], bill.cost)
    failed_turn = s.transfer and s.billing_fails
    assert (result is None) == failed_turn
    assert report["status"] == ("failed" if failed_turn or any(not any(x.attempts) for x in s.subs) else "ok")
    memory = MemoryTraceSource(spans)
    (summary,) = memory.list_traces(TraceFilter())
    row = trace_row(summary, view)
    assert row["status"] == report["status"]
    assert (row["input_tokens"], row["output_tokens"], row["unpriced_tokens"]) == (*total[:2], total[3])
    assert _close(total[2], row["cost_usd"])
    groups, nodes_map = source_figures(memory, TraceFilter())
    _same(groups, want, "memory usage_by")
    _same(nodes_map, want, "memory agent map")


PRICED = PRICES[1]
EXAMPLES = (
    # Every kind, explicitly, besides the random ones: a transfer whose target answers (unpriced),
    # one whose target fails after taking over, a retried delegation, a failed one, an unpriced
    # subagent, delegations in parallel, and a turn with no handoff at all.
    Scenario(PRICED, ((100, 10), (50, 5)), (Sub("researcher", (False, True), (30, 3), None),), True, None,
             (40, 4), False),
    Scenario(None, ((100, 10), (50, 5)), (Sub("writer", (False, False), (30, 3), PRICED),
             Sub("fact_checker", (True,), (20, 2), PRICES[2])), True, PRICED, (40, 4), True),
    Scenario(PRICED, ((100, 10), (50, 5)), (), False, None, (1, 1), False),
)  # fmt: skip


def _with_examples(test: Any) -> Any:
    for scenario in EXAMPLES:
        test = example(scenario)(test)
    return test


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@_with_examples
@given(scenarios())
def test_every_surface_says_the_same_per_agent(s: Scenario) -> None:
    result, spans = run(s)
    check_trace(s, result, spans)
    with tempfile.TemporaryDirectory() as work, open_store(Path(work)) as store:
        store.write(spans)
        groups, nodes = source_figures(store, TraceFilter())
        _same(groups, expected(s), "store usage_by")
        _same(nodes, expected(s), "store agent map")


def seeded_scenarios(count: int, seed: int) -> list[Scenario]:
    """`count` scenarios drawn by a fixed seed, every kind among them (checked by the caller)."""
    rng = random.Random(seed)
    names = ["researcher", "writer", "fact_checker"]
    found = []
    for _ in range(count):
        subs = tuple(
            Sub(name, rng.choice([(True,), (False, True), (False, False)]),
                (rng.randint(1, 5000), rng.randint(0, 800)), rng.choice(PRICES))
            for name in rng.sample(names, rng.randint(0, 3))
        )  # fmt: skip
        transfer_to = rng.random() < 0.5
        found.append(Scenario(
            rng.choice(PRICES), ((rng.randint(1, 5000), rng.randint(0, 800)), (rng.randint(1, 5000), 7)),
            subs,
            transfer_to, rng.choice(PRICES), (rng.randint(1, 5000), rng.randint(0, 800)),
            transfer_to and rng.random() < 0.5,
        ))  # fmt: skip
    return found


def test_clickhouse_says_the_same_per_agent_and_per_trace(tmp_path: Path) -> None:
    batch = seeded_scenarios(24, seed=28)
    # The batch holds every kind the property test draws.
    assert any(s.transfer and s.billing_fails for s in batch)
    assert any(s.transfer and not s.billing_fails for s in batch)
    assert any(sub.attempts == (False, False) for s in batch for sub in s.subs)
    assert any(sub.attempts == (False, True) for s in batch for sub in s.subs)
    assert any(sub.price is None for s in batch for sub in s.subs) and any(not s.subs for s in batch)
    runs = [(s, *run(s)) for s in batch]
    spans = [span for _, _, trace in runs for span in trace]
    ids = [(s, trace[0].trace_id) for s, _, trace in runs]
    for s, result, trace in runs:
        check_trace(s, result, trace)
    with three_sources(spans, tmp_path) as sources:
        for s, trace_id in ids:
            for kind in ("store", "clickhouse"):
                groups, nodes = source_figures(sources[kind], TraceFilter(trace_id=trace_id))
                _same(groups, expected(s), f"{kind} usage_by")
                _same(nodes, expected(s), f"{kind} agent map")
    with derived_clickhouse(spans, tmp_path) as (derived, _):
        for s, trace_id in ids:
            groups, nodes = source_figures(derived, TraceFilter(trace_id=trace_id))
            _same(groups, expected(s), "derived clickhouse usage_by")
            _same(nodes, expected(s), "derived clickhouse agent map")
