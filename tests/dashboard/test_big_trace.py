"""A 10,000-span trace on the Trace page: everything is drawn bounded by default.

Speed is measured in bench/bench_reconstruct.py and bench/bench_explorer.py (in Chromium); here
only what "bounded" means: a bounded graph, waterfall and tree, with the rest counted.
"""

from __future__ import annotations

import re

import pytest
from streamlit import dataframe_util

from janux.dashboard.ui.table import MAX_ROWS
from janux.dashboard.ui.trace_explorer import FIRST_ROWS, TREE_ROWS
from janux.dashboard.ui.trace_sections import ATTEMPT_PICKS
from janux.dashboard.views.handoff_labels import DEFAULT_MAX_NODES
from janux.dashboard.views.timeline import DEFAULT_MAX_ROWS
from janux.tracing.analysis import TraceView, outcomes, reconstruct
from janux.tracing.analysis.trace_outline import outline
from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.testing import synthetic_trace
from tests.dashboard.app_helpers import OpenPage, handoff_graph, show_section
from tests.dashboard.shown import tree_rows

SPANS = 10_000


@pytest.fixture(scope="module")
def big() -> tuple[list[SpanRecord], TraceView]:
    spans = synthetic_trace(SPANS, seed=7)
    return spans, reconstruct(spans)


def test_big_trace_page_is_collapsed_by_default(
    open_page: OpenPage, big: tuple[list[SpanRecord], TraceView]
) -> None:
    spans, view = big
    assert len(view.index.spans) >= SPANS and len(view.nodes) > DEFAULT_MAX_NODES
    at = open_page(MemoryTraceSource(spans), "trace.py", trace_id=spans[0].trace_id)
    # The handoff graph (drawn once its tab is chosen): DEFAULT_MAX_NODES loops drawn, every other
    # loop counted in a "+N more" mark.
    assert not at.get("vega_lite_chart")
    points = handoff_graph(at)
    assert (points["kind"] == "loop").sum() == DEFAULT_MAX_NODES
    more = points[points["kind"] == "more"]["detail"]
    hidden = sum(int(re.sub(r"\D", "", text)) for text in more)
    assert hidden == len(view.nodes) - DEFAULT_MAX_NODES
    limit = at.number_input(key="trace_tree_limit")
    assert limit.value == DEFAULT_MAX_NODES and f"of {len(view.nodes):,}" in limit.label
    at.query_params["trace_view_tab"] = "Tree"
    at.run()
    # The waterfall is drawn only once its tab is chosen; then every span (not only handoffs), at
    # most DEFAULT_MAX_ROWS rows, the rest counted.
    assert not at.get("vega_lite_chart")
    at.query_params["trace_view_tab"] = "Waterfall"
    at.run()
    assert at.toggle(key="trace_tl_handoffs").value is False
    (chart,) = at.get("vega_lite_chart")
    rows = [dataframe_util.convert_arrow_bytes_to_pandas_df(d.data.data) for d in chart.proto.datasets]
    assert sum(len(r) for r in rows) == DEFAULT_MAX_ROWS
    notes = [c.value for c in at.caption if "not drawn" in c.value]
    assert len(notes) == 1 and re.search(r"[\d,]+ span\(s\) not drawn", notes[0])
    # The tree: its first FIRST_ROWS spans, in tree order (more when asked for: the Chromium test),
    # at most TREE_ROWS.
    at.query_params["trace_view_tab"] = "Tree"
    at.run()
    ids = [r.span_id for r in outline(view)]
    assert list(tree_rows(at)["span_id"]) == ids[:FIRST_ROWS]
    assert len(view.index.spans) < TREE_ROWS  # every row can be asked for: no "the tree holds the first"
    assert not any("The tree holds the first" in c.value for c in at.caption)
    # A link to a span further down: the tree holds the rows down to it.
    at.query_params["span"] = ids[FIRST_ROWS + 250]
    at.run()
    assert list(tree_rows(at)["span_id"]) == ids[: FIRST_ROWS + 251]
    last = view.index.spans[-1].span_id
    at.text_input(key="trace_search").set_value(last).run()
    found = tree_rows(at)  # the span found, below the spans above it
    assert list(found["span_id"])[-1] == last and list(found[found["hit"]]["span_id"]) == [last]
    assert list(found["guides"].str.len()) == list(range(len(found)))
    assert not at.exception


def test_big_trace_attempts_picker_lists_a_bounded_choice(
    open_page: OpenPage, big: tuple[list[SpanRecord], TraceView]
) -> None:
    """Of thousands of delegations, the "Attempts of" picker lists ATTEMPT_PICKS: the retried and
    failed ones first (the first retried one chosen); the table above still lists every one."""
    spans, view = big
    at = open_page(MemoryTraceSource(spans), "trace.py", trace_id=spans[0].trace_id)
    # Nothing below the explorer until a section is chosen: the delegations table (a data grid of
    # every delegation) was about a third of the browser's work on this trace's first visit.
    assert not at.dataframe and not [s for s in at.selectbox if s.key == "trace_attempts_of"]
    show_section(at, "Delegations & attempts")
    picker = at.selectbox(key="trace_attempts_of")
    assert len(picker.options) == ATTEMPT_PICKS < len(view.delegations)
    listed = [int(option.split(".", 1)[0]) - 1 for option in picker.options]
    worth = [
        i for i, d in enumerate(view.delegations) if len(d.attempts) > 1 or outcomes.is_failed_handoff(d)
    ]
    assert (
        listed == (worth + [i for i in range(len(view.delegations)) if i not in set(worth)])[:ATTEMPT_PICKS]
    )
    assert len(view.delegations[picker.value].attempts) > 1
    note = f"{ATTEMPT_PICKS:,} of {len(view.delegations):,} delegations listed"
    assert any(note in caption.value for caption in at.caption)
    assert any(len(table.value) == min(len(view.delegations), MAX_ROWS) for table in at.dataframe)
