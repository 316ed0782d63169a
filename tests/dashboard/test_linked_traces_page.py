"""A run split across traces joined by span links (the Semantic Kernel fixture) on the Traces and Trace
pages (AppTest): listed once with its linked-traces count, drawn whole from any of its traces, and
saying where it continues from and in."""

from __future__ import annotations

from janux.tracing.sources.file_loader import load_trace_file
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import OpenPage
from tests.support.foreign.common import FIXTURES, load_truth


def test_the_run_is_listed_once_and_each_trace_page_says_where_it_continues(open_page: OpenPage) -> None:
    source = MemoryTraceSource(load_trace_file(FIXTURES / "semantic_kernel.jsonl").spans)
    ((first, truth),) = load_truth("semantic_kernel").items()
    others = truth["linked_trace_ids"]
    at = open_page(source)
    table = next(e.value for e in at.dataframe if "linked traces" in e.value.columns).set_index("trace")
    assert table.loc[first, "linked traces"] == len(others)
    assert not set(others) & set(table.index)
    at = open_page(source, "trace.py", trace_id=first)
    captions = " ".join(c.value for c in at.caption)
    assert f"One run across {len(others) + 1} traces" in captions
    assert "continues in" in captions and "continued from" not in captions
    assert all(other[:12] in captions for other in others)
    # billing's trace: the same run, drawn whole (read alone, it would start with billing)
    billing = next(t for t in others if any(s.name == "invoke_agent billing" for s in source.get_trace(t)))
    at = open_page(source, "trace.py", trace_id=billing)
    captions = " ".join(c.value for c in at.caption)
    assert f"continued from [{first[:12]}" in captions
    assert captions.startswith("**triage**")
