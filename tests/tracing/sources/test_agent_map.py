"""The agent map equals the sums over the Trace pages of the same traces, in every source."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import pytest

from janux.tracing.analysis.agentmap.fleet_stats import AgentMap
from janux.tracing.analysis.agentmap.from_spans import agent_map_of_traces
from janux.tracing.analysis.agentmap.loops import TraceLinks
from janux.tracing.analysis.readers.structure import is_read_whole
from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from janux.tracing.testing import synthetic_trace
from tests.support.agent_map_expect import actual, expected
from tests.support.contract_traces import contract_trace, plain_trace
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import Case, all_spans, cases, failed_handoffs


def by_trace(spans: Sequence[SpanRecord]) -> dict[str, list[SpanRecord]]:
    out: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        out[span.trace_id].append(span)
    return dict(out)


def test_in_memory_map_equals_the_trace_pages_on_the_demo_set() -> None:
    traces = by_trace(demo_traces().spans)
    got = actual(agent_map_of_traces(traces.items()))
    want = expected(traces.values())
    assert got["nodes"] == want["nodes"]
    assert got["edges"] == want["edges"]
    assert len(got["edges"]) >= 5 and any(e["failures"] for e in got["edges"].values())


def test_in_memory_map_equals_the_trace_pages_on_contract_and_foreign_traces() -> None:
    traces = [
        contract_trace(),
        plain_trace(),
        synthetic_trace(300, seed=4),
        synthetic_trace(300, seed=5, janux=False),
    ]
    pairs = [(spans[0].trace_id, spans) for spans in traces]
    got = actual(agent_map_of_traces(pairs))
    want = expected(traces)
    assert got == want


def _as_truth(agent_map: AgentMap) -> dict[str, object]:
    """What a fixture's truth says, read off a map: agent loops, edges by kind, failed edges, tokens."""
    def edges(kind: str) -> Counter[tuple[str, str]]:
        return Counter({(e.caller, e.target): e.count for e in agent_map.edges if e.kind == kind})

    nodes = agent_map.nodes
    return {
        "agents": Counter({n.agent: n.runs for n in nodes}),
        "delegations": edges("delegate"),
        "transfers": edges("transfer"),
        "failed": sum(e.failed for e in agent_map.edges),
        "tokens": (sum(n.own.input_tokens for n in nodes), sum(n.own.output_tokens for n in nodes)),
    }


def _truth(case: Case) -> dict[str, object]:
    truth = case.truth
    return {
        "agents": Counter(truth["agents"]),
        "delegations": Counter(tuple(edge) for edge in truth["delegations"]),
        "transfers": Counter(tuple(edge) for edge in truth["transfers"]),
        "failed": failed_handoffs(truth),
        "tokens": (truth["input_tokens"], truth["output_tokens"]),
    }


@pytest.mark.parametrize("case", cases(), ids=lambda case: case.id)
def test_foreign_fixture_map_equals_its_trace_page(case: Case, tmp_path: Path) -> None:
    """Each committed trace of another runtime: the map's nodes and edges (runs, errors, own and
    inclusive tokens, counts, attempts, failures and their reasons, transfers) are the sums of its
    rebuilt Trace page, and its agents, edges and tokens are the library's truth."""
    spans = list(case.spans)
    want = expected([spans])
    in_memory = agent_map_of_traces([(case.trace_id, spans)])
    assert actual(in_memory) == want
    assert actual(MemoryTraceSource(spans).agent_map(TraceFilter())) == want
    assert _as_truth(in_memory) == _truth(case)
    shuffled = spans[:]
    random.Random(case.trace_id).shuffle(shuffled)
    with open_store(tmp_path) as store:
        for start in range(0, len(shuffled), 3):  # the trace is read whole again after each batch
            store.write(shuffled[start : start + 3])
        assert actual(store.agent_map(TraceFilter())) == want


def test_every_foreign_fixture_together_with_janux_traces(tmp_path: Path) -> None:
    spans = [*all_spans(), *demo_traces().spans, *contract_trace()]
    traces = by_trace(spans)
    want = expected(traces.values())
    assert actual(agent_map_of_traces(traces.items())) == want
    with open_store(tmp_path) as store:
        store.write(spans)
        assert actual(store.agent_map(TraceFilter())) == want


def test_embedded_store_map_equals_the_trace_pages(tmp_path: Path) -> None:
    spans = [
        *demo_traces().spans,
        *contract_trace(),
        *plain_trace(),
        *synthetic_trace(300, seed=5, janux=False),
    ]
    traces = by_trace(spans)
    with open_store(tmp_path) as store:
        store.write(spans)
        got = actual(store.agent_map(TraceFilter()))
    assert got == expected(traces.values())


def test_memory_source_map_follows_the_filter() -> None:
    spans = demo_traces().spans
    source = MemoryTraceSource(spans)
    everything = source.agent_map(TraceFilter())
    errors_only = source.agent_map(TraceFilter(status="error"))
    assert everything.traces == len(by_trace(spans))
    assert 0 < errors_only.traces < everything.traces
    assert actual(everything) == expected(by_trace(spans).values())


def test_an_older_store_gets_agent_links_filled_from_its_spans(tmp_path: Path) -> None:
    spans = [*demo_traces().spans, *plain_trace(), *all_spans()]
    with open_store(tmp_path) as store:
        store.write(spans)
        before = actual(store.agent_map(TraceFilter()))
    conn = sqlite3.connect(tmp_path / "traces.sqlite3")
    conn.execute("DROP TABLE agent_links")
    conn.commit()
    conn.close()
    with open_store(tmp_path) as store:
        assert actual(store.agent_map(TraceFilter())) == before == expected(by_trace(spans).values())


def test_agent_links_of_the_older_layout_are_renewed(tmp_path: Path) -> None:
    """A table written before traces of other runtimes were resolved (no Via, no Resolved; their rows
    one per span) is dropped and filled anew, those traces read whole."""
    spans = [*demo_traces().spans, *all_spans()]
    with open_store(tmp_path) as store:
        store.write(spans)
    conn = sqlite3.connect(tmp_path / "traces.sqlite3")
    conn.execute("ALTER TABLE agent_links DROP COLUMN Via")
    conn.execute("ALTER TABLE agent_links DROP COLUMN Resolved")
    conn.commit()
    conn.close()
    with open_store(tmp_path) as store:
        assert actual(store.agent_map(TraceFilter())) == expected(by_trace(spans).values())
    conn = sqlite3.connect(tmp_path / "traces.sqlite3")
    resolved = conn.execute("SELECT count(DISTINCT TraceId) FROM agent_links WHERE Resolved = 1")
    # Every trace read whole is resolved: other runtimes' (no agent: no row), and Janux traces where
    # a transfer completed (their loop holds agent segments).
    demo = by_trace(list(demo_traces().spans)).values()
    segmented = sum(1 for trace in demo if is_read_whole(trace))
    assert segmented >= 1
    assert resolved.fetchone()[0] == sum(1 for case in cases() if case.truth["agents"]) + segmented
    conn.close()


def test_a_trace_whose_janux_accounting_arrives_late(tmp_path: Path) -> None:
    """Read as another runtime's trace while only its unmarked spans are stored, then as a Janux
    trace once a span with Janux accounting arrives: its map rows follow both times."""
    from janux.tracing import conventions as c
    from janux.tracing.analysis.readers.structure import is_janux_span

    spans = contract_trace()
    unmarked = [
        s for s in spans if not is_janux_span(s.attributes.get(c.GEN_AI_OPERATION_NAME), s.attributes)
    ]
    marked = [s for s in spans if s not in unmarked]
    assert unmarked and marked
    with open_store(tmp_path) as store:
        store.write(unmarked)
        assert actual(store.agent_map(TraceFilter())) == expected([unmarked])
        store.write(marked)
        assert actual(store.agent_map(TraceFilter())) == expected([spans])


def test_prune_removes_agent_links(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        store.write(list(demo_traces().spans))
        store.prune(0, now_ns=2**62)
        assert store.agent_map(TraceFilter()).nodes == []
        conn = sqlite3.connect(tmp_path / "traces.sqlite3")
        assert conn.execute("SELECT count(*) FROM agent_links").fetchone()[0] == 0
        conn.close()


def test_store_map_stays_exact_as_traces_grow_between_calls(tmp_path: Path) -> None:
    """The store keeps per-trace facts between calls: a trace that grows, or a new one, is re-read."""
    contract = contract_trace()
    late = [s for s in contract if s.parent_span_id]  # the children arrive after their root
    first = [s for s in contract if not s.parent_span_id] + list(demo_traces().spans)
    with open_store(tmp_path) as store:
        store.write(first)
        assert actual(store.agent_map(TraceFilter())) == expected(by_trace(first).values())
        store.write(late + plain_trace())
        everything = [*first, *late, *plain_trace()]
        assert actual(store.agent_map(TraceFilter())) == expected(by_trace(everything).values())
        narrowed = store.agent_map(TraceFilter(root_agent="planner"))
        planner = [
            spans
            for spans in by_trace(everything).values()
            if any(s.name == "invoke_agent planner" and not s.parent_span_id for s in spans)
        ]
        assert actual(narrowed) == expected(planner)


def test_map_cache_rereads_only_what_changed() -> None:
    from janux.tracing.analysis.agentmap.from_spans import links_of_spans
    from janux.tracing.sources.map_cache import MapCache

    traces = by_trace(demo_traces().spans)
    calls: list[object] = []

    def load_all() -> list[TraceLinks]:
        calls.append("all")
        return [links_of_spans(t, spans) for t, spans in traces.items()]

    def load_some(ids: list[str]) -> list[TraceLinks]:
        calls.append(sorted(ids))
        return [links_of_spans(t, traces[t]) for t in ids]

    cache = MapCache()
    versions = {t: len(spans) for t, spans in traces.items()}
    first = cache.agent_map(versions, load_all, load_some, None)
    grown = next(iter(versions))
    again = cache.agent_map({**versions, grown: versions[grown] + 1}, load_all, load_some, None)
    assert calls == ["all", [grown]]
    assert actual(first) == actual(again) == expected(traces.values())


def test_damaged_traces_never_raise(tmp_path: Path) -> None:
    """Cycles, odd attribute types, huge and non-finite numbers: counted as far as they go, no crash."""
    from janux.tracing import conventions as c
    from tests.support.otlp_build import record

    t = "d" * 32
    odd = {
        c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: ["not", "a", "name"],
        c.JANUX_TURN_INPUT_TOKENS: "12", c.JANUX_TURN_OUTPUT_TOKENS: float("inf"),
        c.JANUX_TURN_COST: float("nan"), c.JANUX_HANDOFF_ATTEMPT: True,
    }  # fmt: skip
    tool = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_DELEGATE,
            c.JANUX_HANDOFF_ATTEMPTS: "many", c.JANUX_HANDOFF_DURATION_MS: "slow"}  # fmt: skip
    spans = [
        record("a1", "a2", "invoke_agent x", odd, trace_id=t),  # a1 and a2 are each other's parent
        record("a2", "t1", "invoke_agent y", {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT}, trace_id=t),
        record("t1", "a1", "execute_tool delegate.y", tool, trace_id=t, duration=-1),
        record(
            "c1",
            "c1",
            "chat m",
            {c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_USAGE_INPUT_TOKENS: 2**70},
            trace_id=t,
        ),
    ]
    for agent_map in (agent_map_of_traces([(t, spans)]), MemoryTraceSource(spans).agent_map(TraceFilter())):
        assert agent_map.traces == 1 and agent_map.nodes
    with open_store(tmp_path) as store:
        store.write(spans)
        assert store.agent_map(TraceFilter()).nodes
