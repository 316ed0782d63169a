"""The Failed handoff screen's "Reproduce offline": the `janux replay` command and the test file to keep."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from janux.dashboard.views.handoff_story import reproduction
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import OpenPage
from tests.dashboard.shown import rendered
from tests.support.demo_traces import demo_traces


def _cut(captured: bool) -> tuple[list[SpanRecord], str, str]:
    traces = demo_traces(capture_content=captured)
    trace_id = traces.trace_ids["cut_max_turns"]
    spans = [s for s in traces.spans if s.trace_id == trace_id]
    tool = next(s for s in spans if s.name == "execute_tool delegate.researcher")
    return spans, trace_id, tool.span_id


def test_the_screen_offers_the_command_and_the_test_file(open_page: OpenPage) -> None:
    spans, trace_id, span_id = _cut(captured=True)
    at = open_page(MemoryTraceSource(spans), "handoff.py", trace_id=trace_id, span_id=span_id)
    (expander,) = [e for e in at.expander if e.label == "Reproduce offline"]
    command = f"janux replay {trace_id} --span {span_id} --write-test tests/test_handoff_{span_id[:8]}.py"
    assert [code.value for code in expander.code] == [command]
    (button,) = at.get("download_button")
    assert button.proto.label == "Download the test file"


def test_without_captured_content_the_screen_says_why(open_page: OpenPage) -> None:
    spans, trace_id, span_id = _cut(captured=False)
    at = open_page(MemoryTraceSource(spans), "handoff.py", trace_id=trace_id, span_id=span_id)
    (expander,) = [e for e in at.expander if e.label == "Reproduce offline"]
    assert [rendered(i.value) for i in expander.info] == [
        "This trace cannot be replayed: no recorded model outputs: record with content capture on to replay"
    ]
    assert not at.get("download_button")


def test_the_offered_file_passes_in_a_fresh_process(tmp_path: Path) -> None:
    spans, _, span_id = _cut(captured=True)
    view = reconstruct(spans)
    offer = reproduction(view, next(d for d in view.delegations if d.tool_span_id == span_id))
    assert offer.problem is None and offer.test_file is not None
    path = tmp_path / offer.file_name
    path.write_text(offer.test_file)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path.name],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
