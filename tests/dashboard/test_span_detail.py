"""The selected span's detail on the Trace page (issue 31): an events table with one row per
attribute, readable in a narrow pane."""

from __future__ import annotations

from janux.dashboard.ui.text_tables import LONG_CHARS
from janux.dashboard.views.span_detail import EVENT_COLUMNS, span_detail
from janux.tracing import conventions as c
from janux.tracing.analysis import reconstruct
from janux.tracing.analysis.trace_outline import outline_row
from janux.tracing.analysis.trace_parts import AgentNode
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import OpenPage
from tests.dashboard.shown import detail_tables
from tests.support.failed_round_trace import failed_round_trace
from tests.tracing.analysis.test_figures_across_surfaces import Scenario, Sub, run


def test_a_failed_attempt_says_its_failed_round_reported_no_usage() -> None:
    # Issue 28: a failed round is a round; when it reported no usage the detail says so, never
    # "0 in / 0 out"; a failed round that did report usage shows it.
    sub = Sub("researcher", (False, True), (30, 3), None)
    scenario = Scenario(None, ((100, 10), (50, 5)), (sub,), False, None, (1, 1), False)
    _, spans = run(scenario)
    view = reconstruct(spans)
    first, second = sorted((n for n in view.nodes if n.agent == "researcher"), key=lambda n: n.attempt or 0)

    failed = shown_in(view, first)
    assert (failed["own tokens"], failed["model rounds"]) == ("no usage reported (1 failed round)", "1")
    assert shown_in(view, second)["own tokens"] == "30 in / 3 out"
    reported = reconstruct(failed_round_trace())  # its failed round reported usage: shown as such
    for node in reported.nodes:
        assert "no usage reported" not in shown_in(reported, node)["own tokens"], node.agent


def shown_in(view: TraceView, node: AgentNode) -> dict[str, str]:
    span = view.span(node.span_id)
    assert span is not None
    return dict(span_detail(view, span, outline_row(view, span.span_id)).usage)


def test_events_read_one_attribute_a_row_under_the_event_name() -> None:
    view = reconstruct(failed_round_trace())
    (delegation,) = view.delegations
    tool = view.span(str(delegation.tool_span_id))
    assert tool is not None
    events = span_detail(view, tool, outline_row(view, tool.span_id)).events
    assert list(events.columns) == EVENT_COLUMNS
    start, end = tool.events
    assert len(events) == len(start.attributes) + len(end.attributes)
    assert list(events["event"]) == [c.EVENT_HANDOFF_START] + [""] * (len(start.attributes) - 1) + [
        c.EVENT_HANDOFF_END
    ] + [""] * (len(end.attributes) - 1)
    ended = events.iloc[len(start.attributes) :]
    values = dict(zip(ended["attribute"], ended["value"], strict=True))
    assert values[c.JANUX_HANDOFF_STATUS] == c.STATUS_COMPLETED


def test_the_page_sends_events_grouped_and_long_values_whole(open_page: OpenPage) -> None:
    spans = failed_round_trace()
    view = reconstruct(spans)
    (delegation,) = view.delegations
    tool = view.span(str(delegation.tool_span_id))
    assert tool is not None
    tool.attributes["janux.test.long"] = "x" * (LONG_CHARS * 3)
    at = open_page(MemoryTraceSource(spans), "trace.py", trace_id=spans[0].trace_id, span=tool.span_id)
    tables = detail_tables(at)
    assert tables["events"]["columns"] == EVENT_COLUMNS and tables["events"]["grouped"] is True
    values = dict(tables["attributes"]["rows"])
    assert values["janux.test.long"] == "x" * (LONG_CHARS * 3)  # whole: the browser opens it on demand
    assert not at.exception
