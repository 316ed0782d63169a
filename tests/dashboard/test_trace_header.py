"""The Trace page's compact header (issue 31): two lines with the bill and its unpriced tokens,
tokens, checks and status; every figure of the trace in an expander below the explorer."""

from __future__ import annotations

from janux.dashboard.ui.trace_sections import header_lines
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import reconstruct
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import OpenPage
from tests.support.contract_traces import TOTAL_COST, contract_trace


def test_header_lines_hold_the_bill_with_unpriced_tokens_tokens_checks_and_status() -> None:
    view = reconstruct(contract_trace())
    who, figures = header_lines(view)
    assert who.startswith("**planner** · conversation conv\\-1 · started ")
    assert who.endswith(":red[failed]")  # denied, cut and fallback handoffs: the trace failed
    assert f"cost **{fmt.markdown_text(fmt.usd(TOTAL_COST) + ' + 100 unpriced tokens')}**" in figures
    assert f"tokens {fmt.markdown_text(fmt.tokens(view.total))}" in figures
    assert "checks ✓ ok" in figures and ":red[3 failed handoffs]" in figures


def test_header_escapes_names_from_the_trace() -> None:
    spans = contract_trace()
    root = next(s for s in spans if not s.parent_span_id)
    root.attributes["gen_ai.agent.name"] = "[click](http://evil) :red[x] **bold**"
    who, _ = header_lines(reconstruct(spans))
    assert "[click](http" not in who and "**bold**" not in who and ":red[x]" not in who


def test_the_page_draws_the_header_as_one_caption_and_every_figure_on_demand(open_page: OpenPage) -> None:
    spans = contract_trace()
    at = open_page(MemoryTraceSource(spans), "trace.py", trace_id=spans[0].trace_id)
    who, figures = header_lines(reconstruct(spans))
    assert at.caption[0].value == f"{who}  \n{figures}"
    (figures_box,) = [e for e in at.expander if e.label == "All figures of this trace"]
    labels = {m.label for m in figures_box.metric}
    assert labels >= {"Total cost", "Attempts", "Agent loops", "Unpriced tokens"}
    assert not at.exception
