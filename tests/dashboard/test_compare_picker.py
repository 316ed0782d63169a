"""The Compare page's pickers: recent traces by start time, root agent and cost, in step with
the typed ids and with `?a=&b=`."""

from __future__ import annotations

from typing import Any

from janux.dashboard.views.compare import trace_label
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.testing import LoopSpec, build_trace
from tests.dashboard.app_helpers import OpenPage
from tests.support.contract_traces import TOTAL_COST, contract_trace, plain_trace

A, B, PLAIN = contract_trace(), contract_trace(seed=9), plain_trace()
A_ID, B_ID, PLAIN_ID = A[0].trace_id, B[0].trace_id, PLAIN[0].trace_id


def _source() -> MemoryTraceSource:
    return MemoryTraceSource(A + B + PLAIN)


def _compared(at: Any) -> bool:
    return any("B − A" in e.value.columns for e in at.dataframe)


def test_labels_name_start_root_agent_conversation_and_cost() -> None:
    summaries = {s.trace_id: s for s in _source().list_traces(TraceFilter())}
    a = summaries[A_ID]
    money = cells.money_text(TOTAL_COST)
    assert trace_label(a) == f"{fmt.utc(a.start_ns)} · planner · conv-1 · {money} · {A_ID[:8]}"
    # Another runtime records no cost: unpriced, never $0.
    assert f" · planner · conv-1 · {fmt.UNPRICED} · " in trace_label(summaries[PLAIN_ID])


def test_query_params_preselect_both_pickers(open_page: OpenPage) -> None:
    at = open_page(_source(), "compare.py", a=A_ID, b=PLAIN_ID)
    pick_a, pick_b = at.selectbox(key="compare_a_pick"), at.selectbox(key="compare_b_pick")
    assert (pick_a.value, pick_b.value) == (A_ID, PLAIN_ID)
    summaries = {s.trace_id: s for s in _source().list_traces(TraceFilter())}
    assert trace_label(summaries[A_ID]) in pick_a.options
    assert (at.text_input(key="compare_a").value, at.text_input(key="compare_b").value) == (A_ID, PLAIN_ID)
    assert _compared(at)


def test_picking_two_traces_compares_them_and_updates_the_url(open_page: OpenPage) -> None:
    at = open_page(_source(), "compare.py")
    assert not _compared(at)
    assert any("Pick two traces" in i.value for i in at.info)
    assert len(at.selectbox(key="compare_a_pick").options) == 1 + 3  # nothing picked, 3 traces
    at.selectbox(key="compare_a_pick").set_value(A_ID).run()
    at.selectbox(key="compare_b_pick").set_value(B_ID).run()
    assert not at.exception
    assert _compared(at)
    assert (at.query_params["a"], at.query_params["b"]) == (A_ID, B_ID)
    assert at.text_input(key="compare_b").value == B_ID  # the id field follows the picker
    at.selectbox(key="compare_b_pick").set_value("").run()
    assert not _compared(at) and "b" not in at.query_params


def test_a_typed_id_moves_the_picker(open_page: OpenPage) -> None:
    at = open_page(_source(), "compare.py", a=A_ID, b=B_ID)
    at.text_input(key="compare_b").set_value(f"  {PLAIN_ID.upper()} ").run()
    assert not at.exception
    assert at.selectbox(key="compare_b_pick").value == PLAIN_ID
    assert at.query_params["b"] == PLAIN_ID
    table = next(e.value for e in at.dataframe if "B − A" in e.value.columns).set_index("measure")
    assert table.loc["cost", "B"].startswith("≈ $")  # the other runtime, estimated


def test_an_older_or_unknown_id_is_still_offered(open_page: OpenPage) -> None:
    """An id beyond the newest traces keeps its label; an unknown one says it is not there."""
    many = [
        s
        for seed in range(1, 106)
        for s in build_trace(LoopSpec("triage"), seed=seed, start_ns=1_700_000_000 * 10**9 + seed * 10**9)
    ]
    source = MemoryTraceSource(many)
    oldest = source.list_traces(TraceFilter(), limit=1_000)[-1]
    unknown = "ab" * 16
    at = open_page(source, "compare.py", a=oldest.trace_id, b=unknown)
    pick_a, pick_b = at.selectbox(key="compare_a_pick"), at.selectbox(key="compare_b_pick")
    assert pick_a.value == oldest.trace_id and trace_label(oldest) in pick_a.options
    assert pick_b.value == unknown and f"{unknown} (not in this source)" in pick_b.options
    assert any(unknown in w.value for w in at.warning)
