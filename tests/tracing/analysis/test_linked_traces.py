"""A run split across traces joined only by span links, on synthetic traces that name no library:
the link index rows, the run's traces, and the handoff read over the union."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from janux.tracing.analysis.readers.structure import structure_facts
from janux.tracing.analysis.report import trace_report
from janux.tracing.analysis.trace_links import (
    TraceLink,
    continuation_text,
    cross_trace_links,
    is_continuation,
    linked_counts,
    linked_run,
    run_spans,
)
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import LinkRecord, SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter, TraceSummary
from tests.support.otlp_build import TRACE_A, record
from tests.support.three_sources import KINDS, derived_clickhouse, three_sources
from tests.tracing.analysis.test_general_rules import agent, chat, edges

TRACE_B = "6c9f00a8a9149214e37ac744924ad71d"
TRACE_C = "7da011b9ba25a325f48bd855a35be82e"


def two_traces(link: bool = True) -> list[SpanRecord]:
    """triage answers in trace A; billing runs in trace B, whose root span links to triage's run."""
    first = [agent("a", "", "triage", 0, 300), chat("b", "a", 10, (10, 2))]
    receive = record("r" * 16, "", "process message", {}, trace_id=TRACE_B, start=400, duration=500)
    if link:
        receive.links = [LinkRecord(TRACE_A, "a" * 16)]
    billing = agent("f", "r", "billing", 410, 890, trace_id=TRACE_B)
    second = [receive, billing, chat("g", "f", 420, (7, 3), trace_id=TRACE_B)]
    return first + second


def test_each_link_into_another_trace_is_one_index_row() -> None:
    spans = two_traces()
    spans[0].links = [LinkRecord(TRACE_A, "b" * 16)]  # inside its own trace: not in the index
    assert cross_trace_links(spans) == [TraceLink(TRACE_B, "r" * 16, TRACE_A, "a" * 16)]
    assert cross_trace_links(two_traces(link=False)) == []


def test_two_traces_joined_by_a_link_are_read_as_one_run_with_the_handoff_across() -> None:
    spans = two_traces()
    assert edges(spans) == [("triage", "billing", "transfer", "completed", 1, "span link")]
    facts = structure_facts(spans)
    assert (facts.agent_path, facts.coverage, facts.input_tokens) == (("triage", "billing"), [], 17)
    view = reconstruct(spans)
    assert (view.trace_id, view.index.linked_trace_ids) == (TRACE_A, (TRACE_B,))
    assert view.index.issues.foreign_trace_ids == 0
    report = trace_report(view)
    assert (report["trace_id"], report["linked_trace_ids"]) == (TRACE_A, [TRACE_B])


def test_a_link_between_two_later_traces_of_the_run_is_read_too() -> None:
    # trace C links to billing's run in trace B (not to the run's first trace)
    receive = record("t" * 16, "", "process message", {}, trace_id=TRACE_C, start=1000, duration=300)
    receive.links = [LinkRecord(TRACE_B, "f" * 16)]
    third = [receive, agent("h", "t", "refunds", 1010, 1290, trace_id=TRACE_C),
             chat("i", "h", 1020, (5, 1), trace_id=TRACE_C)]  # fmt: skip
    spans = two_traces() + third
    assert edges(spans) == [
        ("triage", "billing", "transfer", "completed", 1, "span link"),
        ("billing", "refunds", "transfer", "completed", 1, "span link"),
    ]
    assert structure_facts(spans).agent_path == ("triage", "billing", "refunds")
    assert reconstruct(spans).index.linked_trace_ids == (TRACE_B, TRACE_C)


def test_traces_not_joined_by_a_link_stay_apart() -> None:
    spans = two_traces(link=False)
    assert structure_facts(spans).coverage == ["1 agent run not placed"]
    view = reconstruct(spans)
    assert view.index.linked_trace_ids == ()
    assert view.index.issues.foreign_trace_ids == 3  # a trace read alone: other ids are damage


def _index(rows: list[TraceLink]):  # type: ignore[no-untyped-def]
    def lookup(trace_ids: list[str]) -> list[TraceLink]:
        wanted = set(trace_ids)
        return [row for row in rows if row.trace_id in wanted or row.linked_trace_id in wanted]

    return lookup


def test_a_run_is_every_trace_reachable_through_the_index_either_way() -> None:
    rows = [TraceLink(TRACE_B, "r" * 16, TRACE_A, "a" * 16), TraceLink(TRACE_C, "s" * 16, TRACE_B, "f" * 16)]
    for asked in (TRACE_A, TRACE_B, TRACE_C):
        run = linked_run(asked, _index(rows))
        assert (run.trace_ids[0], set(run.trace_ids), run.cut) == (asked, {TRACE_A, TRACE_B, TRACE_C}, False)
    assert linked_run(TRACE_A, _index(rows), most=2).cut
    assert linked_counts([TRACE_A, TRACE_C, "f" * 32], _index(rows)) == {TRACE_A: 2, TRACE_C: 2, "f" * 32: 0}


def test_a_trace_linked_to_an_earlier_one_is_a_continuation() -> None:
    rows = [TraceLink(TRACE_B, "r" * 16, TRACE_A, "a" * 16)]
    starts = {TRACE_A: 0, TRACE_B: 400}
    assert [is_continuation(t, starts, rows) for t in (TRACE_A, TRACE_B)] == [False, True]
    # whichever side carries the link: the later trace is the continuation
    backwards = [TraceLink(TRACE_A, "a" * 16, TRACE_B, "r" * 16)]
    assert [is_continuation(t, starts, backwards) for t in (TRACE_A, TRACE_B)] == [False, True]


# ------------------------------------------------------------------ a real library: Semantic Kernel


def _semantic_kernel() -> tuple[list[SpanRecord], str, dict[str, Any]]:
    """The Semantic Kernel fixture's spans (every trace), its run's first trace and its truth."""
    from janux.tracing.sources.file_loader import load_trace_file
    from tests.support.foreign.common import FIXTURES, load_truth

    spans = load_trace_file(FIXTURES / "semantic_kernel.jsonl").spans
    ((first, truth),) = load_truth("semantic_kernel").items()
    return spans, first, truth


def test_a_real_handoff_across_traces_is_read_as_one_run() -> None:
    from tests.support.foreign.load import stated_edges

    spans, first, truth = _semantic_kernel()
    source = MemoryTraceSource(spans)
    run = run_spans([first], source.trace_links, source.get_traces)[first]
    assert {span.trace_id for span in run} == {first, *truth["linked_trace_ids"]}
    facts = structure_facts(run)
    found = sorted((e.caller, e.target, e.kind, e.status, e.attempts) for e in facts.edges)
    assert found == stated_edges(truth)
    assert [e.found for e in facts.edges] == ["span link"]
    assert (facts.input_tokens, facts.output_tokens) == (truth["input_tokens"], truth["output_tokens"])
    assert facts.agent_path == tuple(truth["agent_path"])
    report = trace_report(reconstruct(run))
    assert (report["trace_id"], report["linked_trace_ids"]) == (first, truth["linked_trace_ids"])
    # each trace read alone: the agents are apart and no transfer is seen
    alone = [structure_facts(source.get_trace(t)).edges for t in truth["linked_trace_ids"]]
    assert alone == [[] for _ in alone]


def _listed(rows: list[TraceSummary]) -> list[tuple[str, int]]:
    return [(row.trace_id, row.linked_traces) for row in rows]


@pytest.mark.parametrize("kind", KINDS)
def test_every_source_lists_the_run_once_under_its_first_trace(kind: str, tmp_path: Path) -> None:
    spans, first, truth = _semantic_kernel()
    with three_sources(spans, tmp_path) as sources:
        source = sources[kind]
        rows = source.list_traces(TraceFilter(), limit=100)
        memory = sources["memory"].list_traces(TraceFilter(), limit=100)
        assert _listed(rows) == _listed(memory)
        assert source.count_traces(TraceFilter()) == len(rows)
        listed = {r.trace_id: r.linked_traces for r in rows}
        assert listed[first] == len(truth["linked_trace_ids"])
        assert not set(truth["linked_trace_ids"]) & set(listed)
        # a continuation is still found by its id
        continuation = truth["linked_trace_ids"][0]
        assert [r.trace_id for r in source.list_traces(TraceFilter(trace_id=continuation))] == [continuation]
        assert len(source.trace_links([first])) >= 1


def test_the_derived_clickhouse_tables_list_the_run_as_memory_does(tmp_path: Path) -> None:
    spans, first, _ = _semantic_kernel()
    memory = MemoryTraceSource(spans).list_traces(TraceFilter(), limit=100)
    with derived_clickhouse(spans, tmp_path) as (source, _):
        rows = source.list_traces(TraceFilter(), limit=100)
        assert _listed(rows) == _listed(memory)
        assert source.count_traces(TraceFilter()) == len(memory)
        assert sorted(source.trace_links([first])) == sorted(MemoryTraceSource(spans).trace_links([first]))


def test_the_trace_page_says_where_the_run_continues_from_each_of_its_traces() -> None:
    spans = two_traces()
    assert continuation_text(spans, TRACE_A) == ([], [TRACE_B])
    assert continuation_text(spans, TRACE_B) == ([TRACE_A], [])
    assert continuation_text(spans, TRACE_C) == ([], [])


def test_a_store_of_schema_8_gets_the_link_index_when_opened(tmp_path: Path) -> None:
    import sqlite3

    from janux.tracing.sources.store import open_store
    from janux.tracing.sources.store.schema import DB_FILE_NAME

    spans, first, _ = _semantic_kernel()
    with open_store(tmp_path) as store:
        store.write(spans)
        before = sorted(store.trace_links([first]))
    assert before
    with sqlite3.connect(tmp_path / DB_FILE_NAME) as conn:  # what a store of schema 8 holds
        conn.execute("DROP TABLE trace_links")
        conn.execute("PRAGMA user_version = 8")
    with open_store(tmp_path) as store:
        assert sorted(store.trace_links([first])) == before
        assert _listed(store.list_traces(TraceFilter(), limit=100)) == _listed(
            MemoryTraceSource(spans).list_traces(TraceFilter(), limit=100)
        )
        assert store.ingest_stats().spans == len(spans)


def test_janux_trace_json_reads_the_run_from_any_of_its_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from janux.cli.main import main
    from janux.tracing.sources.store import open_store

    spans, first, truth = _semantic_kernel()
    with open_store(tmp_path) as store:
        store.write(spans)
    for asked in (first, truth["linked_trace_ids"][-1]):
        assert main(["trace", asked, "--json", "--data-dir", str(tmp_path)]) == 0
        report = json.loads(capsys.readouterr().out)
        assert (report["trace_id"], report["linked_trace_ids"]) == (first, truth["linked_trace_ids"])
        assert (report["transfers"], report["input_tokens"]) == (1, truth["input_tokens"])
