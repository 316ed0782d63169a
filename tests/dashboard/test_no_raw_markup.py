"""Nothing from a trace (or from a URL) is rendered as HTML or as markdown.

Streamlit's markdown elements (`st.info`, `st.caption`, `st.warning`, ...) turn `![x](url)` into
an image, `[a](url)` into a link and `:red[...]` into coloured text; every value from a trace
that reaches one goes through `fmt.markdown_text`. Tables, graphs, `st.text`, `st.code` and
`st.json` show text as text.
"""

from __future__ import annotations

import re
from typing import Any

from janux.dashboard.ui.trace_sections import SECTIONS
from janux.tracing import conventions as c
from janux.tracing.analysis import formatting as fmt
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.testing import DelegationSpec, LoopSpec, RoundSpec, build_trace
from tests.dashboard.app_helpers import OpenPage, show_section
from tests.dashboard.shown import rendered
from tests.support.paths import REPO_ROOT

HOSTILE = (
    "x ![pix](http://evil.example/p.png) [go](http://e.example) <img src=x onerror=alert(1)> :red[boom] $x$"
)
"""A name that would render as an image, a link, HTML, coloured text and LaTeX if trusted."""
DASHBOARD = REPO_ROOT / "dashboard"
MARKDOWN_ELEMENTS = (
    "markdown",
    "caption",
    "info",
    "warning",
    "error",
    "success",
    "title",
    "header",
    "subheader",
)


def _hostile_trace() -> list[Any]:
    root = LoopSpec(
        "planner",
        rounds=[RoundSpec(10, 1, 0.01)],
        delegations=[
            DelegationSpec(HOSTILE, kind=c.KIND_TRANSFER, status=c.STATUS_COMPLETED),
            DelegationSpec(
                "researcher",
                status=HOSTILE,  # a writer bug or an attack: any text can arrive as a status
                attempts=[LoopSpec("researcher", error_type=c.ERROR_TIMEOUT), LoopSpec("researcher")],
            ),
        ],
    )
    return build_trace(root, seed=5)


def _markdown_sources(at: Any) -> list[str]:
    found = []
    for kind in MARKDOWN_ELEMENTS:
        found += [e.value for e in at.get(kind)]
    return found


def _assert_literal(at: Any, hostile: str = HOSTILE, *, shown: bool = True) -> None:
    """The hostile text is on the page (unless `shown` is False), and every markdown source
    carrying it is escaped whole."""
    carrying = [source for source in _markdown_sources(at) if hostile in rendered(source)]
    assert carrying or not shown, "the hostile value is not shown at all"
    for source in carrying:
        assert source == fmt.markdown_text(rendered(source)), source


def test_trace_values_reach_markdown_only_escaped(open_page: OpenPage) -> None:
    spans = _hostile_trace()
    source = MemoryTraceSource(spans)
    at = open_page(source, "trace.py", trace_id=spans[0].trace_id)
    for section in SECTIONS:  # only the chosen tab is drawn: look at each
        _assert_literal(show_section(at, section), shown=False)
    show_section(at, "Delegations & attempts")
    at.selectbox(key="trace_attempts_of").set_value(0).run()  # the transfer: a note, no attempts
    _assert_literal(at)
    _assert_literal(open_page(source, "failures.py"))  # timed-out attempt's final status
    at = open_page(source, "compare.py", a=spans[0].trace_id, b=HOSTILE)  # a URL parameter
    _assert_literal(at, HOSTILE.lower())


def test_markdown_text_escapes_every_special_character() -> None:
    assert fmt.markdown_text("a*b_c") == "a\\*b\\_c"
    assert rendered(fmt.markdown_text(HOSTILE)) == HOSTILE
    assert "\n" not in fmt.markdown_text("line\n# heading")


def test_no_page_uses_raw_html_or_markdown_with_values() -> None:
    for path in DASHBOARD.rglob("*.py"):
        text = path.read_text()
        if "import streamlit" not in text:
            continue
        assert "unsafe_allow_html" not in text, path
        assert "st.html(" not in text and "components.html" not in text and ".html(" not in text, path
        # st.markdown / st.write are used, if at all, with a literal string only.
        calls = re.findall(r"\.(?:markdown|write)\(([^)]*)\)", text)
        assert all(re.fullmatch(r'"[^"{}]*"', arg.strip()) for arg in calls), (path, calls)
