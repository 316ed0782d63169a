"""One meaning per number (issue 19): the definitions in `janux.tracing.analysis.outcomes` and the
tree rows built on them, on the runtime's demo traces."""

from __future__ import annotations

from typing import Any

import pytest

from janux.dashboard.views.handoff_chart import handoff_frames
from janux.tracing import conventions as c
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import outcomes, reconstruct
from janux.tracing.analysis.trace_outline import headline, outline, outline_head, outline_row
from janux.tracing.analysis.trace_parts import Attempt
from janux.tracing.analysis.trace_search import matches
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.testing import synthetic_trace

Demo = tuple[list[Any], dict[str, str]]


def _view(demo: Demo, scenario: str) -> TraceView:
    spans, ids = demo
    return reconstruct([s for s in spans if s.trace_id == ids[scenario]])


def test_a_failed_attempt_never_reads_completed_and_keeps_its_own_duration(demo: Demo) -> None:
    view = _view(demo, "retry_then_success")
    (d,) = view.delegations
    first, second = d.attempts
    assert d.status == c.STATUS_COMPLETED
    assert outcomes.attempt_outcome(first) == "failed: model_error"
    assert outcomes.attempt_outcome(second) == c.STATUS_COMPLETED
    assert first.error == "upstream returned 503 Service Unavailable"
    # The graph labels each attempt with its own outcome and duration, not the delegation's.
    dot = "\n".join(handoff_frames(view).points["detail"])
    assert f"attempt 1/2: failed: model_error · {fmt.ms(first.duration_ms)}" in dot
    assert f"attempt 2/2: completed · {fmt.ms(second.duration_ms)}" in dot
    assert fmt.ms(d.duration_ms) not in dot
    rows = {r.span_id: r for r in outline(view)}
    assert rows[first.span_id].outcome == "failed: model_error"
    assert rows[first.span_id].duration_ms == first.duration_ms


@pytest.mark.parametrize(
    ("attempt", "expected"),
    [
        (Attempt(1, 0, "a", 1.0, "error", error_type=c.ERROR_TIMEOUT), "timeout"),
        (Attempt(1, 0, "a", 1.0, "error", stop_reason="max_turns"), "cut: max_turns"),
        (Attempt(1, 0, "a", None, "open"), "open"),
        (Attempt(1, 0, "a", 1.0, "error", error_type="rate_limit"), "failed: rate_limited"),
        (Attempt(1, 0, "a", 1.0, "error"), "failed: error"),
    ],
)
def test_attempt_outcomes(attempt: Attempt, expected: str) -> None:
    assert outcomes.attempt_outcome(attempt) == expected


def test_failed_trace_and_failed_handoff_have_one_meaning(demo: Demo) -> None:
    retried = _view(demo, "retry_then_success")
    assert [f.kind for f in retried.failures] == [outcomes.RETRIED]
    assert not outcomes.is_failed_trace(retried.failures)
    assert outcomes.trace_status(retried.failures, 0) == "ok"
    cut = _view(demo, "cut_max_tokens")
    assert any(outcomes.is_failed_handoff(d) for d in cut.delegations)
    assert outcomes.trace_status(cut.failures, 0) == "failed"
    assert dict(headline(cut))["Status"] == "failed"
    assert outcomes.failure_text(cut.failures).startswith("cut: ")
    assert outcomes.failure_text(retried.failures) == "retried: model_error"


def test_rate_limits_have_one_reason_name(demo: Demo) -> None:
    denied = _view(demo, "denied_rate_limited").failures
    failed = _view(demo, "failed_delegation").failures
    assert {f.reason for f in denied} == {f.reason for f in failed} == {c.DENY_RATE_LIMITED}
    assert outcomes.reason_name("rate_limit") == outcomes.reason_name(c.DENY_RATE_LIMITED)


def test_missing_values_each_have_one_word() -> None:
    words = {outcomes.NOT_RUN, outcomes.NO_LIMIT, outcomes.STILL_OPEN, outcomes.NONE_SHOWN, outcomes.UNKNOWN}
    assert len(words) == 5
    assert outcomes.budget_cell(3, None) == "3 (no limit)"
    assert outcomes.budget_cell(None, 5) == "open / 5"
    assert outcomes.budget_cell(3, 4) == "3 / 4 (75%)"
    assert outcomes.budget_cell(None, None) == outcomes.NONE_SHOWN
    assert outcomes.attempts_per_delegation(0, 0) == outcomes.NONE_SHOWN
    assert outcomes.attempts_per_delegation(3, 2) == "1.50"


def test_denied_handoff_reads_not_run_on_the_graph(demo: Demo) -> None:
    dot = "\n".join(handoff_frames(_view(demo, "denied_max_depth")).points["detail"])
    assert f"denied · {outcomes.NOT_RUN}" in dot and "0 attempts" not in dot


def test_money_attributes_read_as_dollars_not_float_noise() -> None:
    assert fmt.attribute_text(c.JANUX_ROUND_COST, 0.0038639499999999997) == "$0.00386395"
    assert fmt.attribute_text("gen_ai.request.temperature", 0.1 + 0.2) == "0.3"
    assert fmt.attribute_text("janux.turn.rounds", 2) == "2"
    assert fmt.attribute_text("flag", True) == "True"


def test_outline_lists_every_span_and_the_search_finds_by_attribute(demo: Demo) -> None:
    view = _view(demo, "nested_delegation")
    rows = outline(view)
    assert [r.span_id for r in rows] == [view.index.spans[p].span_id for p in view.index.order]
    assert {r.kind for r in rows} >= {"loop", "delegation", "attempt", "round"}
    found = [r for r in rows if matches(view, r, "fact_checker")]
    assert found and all(
        "fact_checker" in (r.label + r.agent + str(view.span(r.span_id))).lower() for r in found
    )
    conversation = next(n.conversation_id for n in view.nodes if n.conversation_id)
    assert all(matches(view, r, conversation) for r in rows if r.kind == "loop")
    assert [r for r in rows if matches(view, r, "")] == rows


@pytest.mark.parametrize("scenario", ["nested_delegation", "retry_then_success", "synthetic"])
def test_first_rows_and_one_row_alone_equal_the_whole_outline(demo: Demo, scenario: str) -> None:
    """The Trace page computes the tree's first rows, and the selected span's row, alone: the same
    rows as the whole outline's."""
    view = reconstruct(synthetic_trace(600, seed=5)) if scenario == "synthetic" else _view(demo, scenario)
    rows = outline(view)
    assert {r.kind for r in rows} >= {"loop", "delegation", "attempt", "round"}
    for count in (0, 1, 7, len(rows), len(rows) + 10):
        assert outline_head(view, count) == rows[:count]
    assert [outline_row(view, r.span_id) for r in rows] == rows
    assert outline_row(view, "0" * 16) is None


def test_compare_tells_two_loops_that_failed_differently_apart(demo: Demo) -> None:
    from janux.dashboard.views.compare import failure_diff, tree_diff

    retried = _view(demo, "retry_then_success")
    failed = _view(demo, "failed_delegation")
    diff = tree_diff(retried, failed).set_index("loop")
    both = [path for path in diff.index if diff.loc[path, "status A"] and diff.loc[path, "status B"]]
    attempt = next(p for p in both if "researcher" in p and p.endswith("#1"))
    assert (diff.loc[attempt, "status A"], diff.loc[attempt, "status B"]) == (
        "error: model_error",
        "error: rate_limited",
    )
    assert diff.loc[attempt, "change"] == "changed"
    failures = failure_diff(retried, failed).set_index("failure")
    assert failures.loc["retried: model_error", "A"] == 1 and failures.loc["failed: rate_limited", "B"] == 1


def test_budget_lines_read_the_same_on_the_trace_page_and_the_handoff_screen(demo: Demo) -> None:
    from janux.dashboard.views.handoff_story import burn_frame
    from janux.dashboard.views.tables import budgets_frame

    view = _view(demo, "cut_max_turns")
    on_trace = budgets_frame(view)
    on_handoff = burn_frame(view.budgets)
    assert list(on_trace["turns"]) == list(on_handoff["turns"])
    assert list(on_trace["ms"]) == list(on_handoff["ms"])
    cells = set(on_trace["turns"]) | set(on_trace["tokens"]) | set(on_trace["ms"])
    assert not any(cell.endswith("/ open") or cell.endswith("/ —") for cell in cells)


def test_the_handoff_chart_colours_each_attempt_by_how_it_ended(demo: Demo) -> None:
    from janux.dashboard.views.handoff_chart import handoff_frames

    view = _view(demo, "retry_then_success")
    frames = handoff_frames(view)
    loops = frames.points[frames.points["kind"] == "loop"]
    by_label = loops.assign(first=loops["label"].str.split("\n").str[0]).set_index("first")
    assert (by_label.loc["researcher  #1", "state"], by_label.loc["researcher  #2", "state"]) == (
        "failed",
        "ok",
    )
    assert list(loops["span_id"]) == [n.span_id for n in view.nodes]
    handoffs = frames.points[frames.points["kind"] == "handoff"]
    (d,) = view.delegations
    assert list(handoffs["detail"]) == [
        f"{d.tool} · attempt 1/2: failed: model_error · {fmt.ms(d.attempts[0].duration_ms)}",
        f"{d.tool} · attempt 2/2: completed · {fmt.ms(d.attempts[1].duration_ms)}",
    ]
    assert list(frames.edges["dashed"]) == [True, True, False, False]  # the failed attempt's elbow
    # A click on a diamond selects the attempt it is labelled with (the failed attempt 1/2 never
    # opens the delegation, which completed), and that attempt's marks are outlined: its loop and
    # its diamond, nothing else.
    assert list(handoffs["span_id"]) == [a.span_id for a in d.attempts]
    outlined = handoff_frames(view, selected=d.attempts[0].span_id).points
    assert list(outlined[outlined["selected"]]["kind"]) == ["loop", "handoff"]
    assert not handoff_frames(view).points["selected"].any()


def test_every_mark_of_the_handoff_chart_selects_a_span_of_its_trace(demo: Demo) -> None:
    """A click on any loop, handoff or handoff that never ran selects a span the detail can show:
    the loop's, a retried delegation's attempt, else the delegation's tool span."""
    from janux.dashboard.views.handoff_chart import handoff_frames

    for name in ("retry_then_success", "nested_delegation", "denied_max_depth", "transfer_to_specialist"):
        view = _view(demo, name)
        points = handoff_frames(view).points
        assert all(view.span(span_id) is not None for span_id in points["span_id"]), name
        tools = {d.tool_span_id for d in view.delegations if d.tool_span_id and d.attempt_count <= 1}
        assert tools <= set(points["span_id"]), name
        if name == "denied_max_depth":
            (note,) = points[points["kind"] == "not run"].itertuples()
            assert "max_depth" in str(note.detail) and note.state == "failed"
