"""The search inside a trace and the narrowed trees of the Trace page (issue 31): the rule in
`janux.tracing.analysis.trace_search`, then the page (AppTest) selecting what a search finds."""

from __future__ import annotations

import pytest

from janux.dashboard.ui.trace_explorer import ERRORS_KEY, HANDOFFS_KEY, SEARCH_KEY
from janux.dashboard.ui.trace_tree import guides
from janux.tracing import conventions as c
from janux.tracing.analysis import reconstruct
from janux.tracing.analysis.trace_outline import HANDOFF_KINDS, outline
from janux.tracing.analysis.trace_search import failed_span_ids, matches, relinked, with_ancestors
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.records import STATUS_ERROR
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import OpenPage
from tests.dashboard.shown import tree_rows
from tests.support.failed_round_trace import (
    CAPTURED_TEXT,
    EXCEPTION_MESSAGE,
    EXCEPTION_TYPE,
    FAILED_TOKENS,
    STATUS_MESSAGE,
    failed_round_trace,
)


@pytest.fixture(scope="module")
def view() -> TraceView:
    return reconstruct(failed_round_trace())


def _found(view: TraceView, text: str) -> list[str]:
    return [r.span_id for r in outline(view) if matches(view, r, text)]


def _failed_round(view: TraceView) -> str:
    return next(s.span_id for s in view.index.spans if s.status_message == STATUS_MESSAGE)


def _ancestors(view: TraceView, span_id: str) -> set[str]:
    index, out = view.index, set()
    pos = index.parent[index.by_id[span_id]]
    while pos >= 0:
        out.add(index.spans[pos].span_id)
        pos = index.parent[pos]
    return out


@pytest.mark.parametrize(
    "text",
    ["503", STATUS_MESSAGE.upper(), EXCEPTION_TYPE, "try again later", f"  {EXCEPTION_MESSAGE}  "],
)
def test_status_messages_and_exception_events_are_found(view: TraceView, text: str) -> None:
    """A status message and an exception event's type and message are searched (the issue's case:
    "503" found no span while the selected span's error said "upstream returned 503")."""
    assert _found(view, text) == [_failed_round(view)]


def test_handoff_event_attributes_and_captured_content_are_found(view: TraceView) -> None:
    (delegation,) = view.delegations
    # `session_mode` is written on the HANDOFF events only, never as a span attribute.
    assert all(c.JANUX_HANDOFF_SESSION_MODE not in s.attributes for s in view.index.spans)
    assert _found(view, c.SESSION_NEW) == [delegation.tool_span_id]
    first_round = min((s for s in view.index.spans if s.name.startswith(c.OP_CHAT)), key=lambda s: s.start_ns)
    assert _found(view, "volcano eruptions") == [first_round.span_id]
    assert CAPTURED_TEXT in str(first_round.attributes[c.GEN_AI_INPUT_MESSAGES])
    assert _found(view, "no such text anywhere") == []
    assert len(_found(view, "")) == len(view.index.spans)


def test_errors_only_keeps_exactly_the_failed_spans_and_their_ancestors(view: TraceView) -> None:
    rows = outline(view)
    failed = failed_span_ids(view)
    assert failed == {s.span_id for s in view.index.spans if s.status_code == STATUS_ERROR}
    assert len(failed) == 2  # the failed round and its attempt; the retried delegation completed
    kept = with_ancestors(view, rows, failed)
    expected = failed.union(*(_ancestors(view, f) for f in failed))
    assert [r.span_id for r in kept] == [r.span_id for r in rows if r.span_id in expected]
    # The narrowed tree's lines end at its last rows, not at rows left out.
    assert guides(kept) == ["", "l", " l", "  l"]


def test_relinked_marks_the_last_child_among_the_rows_kept(view: TraceView) -> None:
    rows = outline(view)
    assert [r.last for r in relinked(rows)] == [r.last for r in rows]
    loops = [r for r in rows if r.kind in HANDOFF_KINDS]
    assert [r.last for r in relinked(loops)] == [True, True, False, True]
    assert rows == outline(view)  # the rows given are never changed (they are kept between runs)


def test_rows_carry_state_tokens_and_inclusive_cost(view: TraceView) -> None:
    by_id = {r.span_id: r for r in outline(view)}
    bad = by_id[_failed_round(view)]
    tokens = f"{FAILED_TOKENS[0]:,} / {FAILED_TOKENS[1]:,}"
    assert (bad.state, bad.tokens, bad.scope) == ("failed", tokens, "")
    (delegation,) = view.delegations
    tool = by_id[str(delegation.tool_span_id)]
    assert (tool.state, tool.scope) == ("retried", "incl.")
    root = by_id[view.roots[0].span_id]
    assert root.scope == "incl." and "own: $0.3750" in root.breakdown and "inclusive" in root.breakdown


def test_the_page_selects_what_a_search_finds_and_steps_through_matches(open_page: OpenPage) -> None:
    spans = failed_round_trace()
    view = reconstruct(spans)
    at = open_page(MemoryTraceSource(spans), "trace.py", trace_id=spans[0].trace_id)
    at.text_input(key=SEARCH_KEY).set_value("503").run()
    assert not at.exception
    assert at.query_params["span"] == _failed_round(view)
    assert any(c.value.startswith(f"1 of {len(spans)} spans match. Match 1 of 1") for c in at.caption)
    shown = tree_rows(at)
    assert list(shown[shown["hit"]]["span_id"]) == [_failed_round(view)]
    assert set(shown["span_id"]) == {_failed_round(view)} | _ancestors(view, _failed_round(view))
    # Next / previous go round the matches of "researcher" (the attempts, the delegation, ...).
    at.text_input(key=SEARCH_KEY).set_value("researcher").run()
    hits = [r.span_id for r in outline(view) if matches(view, r, "researcher")]
    assert at.query_params["span"] == hits[0]
    at.button(key="trace_search_next").click().run()
    assert at.query_params["span"] == hits[1]
    at.button(key="trace_search_prev").click().run()
    at.button(key="trace_search_prev").click().run()
    assert at.query_params["span"] == hits[-1]
    assert not at.exception


def test_the_page_toggles_errors_only_and_loops_and_delegations(open_page: OpenPage) -> None:
    spans = failed_round_trace()
    view = reconstruct(spans)
    at = open_page(MemoryTraceSource(spans), "trace.py", trace_id=spans[0].trace_id)
    assert len(tree_rows(at)) == len(spans)
    at.toggle(key=ERRORS_KEY).set_value(True).run()
    failed = failed_span_ids(view)
    expected = failed.union(*(_ancestors(view, f) for f in failed))
    shown = tree_rows(at)
    assert set(shown["span_id"]) == expected and len(shown) == len(expected)
    assert set(shown[shown["span_id"].isin(failed)]["state"]) == {"failed"}
    assert at.query_params["span"] == next(r.span_id for r in outline(view) if r.span_id in failed)
    at.toggle(key=ERRORS_KEY).set_value(False).run()
    at.toggle(key=HANDOFFS_KEY).set_value(True).run()
    assert list(tree_rows(at)["kind"]) == [r.kind for r in outline(view) if r.kind in HANDOFF_KINDS]
    assert not at.exception
