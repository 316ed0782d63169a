"""The Traces page: each filter really narrows the list, paging walks it, and the sources it lists.

Every filter is set alone on a source where it must keep some traces and drop others, and the
list shown must be exactly the expected set (a filter that did nothing would show them all).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.testing import LoopSpec, RoundSpec, build_trace
from tests.dashboard.app_helpers import OpenPage
from tests.support.contract_traces import contract_trace, plain_trace

MINUTE_NS = 60 * 1_000_000_000
BULK = 22
"""Old traces that fill a second page (25 rows per page)."""


def _one_loop(
    agent: str, cost: float, *, seed: int, start_ns: int, conversation: str, service: str = "svc-a"
) -> list[SpanRecord]:
    root = LoopSpec(agent, rounds=[RoundSpec(100, 10, cost)])
    return build_trace(root, seed=seed, start_ns=start_ns, conversation_id=conversation, service=service)


@pytest.fixture(scope="module")
def traces() -> dict[str, list[SpanRecord]]:
    now = time.time_ns()
    named = {
        "recent": _one_loop("planner", 0.25, seed=11, start_ns=now - 10 * MINUTE_NS, conversation="conv-a"),
        "hour_ago": _one_loop("writer", 0.01, seed=12, start_ns=now - 120 * MINUTE_NS, conversation="conv-b"),
        "contract": contract_trace(),
        "plain": plain_trace(),
    }  # fmt: skip
    for i in range(BULK):
        named[f"bulk{i}"] = _one_loop("bulk", 0.001, seed=100 + i, start_ns=1_600_000_000_000_000_000 + i,
                                      conversation="bulk", service="bulk-svc")  # fmt: skip
    return named


@pytest.fixture
def source(traces: dict[str, list[SpanRecord]]) -> MemoryTraceSource:
    return MemoryTraceSource([span for spans in traces.values() for span in spans])


def _ids(traces: dict[str, list[SpanRecord]], *names: str) -> set[str]:
    return {traces[name][0].trace_id for name in names}


def _listed(at: AppTest) -> set[str]:
    table = next(e.value for e in at.dataframe if "checks" in e.value.columns)
    return set(table["trace"])


ALL_BUT_BULK = ("recent", "hour_ago", "contract", "plain")


@pytest.mark.parametrize(
    ("widget", "key", "value", "expected"),
    [
        ("selectbox", "traces_range", "Last 15 minutes", ("recent",)),
        ("selectbox", "traces_range", "Last 24 hours", ("recent", "hour_ago")),
        ("selectbox", "traces_service", "svc-a", ("recent", "hour_ago")),
        ("selectbox", "traces_service", "other-app", ("plain",)),
        ("selectbox", "traces_agent", "writer", ("hour_ago",)),
        ("selectbox", "traces_conversation", "conv-a", ("recent",)),
        ("selectbox", "traces_conversation", "conv-1", ("contract", "plain")),
        ("number_input", "traces_cost", 0.5, ("contract",)),
        ("number_input", "traces_cost", 0.2, ("recent", "contract")),
    ],
)
def test_each_filter_narrows_the_list(
    open_page: OpenPage,
    source: MemoryTraceSource,
    traces: dict[str, list[SpanRecord]],
    widget: str,
    key: str,
    value: Any,
    expected: tuple[str, ...],
) -> None:
    at = open_page(source)
    assert len(_listed(at)) == len(traces)
    getattr(at, widget)(key=key).set_value(value).run()
    assert not at.exception
    assert _listed(at) == _ids(traces, *expected)


def test_status_and_failed_handoff_filters(
    open_page: OpenPage, source: MemoryTraceSource, traces: dict[str, list[SpanRecord]]
) -> None:
    summaries = {s.trace_id: s for s in source.list_traces(TraceFilter(), limit=100)}
    with_errors = {t for t, s in summaries.items() if s.error_spans}
    failing = {t for t, s in summaries.items() if s.failed_handoffs}
    # The fixtures must make each filter matter: some traces in, some out.
    # The plain trace's delegation failed once, then its retry answered: errors, but no failed handoff.
    assert with_errors == _ids(traces, "contract", "plain") and failing == _ids(traces, "contract")
    at = open_page(source)
    at.selectbox(key="traces_status").set_value("error").run()
    assert _listed(at) == with_errors
    at.selectbox(key="traces_status").set_value("ok").run()
    assert _listed(at) == set(summaries) - with_errors
    at.selectbox(key="traces_status").set_value("(any)").run()
    at.checkbox(key="traces_failed").check().run()
    assert _listed(at) == failing


def test_trace_id_search_and_combined_filters(
    open_page: OpenPage, source: MemoryTraceSource, traces: dict[str, list[SpanRecord]]
) -> None:
    at = open_page(source)
    contract_id = traces["contract"][0].trace_id
    at.text_input(key="traces_id").set_value(contract_id[:5].upper()).run()
    assert _listed(at) == {contract_id}
    at.text_input(key="traces_id").set_value("").run()
    at.selectbox(key="traces_service").set_value("svc-a").run()
    at.selectbox(key="traces_agent").set_value("planner").run()
    assert _listed(at) == _ids(traces, "recent")


def test_paging_walks_every_trace_once(
    open_page: OpenPage, source: MemoryTraceSource, traces: dict[str, list[SpanRecord]]
) -> None:
    at = open_page(source)
    at.selectbox(key="traces_size").set_value(25).run()
    first = _listed(at)
    assert len(first) == 25
    assert f"{len(traces)} traces match; showing 25 (page 1 of 2)." in [c.value for c in at.caption]
    at.number_input(key="traces_page").set_value(2).run()
    second = _listed(at)
    assert len(second) == len(traces) - 25 and not first & second
    assert first | second == {spans[0].trace_id for spans in traces.values()}
    # Newest first: the recent traces are on page 1, the oldest bulk trace on page 2.
    assert _ids(traces, *ALL_BUT_BULK) <= first and _ids(traces, "bulk0") <= second


def test_live_tail_shows_traces_that_arrive(open_page: OpenPage, source: MemoryTraceSource) -> None:
    at = open_page(source)
    at.toggle(key="traces_live").set_value(True).run()
    before = _listed(at)
    arriving = _one_loop("late", 0.5, seed=999, start_ns=time.time_ns(), conversation="late")
    source.add(arriving)
    at.run()  # what the fragment's timer does every LIVE_EVERY_S seconds in the browser
    assert _listed(at) == before | {arriving[0].trace_id}
