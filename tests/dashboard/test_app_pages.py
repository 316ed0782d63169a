"""AppTest of every page on contract-shaped data: no exception, the right numbers in the right widgets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from streamlit.testing.v1 import AppTest

from janux.tracing import conventions as c
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import IngestStats
from tests.dashboard.app_helpers import APP, OpenPage, graph_text, handoff_graph, show_section
from tests.dashboard.shown import rendered, shown
from tests.support.contract_traces import DENY_RULE, TASK_TEXT, TOTAL_COST, contract_trace, plain_trace
from tests.support.paths import REPO_ROOT

CONTRACT_ID = contract_trace()[0].trace_id
PLAIN_ID = plain_trace()[0].trace_id


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


# Each table is found by columns only it has (a plain st.dataframe carries no key in AppTest).
TABLES = {
    "traces_table": {"trace", "checks", "conversation"},
    "trace_attempts": {"attempt", "error.type"},
    "trace_delegations": {"caller", "tool", "attempt errors"},
    "trace_nodes": {"loop", "own cost", "inclusive cost"},
    "trace_checks": {"check", "result", "expected"},
    "trace_budgets": {"loop", "turns", "cut by"},
    "costs_agent": {"agent", "failed loops"},
    "costs_inclusive": {"agent", "inclusive cost USD"},
    "costs_tool": {"delegation tool", "delegations"},
    "costs_model": {"model", "rounds"},
    "costs_conversation": {"conversation", "traces"},
    "costs_top": {"delegation tool", "own cost USD", "inclusive cost USD"},
    "failures_table": {"kind", "reason", "task", "error"},
    "failures_groups": {"kind", "reason", "handoffs"},
    "compare_costs": {"measure", "B − A"},
    "compare_tree": {"loop", "change"},
}


SECTION_OF = {
    "trace_attempts": "Delegations & attempts",
    "trace_delegations": "Delegations & attempts",
    "trace_nodes": "Cost per loop",
    "trace_checks": "Checks",
    "trace_budgets": "Budgets",
}
"""The Trace page's tab each of its tables is drawn in (only the chosen tab is drawn)."""


def _element(at: AppTest, key: str) -> Any:
    if key in SECTION_OF and at.session_state["trace_section"] != SECTION_OF[key]:
        show_section(at, SECTION_OF[key])
    wanted = TABLES[key]
    found = [e for e in at.dataframe if wanted <= set(e.value.columns)]
    assert len(found) == 1, f"{key}: {len(found)} tables with columns {wanted}"
    return found[0]


def _frame(at: AppTest, key: str) -> pd.DataFrame:
    """The numbers underneath a table."""
    return _element(at, key).value  # type: ignore[no-any-return]


def _shown(at: AppTest, key: str) -> pd.DataFrame:
    """The text of a table as the browser shows it."""
    return shown(_element(at, key))


def test_traces_page_lists_traces_with_cost_and_badge(
    open_page: OpenPage, two_traces: MemoryTraceSource
) -> None:
    at = open_page(two_traces)
    frame = _frame(at, "traces_table").set_index("trace")
    text = _shown(at, "traces_table").set_index("trace")
    assert set(frame.index) == {CONTRACT_ID, PLAIN_ID}
    assert frame.loc[CONTRACT_ID, "cost USD"] == TOTAL_COST  # a number: the column sorts by amount
    assert text.loc[CONTRACT_ID, "cost USD"] == cells.money_text(TOTAL_COST)
    assert text.loc[CONTRACT_ID, "estimated USD"] == cells.MISSING
    assert frame.loc[CONTRACT_ID, "checks"] == "✓ ok"
    assert frame.loc[CONTRACT_ID, "attempts"] == 4
    # The other runtime's trace has an estimate and 400 tokens on a model without a price.
    assert text.loc[PLAIN_ID, "estimated USD"].startswith("≈ $")
    assert text.loc[PLAIN_ID, "cost USD"] == fmt.UNPRICED
    assert frame.loc[PLAIN_ID, "checks"] == "foreign: 100% read"
    assert _metrics(at)["Spans"] == str(len(contract_trace()) + len(plain_trace()))


def test_traces_page_filters(open_page: OpenPage, two_traces: MemoryTraceSource) -> None:
    at = open_page(two_traces)
    at.text_input(key="traces_id").set_value(CONTRACT_ID[:6]).run()
    assert list(_frame(at, "traces_table")["trace"]) == [CONTRACT_ID]
    at.text_input(key="traces_id").set_value("").run()
    at.number_input(key="traces_cost").set_value(0.5).run()
    assert list(_frame(at, "traces_table")["trace"]) == [CONTRACT_ID]
    at.number_input(key="traces_cost").set_value(0.0).run()
    at.selectbox(key="traces_service").set_value("other-app").run()
    assert list(_frame(at, "traces_table")["trace"]) == [PLAIN_ID]
    assert not at.exception


def test_trace_page_numbers(open_page: OpenPage, two_traces: MemoryTraceSource) -> None:
    at = open_page(two_traces, "trace.py", trace_id=CONTRACT_ID)
    metrics = _metrics(at)
    assert metrics["Total cost"] == fmt.usd(TOTAL_COST)
    assert metrics["Attempts"] == "4"
    assert metrics["Delegations"] == "5"
    assert metrics["Agent loops"] == "5"
    assert metrics["Unpriced tokens"] == "100"
    # denied, cut and fallback failed; the researcher's timeout was retried and completed.
    assert (metrics["Failed handoffs"], metrics["Timed-out attempts"]) == ("3", "1")
    assert [s.value for s in at.success] == ["All reconciliation checks pass."]
    attempts = _frame(at, "trace_attempts")
    assert list(attempts["attempt"]) == [1, 2]
    assert list(attempts["error.type"]) == [c.ERROR_TIMEOUT, ""]
    delegations = _frame(at, "trace_delegations").set_index("target")
    assert delegations.loc["coder", "status"] == c.STATUS_DENIED
    assert delegations.loc["coder", "reason"] == DENY_RULE
    assert delegations.loc["researcher", "attempts"] == 2
    nodes = _frame(at, "trace_nodes")
    assert nodes.loc[0, "own cost"] == "$0.375000" and nodes.loc[0, "inclusive cost"] == fmt.usd(TOTAL_COST)
    assert set(_frame(at, "trace_checks")["result"]) == {"ok"}
    budgets = _frame(at, "trace_budgets").set_index("loop")
    assert budgets.loc["writer #1", "turns"] == "2 / 2 (100%)"
    assert budgets.loc["writer #1", "cut by"] == c.STOP_MAX_TURNS
    dot = graph_text(at)
    assert "delegate.researcher" in dot and "not run: coder" in dot


def test_trace_page_other_runtime_is_estimated(open_page: OpenPage, two_traces: MemoryTraceSource) -> None:
    at = open_page(two_traces, "trace.py", trace_id=PLAIN_ID)
    metrics = _metrics(at)
    assert "Total cost (estimated)" in metrics
    assert metrics["Total cost (estimated)"].startswith("≈ $")
    assert metrics["Unpriced tokens"] == "400"
    assert (metrics["Failed handoffs"], metrics["Timed-out attempts"]) == ("0", "1")
    assert _frame(at, "trace_attempts")["status"].tolist() == ["error", "ok"]


def test_trace_page_marks_incomplete_traces(open_page: OpenPage) -> None:
    spans = contract_trace()
    tool = next(s for s in spans if s.attributes.get(c.GEN_AI_TOOL_NAME) == "delegate.researcher")
    source = MemoryTraceSource([s for s in spans if s is not tool])
    at = open_page(source, "trace.py", trace_id=CONTRACT_ID)
    assert [w.value for w in at.warning] == ["Incomplete trace: 2 span(s) with a missing parent"]
    graph_text(at)
    assert any("Incomplete trace: 2 span(s) with a missing parent" in c.value for c in at.caption)


def test_trace_page_unknown_id(open_page: OpenPage, two_traces: MemoryTraceSource) -> None:
    at = open_page(two_traces, "trace.py", trace_id="ab" * 16)
    assert [w.value for w in at.warning] == ["No spans stored for this trace id."]


def test_trace_page_escapes_hostile_names(open_page: OpenPage) -> None:
    spans = contract_trace()
    hostile = 'evil"];\n x [label=<<b>hi</b>>]; \\N <script>alert(1)</script>'
    for span in spans:
        if span.attributes.get(c.GEN_AI_AGENT_NAME) == "researcher":
            span.attributes[c.GEN_AI_AGENT_NAME] = hostile
    at = open_page(MemoryTraceSource(spans), "trace.py", trace_id=CONTRACT_ID)
    points = handoff_graph(at)
    marks = [m for m in points.itertuples() if m.kind == "loop" and str(m.detail).startswith("evil")]
    assert marks
    # Data, never markup: the chart draws the name as text (control characters as spaces, one line).
    for mark in marks:
        assert str(mark.detail).startswith(hostile) and "<script>alert(1)</script>" in str(mark.detail)
        assert str(mark.label).split("\n")[0].startswith('evil"];  x [label=<<b>hi</b>>]; \\N <script>')


def test_costs_page(open_page: OpenPage) -> None:
    source = MemoryTraceSource(
        contract_trace(seed=1) + contract_trace(seed=5, conversation_id="conv-2") + plain_trace()
    )
    at = open_page(source, "costs.py")
    metrics = _metrics(at)
    assert metrics["Recorded cost"] == fmt.compact_usd(2 * TOTAL_COST)
    assert metrics["Estimated cost (rounds without a recorded price)"].startswith("≈ $")
    assert metrics["Traces"] == "3"
    by_agent = _shown(at, "costs_agent").set_index("agent")
    assert by_agent.loc["translator", "own cost USD"] == fmt.UNPRICED
    assert by_agent.loc["planner", "own cost USD"] == cells.money_text(2 * 0.375)
    assert _frame(at, "costs_agent").set_index("agent").loc["translator", "own unpriced tokens"] == 200
    inclusive = _frame(at, "costs_inclusive").set_index("agent")
    assert inclusive.loc["planner", "inclusive cost USD"] == 2 * TOTAL_COST
    by_conv = _frame(at, "costs_conversation").set_index("conversation")
    assert by_conv.loc["conv-2", "cost USD"] == TOTAL_COST
    by_tool = _frame(at, "costs_tool").set_index("delegation tool")
    assert (by_tool.loc["delegate.researcher", "delegations"], by_tool.loc["delegate.writer", "failing"]) == (
        2,
        2,
    )
    assert _frame(at, "costs_model").set_index("model").loc["local-llm", "rounds"] == 2
    top = _frame(at, "costs_top")
    assert top.iloc[0]["delegation tool"] == "delegate.researcher"
    # The five tables' CSVs, plus one per cost picture (cost and tokens over time, paths), plus
    # the what-if's.
    assert len(at.get("download_button")) == 6 + 3 + 1


def test_failures_page(open_page: OpenPage, two_traces: MemoryTraceSource) -> None:
    at = open_page(two_traces, "failures.py")
    table = _frame(at, "failures_table")
    denied = table[table["kind"] == "denied"]
    assert list(denied["reason"]) == [DENY_RULE]
    assert list(denied["target"]) == ["coder"]
    assert list(denied["trace"]) == [CONTRACT_ID]
    cut = table[table["kind"] == "cut"]
    assert list(cut["reason"]) == [c.STOP_MAX_TURNS]
    timeouts = table[table["kind"] == "timeout"]
    assert sorted(timeouts["trace"]) == sorted([CONTRACT_ID, PLAIN_ID])
    metrics = _metrics(at)
    assert (metrics["denied"], metrics["cut"], metrics["timeout"], metrics["fallback"]) == (
        "1",
        "1",
        "2",
        "1",
    )
    groups = _frame(at, "failures_groups")
    assert int(groups[groups["reason"] == DENY_RULE]["handoffs"].iloc[0]) == 1


def test_compare_page(open_page: OpenPage) -> None:
    other = contract_trace(seed=9)
    source = MemoryTraceSource(contract_trace() + other)
    at = open_page(source, "compare.py", a=CONTRACT_ID, b=other[0].trace_id)
    costs = _frame(at, "compare_costs").set_index("measure")
    assert costs.loc["cost", "A"] == costs.loc["cost", "B"] == cells.money_text(TOTAL_COST)
    assert costs.loc["cost", "B − A"] == "$0.000000"
    tree = _frame(at, "compare_tree")
    assert set(tree["change"]) == {"same"}
    # Both handoff trees, drawn as the Trace page draws its graph; a click opens that trace there.
    assert len(at.get("vega_lite_chart")) == 2 and not at.get("graphviz_chart")
    at.session_state["compare_graph_B"] = {"selection": {"pick": [{"span_id": other[1].span_id}]}}
    at.run()
    assert at.title[0].value == "Trace"
    assert {k: at.query_params[k] for k in at.query_params} == {
        "trace_id": other[0].trace_id,
        "span": other[1].span_id,
    }


def test_embedded_store_source_with_ingest_stats(open_page: OpenPage, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from janux.tracing.sources.store import open_store

    data_dir = tmp_path / "data"
    with open_store(data_dir) as store:
        store.write(contract_trace() + plain_trace())
        store.write(contract_trace()[:3], rejected=2, errors=["line 7: traceId: not hex"])
    monkeypatch.setenv("JANUX_DATA_DIR", str(data_dir))
    at = open_page(None)
    assert set(_frame(at, "traces_table")["trace"]) == {CONTRACT_ID, PLAIN_ID}
    metrics = _metrics(at)
    assert (metrics["Duplicates"], metrics["Rejected"]) == ("3", "2")
    assert any("traceId: not hex" in t.value for t in at.sidebar.text) or any(
        "traceId: not hex" in t.value for t in at.text
    )


def test_memory_file_source_from_env(open_page: OpenPage, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tests.support.otlp_encode import json_lines

    path = tmp_path / "traces.jsonl"
    path.write_bytes(json_lines(contract_trace(), plain_trace()) + b"{broken\n")
    monkeypatch.setenv("JANUX_SOURCE", f"memory-file:{path}")
    at = open_page(None, "trace.py", trace_id=CONTRACT_ID)
    assert _metrics(at)["Total cost"] == fmt.usd(TOTAL_COST)
    assert _metrics(at)["Rejected"] == "1"


def test_uploaded_files_source(open_page: OpenPage) -> None:
    from tests.support.otlp_encode import json_lines

    at = open_page(None)
    at.sidebar.radio(key="janux_source_choice").set_value("Uploaded files").run()
    at.file_uploader(key="janux_files").set_value(
        [("a.jsonl", json_lines(contract_trace()), "application/json")]
    )
    at.run()
    assert not at.exception
    assert list(_frame(at, "traces_table")["trace"]) == [CONTRACT_ID]
    # A click on the row opens the trace in this session; its address names the upload.
    at.session_state["traces_table"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    query = at.query_params
    assert query["trace_id"] == CONTRACT_ID and query["upload"]
    # That address, opened in a new tab (a new session), finds the uploaded traces, not the store.
    tab = AppTest.from_file(str(APP), default_timeout=60)
    for key, value in query.items():
        tab.query_params[key] = value
    tab.switch_page("app_pages/trace.py")
    tab.run()
    assert not tab.exception, tab.exception
    assert tab.sidebar.radio(key="janux_source_choice").value == "Uploaded files"
    assert _metrics(tab)["Total cost"] == fmt.usd(TOTAL_COST)
    assert any("a.jsonl" in rendered(cap.value) for cap in tab.sidebar.caption)
    # Removing the files empties that session's source.
    again = open_page(None)
    again.sidebar.radio(key="janux_source_choice").set_value("Uploaded files").run()
    again.file_uploader(key="janux_files").set_value(
        [("a.jsonl", json_lines(contract_trace()), "application/json")]
    )
    again.run()
    again.file_uploader(key="janux_files").set_value([]).run()
    assert any("No trace source is open" in i.value for i in again.info)


def test_bad_source_setting_is_shown_not_raised(open_page: OpenPage, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("JANUX_SOURCE", "memory-file:/no/such/file.jsonl")
    at = open_page(None)
    assert any("no such trace file" in e.value for e in at.error)
    assert any("No trace source is open" in i.value for i in at.info)


def test_live_tail_toggle_runs(open_page: OpenPage, two_traces: MemoryTraceSource) -> None:
    at = open_page(two_traces)
    at.toggle(key="traces_live").set_value(True).run()
    assert not at.exception
    assert len(_frame(at, "traces_table")) == 2


def test_span_detail_shows_content_only_when_captured(
    open_page: OpenPage, two_traces: MemoryTraceSource
) -> None:
    tool = next(s for s in contract_trace() if s.attributes.get(c.GEN_AI_TOOL_NAME) == "delegate.researcher")
    # The delegations tab shows the captured task once; the selected tool span's detail adds it.
    at = show_section(
        open_page(two_traces, "trace.py", trace_id=CONTRACT_ID, span=tool.span_id), "Delegations & attempts"
    )
    assert sum(code.value == TASK_TEXT for code in at.code) == 2
    chat = next(s for s in contract_trace() if s.name.startswith(c.OP_CHAT))
    at = show_section(
        open_page(two_traces, "trace.py", trace_id=CONTRACT_ID, span=chat.span_id), "Delegations & attempts"
    )
    assert sum(code.value == TASK_TEXT for code in at.code) == 1
    assert "Content not captured for this span." in [cap.value for cap in at.caption]


def test_page_scripts_have_no_stray_top_level_expressions() -> None:
    """Streamlit's magic draws every top-level expression of a page script (an attribute
    docstring after a constant would appear on the page); only the module docstring and the
    `main()` call may stand alone."""
    import ast

    pages = REPO_ROOT / "dashboard" / "app_pages"
    for path in [*pages.glob("*.py"), pages.parent / "streamlit_app.py"]:
        body = ast.parse(path.read_text()).body
        stray = [
            node.lineno
            for node in body[1:]
            if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Call)
        ]
        assert stray == [], (path.name, stray)


class _StoreThatCutValues(MemoryTraceSource):
    """A source whose store reports cut and repaired spans (as the embedded store does)."""

    def ingest_stats(self) -> IngestStats:
        stats = super().ingest_stats()
        stats.truncated, stats.repaired = 3, 2
        return stats


def test_sidebar_shows_truncated_and_repaired_spans(open_page: OpenPage) -> None:
    at = open_page(_StoreThatCutValues(contract_trace()))
    values = {m.label: m.value for m in at.sidebar.metric}
    assert values["Truncated"] == "3"
    assert values["Repaired"] == "2"


def test_sidebar_hides_truncated_and_repaired_when_nothing_was_cut(open_page: OpenPage) -> None:
    at = open_page(MemoryTraceSource(contract_trace()))
    labels = {m.label for m in at.sidebar.metric}
    assert "Truncated" not in labels and "Duplicates" in labels
