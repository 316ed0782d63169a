"""Find inside traces over the whole filtered range, on every source (issue 19: find read only the
newest 1,000 traces of the filter).

1,100 copies of the demo's failed delegation (a rate-limited researcher) are the OLDEST traces,
under 1,000 newer plain answers, so a find that stops after the newest 1,000 finds none of them.
Each source must count all 1,100 and page down to the oldest one.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.tracing.analysis.trace_find import FindError, TraceQuery
from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter, TraceSource
from janux.tracing.sources.store import open_store
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement
from tests.support.demo_traces import demo_traces

MATCHING = 1_100
"""Copies of the failed delegation: more than the 1,000 the old find read."""
NEWER = 1_000
"""Copies of the plain answer, all newer than every failed delegation."""
STEP_NS = 10_000_000_000
"""Start of copy i is i steps after the first (no two copies overlap)."""


def _copies(spans: list[SpanRecord], count: int, first: int, tag: str) -> list[SpanRecord]:
    """`count` copies of one trace under new ids, copy i starting at step `first + i`."""
    base = min(s.start_ns for s in spans)
    out = []
    for i in range(count):
        trace_id = f"{tag}{first + i:031x}"
        shift = (first + i) * STEP_NS - base + 1_700_000_000_000_000_000
        out += [dataclasses.replace(s, trace_id=trace_id, start_ns=s.start_ns + shift) for s in spans]
    return out


def _oldest_id() -> str:
    return f"a{0:031x}"


@pytest.fixture(scope="module")
def spans() -> list[SpanRecord]:
    demo = demo_traces()
    ids = demo.trace_ids
    failed = [s for s in demo.spans if s.trace_id == ids["failed_delegation"]]
    plain = [s for s in demo.spans if s.trace_id == ids["plain_answer"]]
    assert not any(s.attributes.get("gen_ai.agent.name") == "researcher" for s in plain)
    return _copies(failed, MATCHING, 0, "a") + _copies(plain, NEWER, MATCHING, "b")


@pytest.fixture(scope="module", params=["store", "memory", "clickhouse"])
def source(request: pytest.FixtureRequest, spans: list[SpanRecord], tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[TraceSource]:  # fmt: skip
    if request.param == "memory":
        yield MemoryTraceSource(spans)
    elif request.param == "store":
        with open_store(tmp_path_factory.mktemp("store")) as store:
            store.write(spans)
            yield store
    else:
        client = ChdbClient(str(tmp_path_factory.mktemp("chdb")))
        client.command(EXPORTER_DDL)
        client.command(insert_statement(spans))
        yield ClickHouseSource(client)
        client.close()


QUERIES = {
    "reason": TraceQuery(reason="rate_limit"),  # the one name of rate_limit is rate_limited
    "agent": TraceQuery(agent="researcher"),
    "error": TraceQuery(error="LIMIT Exceeded"),
    "attribute": TraceQuery(attribute="janux.handoff.target = researcher"),
    "key": TraceQuery(attribute="janux.handoff.status"),
    "all four": TraceQuery(
        reason="rate_limited", agent="researcher", error="exceeded", attribute="janux.handoff.status=failed"
    ),
}


@pytest.mark.parametrize("name", list(QUERIES))
def test_find_counts_the_whole_range_and_pages_to_the_oldest(source: TraceSource, name: str) -> None:
    query = QUERIES[name]
    assert source.count_traces(TraceFilter()) == MATCHING + NEWER
    first = source.find_traces(TraceFilter(), query, limit=50)
    assert first.total == MATCHING
    newest = [f"a{i:031x}" for i in range(MATCHING - 1, MATCHING - 51, -1)]
    assert [s.trace_id for s in first.summaries] == newest
    last = source.find_traces(TraceFilter(), query, limit=50, offset=MATCHING - 30)
    assert last.total == MATCHING
    assert len(last.summaries) == 30 and last.summaries[-1].trace_id == _oldest_id()


def test_find_keeps_the_list_filter(source: TraceSource) -> None:
    # The oldest 100 failed delegations only, by time range.
    flt = TraceFilter(end_ns=1_700_000_000_000_000_000 + 100 * STEP_NS)
    found = source.find_traces(flt, TraceQuery(reason="rate_limited"), limit=200)
    assert found.total == 100 and found.summaries[-1].trace_id == _oldest_id()
    assert source.find_traces(TraceFilter(), TraceQuery(agent="nobody"), limit=10).total == 0
    assert source.find_traces(TraceFilter(), TraceQuery(attribute="janux.handoff.target=nobody")).total == 0


@pytest.mark.parametrize(
    ("attribute", "says"),
    [
        ("janux.handoff.status=", "no value after '='"),
        ("  = failed", "no key before '='"),
        ("two words=x", "one word"),
    ],
)
def test_bad_attribute_input_is_refused_with_a_clear_message(
    source: TraceSource, attribute: str, says: str
) -> None:
    with pytest.raises(FindError, match=says) as raised:
        source.find_traces(TraceFilter(), TraceQuery(attribute=attribute))
    assert "Span attribute" in str(raised.value) and attribute.strip() in str(raised.value)


def test_the_store_answers_from_its_indexes_and_kept_facts(spans: list[SpanRecord], tmp_path: Path) -> None:
    """Attribute, agent and error text come from the store's indexes (no trace rebuilt); a reason
    rebuilds the traces that can have one once, and a new process reads the kept facts instead."""
    with open_store(tmp_path) as store:
        store.write(spans)
        for name in ("agent", "error", "attribute", "key"):
            assert store.find_traces(TraceFilter(), QUERIES[name]).total == MATCHING
        assert store._find_cache.computed == 0
        assert store.find_traces(TraceFilter(), QUERIES["reason"]).total == MATCHING
        assert store._find_cache.computed == MATCHING  # only the traces with a failure, once
        store.find_traces(TraceFilter(), QUERIES["reason"], offset=100)
        assert store._find_cache.computed == MATCHING
    with open_store(tmp_path) as again:
        assert again.find_traces(TraceFilter(), QUERIES["reason"]).total == MATCHING
        assert again._find_cache.computed == 0  # kept beside the store by the first process


def test_prune_drops_the_find_indexes_of_what_it_deletes(spans: list[SpanRecord], tmp_path: Path) -> None:
    """The find index shrinks with the store: a pruned trace leaves no error row."""
    newest_failed = 1_700_000_000_000_000_000 + (MATCHING - 1) * STEP_NS
    with open_store(tmp_path) as store:
        store.write(spans)
        result = store.prune(older_than_days=0, now_ns=newest_failed + STEP_NS // 2)
        assert result.traces == MATCHING
        conn = sqlite3.connect(store.path)
        left = conn.execute("SELECT count(*) FROM span_errors WHERE TraceId LIKE 'a%'").fetchone()[0]
        conn.close()
        assert left == 0
        assert store.find_traces(TraceFilter(), QUERIES["agent"]).total == 0


def test_the_store_finds_every_kind_of_attribute_value_as_memory_does(tmp_path: Path) -> None:
    """The store has no attribute index: SQL's JSON functions decide text, integer and boolean
    values, and floats, arrays and keys a JSON path cannot name are confirmed from the spans. Each
    field finds exactly the traces the memory source finds."""
    plain = [s for s in demo_traces().spans if s.trace_id == demo_traces().trace_ids["plain_answer"]]
    values: list[dict[str, object]] = [
        {"k.text": "gpt-4o", "k.int": 400, "k.bool": True, "k.float": 0.25, "k.list": ("a", "b"), 'k"q': "x"},
        {"k.text": "400", "k.int": 7, "k.bool": False, "k.float": 1e-05, "k.list": ("b",), 'k"q': "y"},
        {"k.text": "true", "k.float": 2.0},
    ]
    spans = []
    for number, extra in enumerate(values):
        copy = _copies(plain, 1, number, "c")
        spans += [dataclasses.replace(copy[0], attributes={**copy[0].attributes, **extra}), *copy[1:]]
    memory = MemoryTraceSource(spans)
    fields = ["k.text=gpt-4o", "k.text=400", "k.text=true", "k.int=400", "k.int=7", "k.bool=true",
              "k.bool=false", "k.float=0.25", "k.float=1e-05", "k.float=2.0", "k.list=['a', 'b']",
              "k.list", 'k"q=x', 'k"q', "k.none", "k.int=400.0"]  # fmt: skip
    with open_store(tmp_path) as store:
        store.write(spans)
        for field in fields:
            query = TraceQuery(attribute=field)
            want = {s.trace_id for s in memory.find_traces(TraceFilter(), query).summaries}
            got = store.find_traces(TraceFilter(), query)
            assert {s.trace_id for s in got.summaries} == want and got.total == len(want), field
        assert store.find_traces(TraceFilter(), TraceQuery(attribute="k.float=0.25")).total == 1
