"""Every source reads the foreign fixtures to their truth: in memory, in the embedded store (written
whole, or in shuffled batches) and in ClickHouse (chdb, rows as the Collector's exporter writes
them). The trace list and `usage_by` agree across the three and with the truth."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import USAGE_DIMENSIONS, TraceFilter, TraceSource, TraceSummary
from janux.tracing.sources.store import open_store
from tests.support.foreign.load import Case, all_spans, cases, failed_handoffs, listed_tokens
from tests.support.three_sources import three_sources

CASES = cases()
ALL = TraceFilter()


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, TraceSource]]:
    with three_sources(all_spans(), tmp_path_factory.mktemp("sources")) as found:
        yield found


def _summaries(source: TraceSource) -> dict[str, TraceSummary]:
    return {s.trace_id: s for s in source.list_traces(ALL, limit=1_000)}


@pytest.mark.parametrize("kind", ["memory", "store", "clickhouse"])
def test_the_trace_list_gives_the_truth(sources: dict[str, TraceSource], kind: str) -> None:
    rows = _summaries(sources[kind])
    assert len(rows) == len(CASES)
    for case in CASES:
        row, truth = rows[case.trace_id], case.truth
        assert (row.bill_input_tokens, row.bill_output_tokens) == listed_tokens(truth), case.id
        assert (row.delegations, row.transfers) == (len(truth["delegations"]), len(truth["transfers"])), (
            case.id
        )
        assert row.usage_read_spans == truth["inference_calls"], case.id
        assert row.inference_spans == truth["inference_calls"] + truth["unread_calls"], case.id
        assert row.partly_unread == bool(truth["unread_calls"] or truth["unrecognised_spans"]), case.id
        assert row.failed_handoffs == failed_handoffs(truth), case.id
        if truth["edges"] is not None:
            attempts = sum(e["attempts"] for e in truth["edges"] if e["kind"] == "delegate")
            assert row.attempts == attempts, case.id
            assert row.root_agent == truth["root_agent"], case.id
        assert row.agent_path == _path(case), case.id


@pytest.mark.parametrize("kind", ["memory", "store", "clickhouse"])
def test_the_root_agent_is_the_first_agent_and_a_transfer_shows_the_path(
    sources: dict[str, TraceSource], kind: str
) -> None:
    # An OpenAI Agents SDK trace's root is its workflow span, which names no agent: the list, its
    # root-agent filter and the filter's drop-down name the run's first agent instead, as for
    # Janux's own turns; a transferred conversation shows the agents that held it in turn.
    source = sources[kind]
    rows = _summaries(source)
    expected = {case.trace_id: _path(case)[:1] or (case.truth["agents"] or [None])[:1] for case in CASES}
    firsts = {trace_id: first[0] for trace_id, first in expected.items()}
    for case in CASES:
        assert rows[case.trace_id].root_agent == firsts[case.trace_id], case.id
        shown = " → ".join(_path(case)) or firsts[case.trace_id] or ""
        assert rows[case.trace_id].agents_shown == shown, case.id
    offered = source.distinct_values("root_agent")
    for name in {first for first in firsts.values() if first is not None}:
        assert name in offered, name
        found = {s.trace_id for s in source.list_traces(TraceFilter(root_agent=name), limit=1_000)}
        assert found == {trace_id for trace_id, first in firsts.items() if first == name}, name
    assert "billing" not in {firsts[case.trace_id] for case in CASES if case.truth["transfers"]}


def _path(case: Case) -> tuple[str, ...]:
    """The agents that held the conversation in turn, by the truth: from the run's first agent,
    each transfer made by the agent holding it (empty without one)."""
    agents = case.truth["agents"]
    first = case.truth["root_agent"] or (agents[0] if agents else None)
    path = [first]
    for caller, target in case.truth["transfers"]:
        if caller == path[-1]:
            path.append(target)
    return tuple(path) if len(path) > 1 else ()


def test_the_three_sources_agree(sources: dict[str, TraceSource]) -> None:
    memory = _summaries(sources["memory"])
    assert _summaries(sources["store"]) == memory
    assert _summaries(sources["clickhouse"]) == memory
    for dimension in USAGE_DIMENSIONS:
        groups = {kind: source.usage_by(dimension, ALL, limit=1_000) for kind, source in sources.items()}
        assert groups["store"] == groups["memory"] == groups["clickhouse"], dimension


@pytest.mark.parametrize("kind", ["memory", "store", "clickhouse"])
def test_usage_by_counts_every_token_once(sources: dict[str, TraceSource], kind: str) -> None:
    want = (sum(c.truth["input_tokens"] for c in CASES), sum(c.truth["output_tokens"] for c in CASES))
    for dimension in ("agent", "model", "conversation"):
        groups = sources[kind].usage_by(dimension, ALL, limit=1_000)  # type: ignore[arg-type]
        got = (sum(g.input_tokens or 0 for g in groups), sum(g.output_tokens or 0 for g in groups))
        assert got == want, dimension
    model = sources[kind].usage_by("model", ALL, limit=1_000)
    assert sum(g.unread for g in model) == sum(c.truth["unread_calls"] for c in CASES)
    conversations = sources[kind].usage_by("conversation", ALL, limit=1_000)
    partly = sum(1 for c in CASES if c.truth["unread_calls"] or c.truth["unrecognised_spans"])
    assert sum(g.unread for g in conversations) == partly
    tools = {g.key: g for g in sources[kind].usage_by("tool", ALL, limit=1_000)}
    assert tools["ask_researcher"].count == sum(
        1 for c in CASES for caller, target in c.truth["delegations"] if target == "researcher"
        and c.fixture not in _RESEARCHER_TOOL_NOT_ASK_RESEARCHER and c.id not in _RESEARCHER_HANDED_OFF
    )  # fmt: skip


_RESEARCHER_TOOL_NOT_ASK_RESEARCHER = ("openllmetry", "smolagents_managed", "adk", "autogen_agentchat")
"""Fixtures whose researcher is reached otherwise (a step of its manager, an `AgentTool` named after it)."""
_RESEARCHER_HANDED_OFF = ("langgraph_openinference/supervisor",)
"""Scenarios whose researcher is reached by a handoff tool (`transfer_to_researcher`)."""


def _cases_of(fixture: str) -> list[Case]:
    return [case for case in CASES if case.fixture == fixture]


@pytest.mark.parametrize("seed", range(5))
def test_store_summaries_do_not_depend_on_batching(tmp_path: Path, seed: int) -> None:
    spans = all_spans()
    expected = _summaries(MemoryTraceSource(spans))
    shuffled = spans[:]
    random.Random(seed).shuffle(shuffled)
    with open_store(tmp_path) as store:
        for start in range(0, len(shuffled), 7):
            store.write(shuffled[start : start + 7])
        assert _summaries(store) == expected
        assert store.usage_by("agent", ALL, limit=1_000) == MemoryTraceSource(spans).usage_by(
            "agent", ALL, 1_000
        )


def test_a_store_of_the_previous_layout_is_rebuilt_from_its_spans(tmp_path: Path) -> None:
    import sqlite3

    from janux.tracing.sources.store.schema import DB_FILE_NAME, SCHEMA_VERSION

    spans = all_spans()
    with open_store(tmp_path) as store:
        store.write(spans)
    with sqlite3.connect(tmp_path / DB_FILE_NAME) as conn:  # the layout of schema version 4
        for column in (
            "Janux",
            "Derived",
            "Transfers",
            "InferenceSpans",
            "UsageReadSpans",
            "UnrecognisedSpans",
        ):
            conn.execute(f"ALTER TABLE trace_summary DROP COLUMN {column}")
        conn.execute("ALTER TABLE span_usage DROP COLUMN Unread")
        conn.execute("UPDATE trace_summary SET Delegations = 0, Attempts = 0")  # what version 4 counted
        conn.execute("PRAGMA user_version = 4")
    memory = MemoryTraceSource(spans)
    with open_store(tmp_path) as store:
        assert _summaries(store) == _summaries(memory)
        for dimension in USAGE_DIMENSIONS:
            assert store.usage_by(dimension, ALL, 1_000) == memory.usage_by(dimension, ALL, 1_000)
        assert store.ingest_stats().spans == len(spans)
    with sqlite3.connect(tmp_path / DB_FILE_NAME) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
