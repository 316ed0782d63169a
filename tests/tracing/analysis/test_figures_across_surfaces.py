"""One figure on every surface: random runs of the runtime (delegations in parallel, retries, failed
delegations, budget cuts, denials, fallbacks to a primary tool, a transfer, a chain of two transfers,
a target that fails after taking over, unpriced agents) traced into memory, and each agent's own
tokens and money read off every surface that shows them, all equal to what the scripted rounds
say and, summed, to the runtime's own `RunResult.bill`.

Surfaces: the Trace page's model (`reconstruct`: nodes and header), the structure every source reads
(`structure_facts`), the Traces list's row (first agent, path, attempts, failed handoffs), the
Failures page's rows, Compare's totals, `usage_by` of every dimension and the Costs page's CSV
exports, the agent map of the in-memory source and of the embedded store, `janux trace --json`
(`trace_report`) and `janux traces --json` (`trace_row`). The hypothesis test runs every example
through them; a seeded batch of the same scenarios is loaded once into ClickHouse (chdb, read at
query time and from the derived tables) and compared per trace.
"""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import random
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.dashboard.views.compare import cost_diff
from janux.dashboard.views.span_detail import span_detail
from janux.dashboard.views.tables import failures_frame
from janux.dashboard.views.usage_tables import range_usage
from janux.runtime import Agent, Cost, HandoffPolicy, OnFailure, Subagent
from janux.runtime.result import RunResult
from janux.runtime.testing import ScriptedModel, call_tools, delegate, fail, reply, tool_call, transfer
from janux.runtime.tools import make_tool
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.api_json import trace_row
from janux.tracing.analysis.readers.structure import loop_id, structure_facts
from janux.tracing.analysis.report import trace_report
from janux.tracing.analysis.trace_outline import outline_row
from janux.tracing.analysis.trace_view import TraceView, reconstruct
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
    kind: str = "run"
    """`run` (as `attempts` say), `cut` (a 1-round budget cuts its searching after one round) or
    `denied` (the policy's deny-list names it: it never runs)."""


@dataclass(frozen=True)
class Scenario:
    """One turn: triage delegates to `subs`, then answers or transfers to billing, which answers or
    (`onward`) transfers on to refunds; the agent holding the conversation last may fail."""

    triage_price: Cost | None
    triage_tokens: tuple[tuple[int, int], tuple[int, int]]
    subs: tuple[Sub, ...]
    transfer: bool
    billing_price: Cost | None
    billing_tokens: tuple[int, int]
    billing_fails: bool
    """The last holder (billing, or refunds after an onward transfer) fails after taking over."""
    seed_label: str = field(default="")
    fallback: bool = False
    """The policy falls back to a primary tool of the same name when a delegation fails."""
    onward: bool = False
    """Billing transfers the conversation on to refunds (a chain of two transfers)."""
    refunds_price: Cost | None = None
    refunds_tokens: tuple[int, int] = (1, 1)

    @property
    def path(self) -> tuple[str, ...]:
        """The agents that held the conversation, in turn (empty without a transfer)."""
        if not self.transfer:
            return ()
        return ("triage", "billing", "refunds") if self.onward else ("triage", "billing")


TOKENS = st.tuples(st.integers(1, 5_000), st.integers(0, 800))
OUTCOMES = st.sampled_from([(True,), (False, True), (False, False)])
PRICE = st.sampled_from(PRICES)
SUB_KINDS = st.sampled_from(["run", "run", "run", "cut", "denied"])


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    names = draw(st.lists(st.sampled_from(["researcher", "writer", "fact_checker"]), unique=True, max_size=3))
    subs = tuple(Sub(name, draw(OUTCOMES), draw(TOKENS), draw(PRICE), draw(SUB_KINDS)) for name in names)
    transfer_to = draw(st.booleans())
    return Scenario(
        triage_price=draw(PRICE), triage_tokens=(draw(TOKENS), draw(TOKENS)), subs=subs, transfer=transfer_to,
        billing_price=draw(PRICE), billing_tokens=draw(TOKENS),
        billing_fails=transfer_to and draw(st.booleans()), fallback=draw(st.booleans()),
        onward=transfer_to and draw(st.booleans()), refunds_price=draw(PRICE), refunds_tokens=draw(TOKENS),
    )  # fmt: skip


def _search(query: str = "") -> str:
    """Searches the docs (a scripted subagent's tool)."""
    return f"results for {query}"


def _sub_agent(sub: Sub) -> Subagent:
    if sub.kind == "cut":  # keeps searching: its one-round budget cuts it after the first round
        search = call_tools(tool_call("search", {"query": sub.name}), input_tokens=sub.tokens[0],
                            output_tokens=sub.tokens[1])  # fmt: skip
        model = ScriptedModel([search], model_name=f"m-{sub.name}")
        agent = Agent(sub.name, model=model, cost=sub.price, tools=[make_tool(_search, name="search")])
        return Subagent(agent=agent, max_turns=1)
    steps = [] if sub.kind == "denied" else [
        reply(f"{sub.name} answer", input_tokens=sub.tokens[0], output_tokens=sub.tokens[1])
        if ok else fail("upstream returned 503") for ok in sub.attempts
    ]  # fmt: skip
    agent = Agent(sub.name, model=ScriptedModel(steps, model_name=f"m-{sub.name}"), cost=sub.price)
    return Subagent(agent=agent, max_turns=2)


def _primary(name: str) -> Any:
    return make_tool(lambda task="", context="": f"cached answer for {name}", name=f"delegate.{name}",
                     description="Cached answers.")  # fmt: skip


def _agents(s: Scenario) -> Agent:
    subagents = [_sub_agent(sub) for sub in s.subs]
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
        onward: list[Agent] = []
        if s.onward:
            refunded = reply("refunded", input_tokens=s.refunds_tokens[0], output_tokens=s.refunds_tokens[1])
            answer = fail("upstream returned 503") if s.billing_fails else refunded
            onward.append(Agent("refunds", model=ScriptedModel([answer], model_name="m-refunds"),
                                cost=s.refunds_price))  # fmt: skip
            answer = call_tools(transfer("refunds", "a refund"), input_tokens=s.billing_tokens[0],
                                output_tokens=s.billing_tokens[1])  # fmt: skip
        else:
            billed = reply("billed", input_tokens=s.billing_tokens[0], output_tokens=s.billing_tokens[1])
            answer = fail("upstream returned 503") if s.billing_fails else billed
        model = ScriptedModel([answer], model_name="m-billing")
        handoffs.append(Agent("billing", model=model, cost=s.billing_price, handoffs=onward))
    policy = HandoffPolicy(
        max_retries=1, denied_tools=[f"delegate.{sub.name}" for sub in s.subs if sub.kind == "denied"],
        on_error=OnFailure.FALLBACK_TO_PRIMARY if s.fallback else OnFailure.FAIL,
    )  # fmt: skip
    primaries = [_primary(sub.name) for sub in s.subs] if s.fallback else []
    return Agent(
        "triage", model=ScriptedModel(steps, model_name="m-triage"), subagents=subagents, handoffs=handoffs,
        policy=policy, cost=s.triage_price, fallback_tools=primaries,
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
        if sub.kind == "denied":
            continue  # never ran: no loop, no figures
        if sub.kind == "cut":
            found[sub.name] = _priced(sub.price, sub.tokens)  # its one round, then the cut
            continue
        for ok in sub.attempts:
            if ok:
                found[sub.name] = _add(found.get(sub.name), _priced(sub.price, sub.tokens))
        found.setdefault(sub.name, (0, 0, None, 0))  # ran, failed: no tokens reported
    if s.transfer:
        holders = [("billing", s.billing_price, s.billing_tokens)]
        if s.onward:
            holders.append(("refunds", s.refunds_price, s.refunds_tokens))
        for name, price, tokens in holders:
            found[name] = _priced(price, tokens)
        if s.billing_fails:  # the last holder's round failed: no tokens reported
            found[holders[-1][0]] = (0, 0, None, 0)
    return found


def expected_failures(s: Scenario) -> list[tuple[str, str, int]]:
    """(target, final status, attempts) of each failed handoff, by the script and the policy."""
    found = []
    for sub in s.subs:
        if sub.kind == "denied":
            found.append((sub.name, "denied", 0))
        elif sub.kind == "cut":
            found.append((sub.name, "cut", 1))
        elif not any(sub.attempts):
            found.append((sub.name, "fallback" if s.fallback else "failed", len(sub.attempts)))
    return sorted(found)


def expected_failure_rows(s: Scenario) -> list[tuple[str, str, int]]:
    """The Failures page's rows: every failed handoff, every delegation whose failed attempt was
    retried to completion (listed with its final status), and a turn whose target failed after
    taking over."""
    retried = [(sub.name, "completed", len(sub.attempts)) for sub in s.subs
               if sub.kind == "run" and any(sub.attempts) and not all(sub.attempts)]  # fmt: skip
    failed_turn = [(s.path[-1], "error", 1)] if s.transfer and s.billing_fails else []  # the loop raised
    return sorted(expected_failures(s) + retried + failed_turn)


def expected_attempts(s: Scenario) -> int:
    """Attempt loops the delegations ran (a denied one runs none; a cut is not retried)."""
    return sum(sub_attempts(sub) for sub in s.subs)


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


def _check_tree_and_detail(
    view: TraceView, want: dict[str, Figures], total: Figures | None
) -> None:
    """The Trace page's tree and detail pane: the first loop's row carries the whole run's tokens
    (labelled inclusive; `total`, None where a transfer moved the rest of the run to another
    holder), and each agent that ran once says the script's own tokens and rounds in its detail
    (a failed round with no usage says so, never "0 in / 0 out")."""
    root_row = outline_row(view, view.nodes[0].span_id)
    assert root_row is not None and root_row.scope == "incl."
    if total is not None:
        assert root_row.tokens == f"{total[0]:,} / {total[1]:,}", root_row
    runs = Counter(node.agent for node in view.nodes)
    for node in view.nodes:
        if runs[node.agent] > 1:
            continue
        row_id = loop_id(node.span_id, node.segment)  # an agent segment after a transfer: its own row
        span, row = view.span(row_id), outline_row(view, row_id)
        assert span is not None and row is not None and row.agent == node.agent, (row_id, row)
        detail = span_detail(view, span, row)
        usage = dict(detail.usage)
        tokens_in, tokens_out = want[node.agent][:2]
        if usage["own tokens"].startswith(outcomes.NO_USAGE_REPORTED):
            assert (tokens_in, tokens_out) == (0, 0), (node.agent, usage)
        else:
            shown = f"{tokens_in:,} in / {tokens_out:,} out"
            assert usage["own tokens"].startswith(shown), (node.agent, usage)
        assert usage["model rounds"] == f"{len(node.chat_spans):,}"


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
    _check_tree_and_detail(view, want, None if s.transfer else total)
    if result is not None:  # the runtime's own bill
        bill = result.bill
        assert (bill.input_tokens, bill.output_tokens, bill.unpriced_tokens) == (total[0], total[1], total[3])
        assert _close(total[2], bill.cost)
    failed_turn = s.transfer and s.billing_fails
    assert (result is None) == failed_turn
    assert report["status"] == ("failed" if failed_turn or expected_failures(s) else "ok")
    memory = MemoryTraceSource(spans)
    (summary,) = memory.list_traces(TraceFilter())
    row = trace_row(summary, view)
    assert row["status"] == report["status"]
    assert (row["input_tokens"], row["output_tokens"], row["unpriced_tokens"]) == (*total[:2], total[3])
    assert _close(total[2], row["cost_usd"])
    # The Traces list: the first agent, the transferred conversation's path, the counts.
    path = s.path
    assert (summary.root_agent, summary.agent_path, row["agent_path"]) == ("triage", path, list(path))
    assert summary.attempts == view.attempts == row["attempts"] == expected_attempts(s)
    assert summary.failed_handoffs == row["failed_handoffs"] == len(expected_failures(s))
    # The Failures page: one row per failed handoff (and retried attempt), final status and attempts.
    frame = failures_frame(view.failures)
    shown = zip(frame["target"], frame["final status"], frame["attempts"], strict=True)
    assert sorted(shown) == expected_failure_rows(s)
    assert len(memory.failed_handoff_spans(TraceFilter())) == len(expected_failures(s))
    # Compare (the trace against itself): the totals and counts of its side.
    compare = cost_diff(view, view).set_index("measure")["A"]
    assert (compare["input tokens"], compare["output tokens"]) == (f"{total[0]:,}", f"{total[1]:,}")
    assert compare["unpriced tokens"] == f"{total[3]:,}"
    assert compare["attempts"] == f"{expected_attempts(s):,}"
    assert compare["failed handoffs"] == f"{len(expected_failures(s)):,}"
    groups, nodes_map = source_figures(memory, TraceFilter())
    _same(groups, want, "memory usage_by")
    _same(nodes_map, want, "memory agent map")
    check_dimensions(memory, s, TraceFilter(), "memory")
    check_edges(memory, s, TraceFilter(), "memory")


def _csv_figures(frame: Any, key: str, prefix: str = "") -> dict[str, tuple[int, int, str, int]]:
    """A Costs table's CSV rows as (input, output, cost text, unpriced) by their key column."""
    rows = csv.DictReader(io.StringIO(cells.csv_bytes(frame).decode()))
    return {
        r[key]: (int(r[f"{prefix}input tokens"] or 0), int(r[f"{prefix}output tokens"] or 0),
                 r[f"{prefix}cost USD"], int(r[f"{prefix}unpriced tokens"] or 0))
        for r in rows
    }  # fmt: skip


def _csv_cost_matches(text: str, cost: float | None, unpriced: int) -> bool:
    """A CSV cost cell against the figure: exact decimal digits (never scientific notation) that
    round the cost, `unpriced` when nothing was priced but tokens were, empty when nothing was used."""
    if cost is None:
        return text == ("unpriced" if unpriced else "")
    if "e" in text.lower():
        return False
    digits = len(text.split(".")[1]) if "." in text else 0
    return abs(Decimal(text) - Decimal(repr(cost))) <= Decimal(5) * Decimal(10) ** -(digits + 1)


def sub_attempts(sub: Sub) -> int:
    """Attempt loops one delegation ran (a denied one runs none; a cut is not retried)."""
    return 0 if sub.kind == "denied" else 1 if sub.kind == "cut" else len(sub.attempts)


def check_edges(source: TraceSource, s: Scenario, flt: TraceFilter, where: str) -> None:
    """The agent map's edges of one trace: each delegation's count, attempts, failures by final
    status and the usage it carried; each transfer's count."""
    want = expected(s)
    edges = {(e.caller, e.target, e.kind): e for e in source.agent_map(flt).edges}
    failing = {name: status for name, status, _ in expected_failures(s)}
    keys = {("triage", sub.name, "delegate") for sub in s.subs}
    keys |= {(caller, target, "transfer") for caller, target in itertools.pairwise(s.path)}
    assert set(edges) == keys, where
    for sub in s.subs:
        edge = edges["triage", sub.name, "delegate"]
        status = failing.get(sub.name)
        counts = (edge.count, edge.attempts, edge.failed)
        assert counts == (1, sub_attempts(sub), int(status is not None)), (where, sub)
        assert edge.failures == ({status: 1} if status else {}), (where, sub, edge.failures)
        carried = (edge.cost.input_tokens, edge.cost.output_tokens, edge.cost.cost, edge.cost.unpriced_tokens)
        _same({sub.name: carried}, {sub.name: want.get(sub.name, (0, 0, None, 0))}, f"{where} edge cost")
    for caller, target in itertools.pairwise(s.path):
        handed = edges[caller, target, "transfer"]
        assert (handed.count, handed.failed) == (1, 0), where


def check_dimensions(source: TraceSource, s: Scenario, flt: TraceFilter, where: str) -> None:
    """`usage_by` of every dimension and the Costs page's CSV exports of one trace, by the script."""
    want = expected(s)
    by: dict[str, dict[str, Figures]] = {}
    for dimension in ("agent", "tool", "model", "conversation"):
        by[dimension] = {g.key: (g.input_tokens or 0, g.output_tokens or 0, g.cost, g.unpriced_tokens or 0)
                         for g in source.usage_by(dimension, flt)}  # type: ignore[arg-type]  # fmt: skip
    _same(by["model"], {f"m-{agent}": figures for agent, figures in want.items()}, f"{where} usage_by model")
    tools = {key: f for key, f in by["tool"].items() if key.startswith("delegate.")}
    _same(tools, {f"delegate.{sub.name}": want.get(sub.name, (0, 0, None, 0)) for sub in s.subs},
          f"{where} usage_by tool")  # fmt: skip
    _same(by["conversation"], {"t-prop": _per_agent([("all", f) for f in want.values()])["all"]},
          f"{where} usage_by conversation")  # fmt: skip
    tables = range_usage(source, flt).tables
    columns = (("agent", "agent", "own "), ("model", "model", ""), ("tool", "delegation tool", ""))
    for dimension, key, prefix in columns:
        exported = _csv_figures(tables[dimension], key, prefix)
        for name, figures in by[dimension].items():
            tokens_in, tokens_out, text, unpriced = exported[name]
            assert (tokens_in, tokens_out, unpriced) == (figures[0], figures[1], figures[3]), (where, name)
            assert _csv_cost_matches(text, figures[2], figures[3]), (where, dimension, name, text, figures)


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
    # A budget cut, a denial by the deny-list and a failed delegation that falls back to the primary tool.
    Scenario(PRICED, ((100, 10), (50, 5)), (Sub("researcher", (False, False), (30, 3), None),
             Sub("writer", (True,), (60, 6), PRICED, "cut"),
             Sub("fact_checker", (True,), (1, 1), None, "denied")),
             True, PRICES[3], (40, 4), False, fallback=True),
    # A chain of two transfers: refunds answers (priced); then one where refunds fails after taking over.
    Scenario(PRICED, ((100, 10), (50, 5)), (Sub("researcher", (True,), (30, 3), PRICED),), True, None,
             (40, 4), False, onward=True, refunds_price=PRICES[2], refunds_tokens=(70, 7)),
    Scenario(None, ((100, 10), (50, 5)), (), True, PRICED, (40, 4), True, onward=True, refunds_price=None,
             refunds_tokens=(70, 7)),
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
        check_dimensions(store, s, TraceFilter(), "store")
        check_edges(store, s, TraceFilter(), "store")
        check_list_row(store, s, spans[0].trace_id, "store")


def seeded_scenarios(count: int, seed: int) -> list[Scenario]:
    """`count` scenarios drawn by a fixed seed, every kind among them (checked by the caller)."""
    rng = random.Random(seed)
    names = ["researcher", "writer", "fact_checker"]
    found = []
    for _ in range(count):
        subs = tuple(
            Sub(name, rng.choice([(True,), (False, True), (False, False)]),
                (rng.randint(1, 5000), rng.randint(0, 800)), rng.choice(PRICES),
                rng.choice(["run", "run", "run", "cut", "denied"]))
            for name in rng.sample(names, rng.randint(0, 3))
        )  # fmt: skip
        transfer_to = rng.random() < 0.5
        found.append(Scenario(
            rng.choice(PRICES), ((rng.randint(1, 5000), rng.randint(0, 800)), (rng.randint(1, 5000), 7)),
            subs,
            transfer_to, rng.choice(PRICES), (rng.randint(1, 5000), rng.randint(0, 800)),
            transfer_to and rng.random() < 0.5, fallback=rng.random() < 0.5,
            onward=transfer_to and rng.random() < 0.5, refunds_price=rng.choice(PRICES),
            refunds_tokens=(rng.randint(1, 5000), rng.randint(0, 800)),
        ))  # fmt: skip
    return found


def test_clickhouse_says_the_same_per_agent_and_per_trace(tmp_path: Path) -> None:
    batch = seeded_scenarios(24, seed=28)
    # The batch holds every kind the property test draws.
    assert any(s.transfer and s.billing_fails for s in batch)
    assert any(s.transfer and not s.billing_fails for s in batch)
    assert any(s.onward and s.billing_fails for s in batch)
    assert any(s.onward and not s.billing_fails for s in batch)
    assert any(sub.attempts == (False, False) for s in batch for sub in s.subs)
    assert any(sub.attempts == (False, True) for s in batch for sub in s.subs)
    assert any(sub.price is None for s in batch for sub in s.subs) and any(not s.subs for s in batch)
    assert {sub.kind for s in batch for sub in s.subs} == {"run", "cut", "denied"}
    assert any(s.fallback and sub.kind == "run" and not any(sub.attempts) for s in batch for sub in s.subs)
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
                check_dimensions(sources[kind], s, TraceFilter(trace_id=trace_id), kind)
                check_edges(sources[kind], s, TraceFilter(trace_id=trace_id), kind)
                check_list_row(sources[kind], s, trace_id, kind)
    with derived_clickhouse(spans, tmp_path) as (derived, _):
        for s, trace_id in ids:
            groups, nodes = source_figures(derived, TraceFilter(trace_id=trace_id))
            _same(groups, expected(s), "derived clickhouse usage_by")
            _same(nodes, expected(s), "derived clickhouse agent map")
            check_dimensions(derived, s, TraceFilter(trace_id=trace_id), "derived clickhouse")
            check_edges(derived, s, TraceFilter(trace_id=trace_id), "derived clickhouse")
            check_list_row(derived, s, trace_id, "derived clickhouse")


def check_list_row(source: TraceSource, s: Scenario, trace_id: str, where: str) -> None:
    """The Traces list's row of one trace and its failed handoffs, by the script."""
    (summary,) = source.list_traces(TraceFilter(trace_id=trace_id))
    assert (summary.root_agent, summary.agent_path) == ("triage", s.path), where
    failures = len(expected_failures(s))
    assert (summary.attempts, summary.failed_handoffs) == (expected_attempts(s), failures), where
    assert len(source.failed_handoff_spans(TraceFilter(trace_id=trace_id))) == failures, where
