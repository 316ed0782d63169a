"""AppTest of the Agent map, the Failed handoff screen and the Failures page narrowed to an edge."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from tests.dashboard.app_helpers import OpenPage, chart_data, show_section
from tests.dashboard.shown import rendered

Demo = tuple[list[Any], dict[str, str]]


def _table(at: AppTest, *columns: str) -> pd.DataFrame:
    found = [e.value for e in at.dataframe if set(columns) <= set(e.value.columns)]
    assert len(found) == 1, f"{len(found)} tables with columns {columns}"
    return found[0]


def _click(at: AppTest, key: str, row: int) -> dict[str, str]:
    """One click on row `row` of the table `key`; the query of the page it opened."""
    at.session_state[key] = {"selection": {"rows": [], "columns": [], "cells": [[row, "trace"]]}}
    at.run()
    assert not at.exception, at.exception
    return {k: at.query_params[k] for k in at.query_params}


def test_map_draws_every_agent_and_edge(open_page: OpenPage, demo: Demo) -> None:
    source = MemoryTraceSource(demo[0])
    expected = source.agent_map(TraceFilter())
    at = open_page(source, "agent_map.py")
    drawn = chart_data(at, "choice", "detail")
    labels = set(drawn["label"])
    for node in expected.nodes:
        assert any(label.startswith(f"{node.agent}\n{node.runs:,} runs") for label in labels)
    researcher = expected.edge("triage", "researcher")
    assert researcher is not None
    assert any(
        label.startswith(f"{researcher.count:,}× · {researcher.failure_rate:.1%} failed") for label in labels
    )
    at.session_state["map_tab"] = "Tables (the data of the map)"  # drawn once chosen
    at.run()
    edges = _table(at, "caller", "target", "delegations", "failure rate")
    row = edges[(edges["caller"] == "triage") & (edges["target"] == "researcher")].iloc[0]
    assert row["delegations"] == researcher.count and row["failed delegations"] == researcher.failed
    assert len(at.get("download_button")) == 2


def test_clicking_a_node_lists_its_traces_newest_first(open_page: OpenPage, demo: Demo) -> None:
    source = MemoryTraceSource(demo[0])
    at = open_page(source, "agent_map.py")
    at.selectbox(key="map_inspect").set_value("agent: fact_checker").run()
    assert not at.exception
    frame = _table(at, "started (UTC)", "trace", "span")
    recent = source.map_refs(TraceFilter(), "fact_checker").recent
    assert recent and list(frame["trace"]) == [r.trace_id for r in recent]
    drawn = chart_data(at, "choice", "detail")
    assert list(drawn[drawn["selected"]]["choice"]) == ["agent: fact_checker"]  # outlined on the map
    # One click on a row opens that trace at the agent's span, in this session.
    opened = _click(at, "map_node_traces", 0)
    assert opened == {"trace_id": recent[0].trace_id, "span": recent[0].span_id}
    assert at.title[0].value == "Trace"


def test_a_click_on_the_map_or_a_table_row_inspects_that_node_or_edge(
    open_page: OpenPage, demo: Demo
) -> None:
    """A click on an edge's diamond, or on a row of the Nodes table, inspects it as the selector
    would (its failures, its traces), with `?select=` in the URL."""
    source = MemoryTraceSource(demo[0])
    at = open_page(source, "agent_map.py")
    wanted = "edge: triage → researcher (delegate)"
    assert wanted in set(chart_data(at, "choice", "detail")["choice"])
    at.session_state["map_graph"] = {"selection": {"pick": [{"choice": wanted}]}}
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="map_inspect").value == wanted and at.query_params["select"] == wanted
    assert [h.value for h in at.subheader if h.value == "Newest failures"]
    drawn = chart_data(at, "choice", "detail")
    assert list(drawn[drawn["selected"]]["choice"]) == [wanted]
    # The link (`?select=`) opens the map inspecting that edge, outlined.
    linked = open_page(source, "agent_map.py", select=wanted)
    assert linked.selectbox(key="map_inspect").value == wanted
    drawn = chart_data(linked, "choice", "detail")
    assert list(drawn[drawn["selected"]]["choice"]) == [wanted]
    # The Nodes table, one click on the fact_checker row: back on the map, inspecting it.
    at.session_state["map_tab"] = "Tables (the data of the map)"
    at.run()
    nodes = _table(at, "agent", "runs", "error rate")
    row = list(nodes["agent"]).index("fact_checker")
    at.session_state["map_table_nodes"] = {
        "selection": {"rows": [], "columns": [], "cells": [[row, "agent"]]}
    }
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="map_inspect").value == "agent: fact_checker"
    assert any("Newest traces of fact_checker" in rendered(h.value) for h in at.subheader)


def test_clicking_an_edge_lists_failures_linking_to_failures_and_the_handoff_screen(
    open_page: OpenPage, demo: Demo
) -> None:
    source = MemoryTraceSource(demo[0])
    at = open_page(source, "agent_map.py")
    at.selectbox(key="map_inspect").set_value("edge: triage → researcher (delegate)").run()
    assert not at.exception
    edge = source.agent_map(TraceFilter()).edge("triage", "researcher")
    assert edge is not None and edge.failed > 0
    reasons = _table(at, "reason", "delegations")
    assert dict(zip(reasons["reason"], reasons["delegations"], strict=True)) == edge.reasons
    failures = _table(at, "started (UTC)", "kind", "reason")
    newest = source.map_refs(TraceFilter(), edge.key).failures
    assert list(failures["trace"]) == [f.trace_id for f in newest] and newest
    first = newest[0]
    assert _click(at, "map_edge_failures", 0) == {"trace_id": first.trace_id, "span_id": first.span_id}
    assert at.title[0].value == "Failed handoff"
    at = open_page(source, "agent_map.py")
    at.selectbox(key="map_inspect").set_value("edge: triage → researcher (delegate)").run()
    at.button(key="map_edge_all_failures").click().run()
    assert {k: at.query_params[k] for k in at.query_params} == {"caller": "triage", "target": "researcher"}
    assert at.title[0].value == "Failures"


def test_failures_page_filtered_to_an_edge(open_page: OpenPage, demo: Demo) -> None:
    source = MemoryTraceSource(demo[0])
    at = open_page(source, "failures.py", caller="triage", target="writer")
    frame = _table(at, "kind", "reason", "task", "error")
    assert len(frame) > 0 and set(frame["target"]) == {"writer"} and set(frame["caller"]) == {"triage"}
    opened = _click(at, "failures_table", 0)
    assert opened == {"trace_id": frame["trace"].iloc[0], "span_id": frame["span"].iloc[0]}


def test_failed_handoff_screen_explains_a_budget_cut(open_page: OpenPage, demo: Demo) -> None:
    source = MemoryTraceSource(demo[0])
    trace_id = demo[1]["cut_max_turns"]
    edge = next(e for e in source.agent_map(TraceFilter()).edges if e.failures.get("cut"))
    failure = next(f for f in source.map_refs(TraceFilter(), edge.key).failures if f.trace_id == trace_id)
    at = open_page(source, "handoff.py", trace_id=trace_id, span_id=failure.span_id)
    text = " ".join(e.value for e in at.text) + " ".join(rendered(e.value) for e in at.error)
    assert "max_turns" in text
    assert any("model rounds" in rendered(c.value) for c in at.caption)  # the budget line is explained
    attempts = _table(at, "attempt", "status", "error type", "message")
    assert len(attempts) >= 1
    burn = _table(at, "agent", "turns", "tokens", "cut by")
    assert "max_turns" in set(burn["cut by"])
    metric = next(m for m in at.metric if "max_turns" in rendered(m.label))
    assert metric.value.startswith(f"{edge.reasons['max_turns']:,} of")
    same = [e.value for e in at.dataframe if {"started (UTC)", "trace"} <= set(e.value.columns)]
    assert all(trace_id not in set(frame["trace"]) for frame in same)


def test_failed_handoff_screen_shows_denial_rule_and_unknown_span(open_page: OpenPage, demo: Demo) -> None:
    source = MemoryTraceSource(demo[0])
    trace_id = demo[1]["denied_denied_tools"]
    edges = source.agent_map(TraceFilter()).edges
    view_failures = [f for e in edges for f in source.map_refs(TraceFilter(), e.key).failures]
    failure = next(f for f in view_failures if f.trace_id == trace_id)
    at = open_page(source, "handoff.py", trace_id=trace_id, span_id=failure.span_id)
    assert any("denied_tools" in rendered(e.value) for e in at.error)
    assert any("made no model round" in i.value for i in at.info)
    at = open_page(source, "handoff.py", trace_id=trace_id, span_id="0" * 16)
    assert any("No delegation" in w.value for w in at.warning)


def test_map_and_handoff_pages_show_no_raw_missing_values(open_page: OpenPage, demo: Demo) -> None:
    from tests.dashboard.test_table_cells import _bad_cells

    source = MemoryTraceSource(demo[0])
    at = open_page(source, "agent_map.py")
    at.selectbox(key="map_inspect").set_value("edge: triage → researcher (delegate)").run()
    assert _bad_cells(at) == []
    failure = source.map_refs(TraceFilter(), ("triage", "researcher", "delegate")).failures[0]
    at = open_page(source, "handoff.py", trace_id=failure.trace_id, span_id=failure.span_id)
    assert _bad_cells(at) == []


def test_costs_page_draws_cost_over_time_and_the_path_icicle(open_page: OpenPage, demo: Demo) -> None:
    source = MemoryTraceSource(demo[0])
    at = open_page(source, "costs.py")
    agent_map = source.agent_map(TraceFilter())
    charts = at.get("vega_lite_chart")
    assert len(charts) == 3
    timelines = [
        e.value for e in at.dataframe if {"time", "band", "cost USD", "tokens"} <= set(e.value.columns)
    ]
    assert len(timelines) == 2
    timeline = timelines[0]
    for node in agent_map.nodes:
        rows = timeline[timeline["band"] == node.agent]
        assert rows["cost USD"].sum() == pytest.approx(node.own.cost or 0.0)
        assert rows["tokens"].sum() == node.own.total_tokens - node.own.unpriced_tokens
    unpriced = timeline[timeline["band"] == "unpriced"]["tokens"].sum()
    assert (
        unpriced == sum(n.own.unpriced_tokens for n in agent_map.nodes) > 0
    )  # the demo has an unpriced agent
    paths = _table(at, "path", "parent", "inclusive USD")
    top = paths[paths["depth"] == 0]
    assert top["inclusive USD"].sum() == pytest.approx(sum(agent_map.turn_costs))
    assert "triage > researcher > fact_checker" in set(paths["path"])
    # The icicle (bars sized by tokens by default) draws that depth-2 path too, labelled.
    icicle = chart_data(at, "x0", "text").set_index("path")
    assert icicle.loc["triage > researcher > fact_checker", "agent"] == "fact_checker"
    assert icicle.loc["triage", "text"].startswith("triage\n")


def test_traces_page_histograms_read_the_newest_traces(open_page: OpenPage, demo: Demo) -> None:
    source = MemoryTraceSource(demo[0])
    at = open_page(source, "traces.py")
    assert not [e for e in at.dataframe if "duration ms" in e.value.columns]  # one click away
    at.toggle(key="hist_show").set_value(True).run()
    frame = _table(at, "trace", "cost USD", "duration ms")
    summaries = source.list_traces(TraceFilter(), limit=5_000)
    assert list(frame["trace"]) == [s.trace_id for s in summaries]
    assert len(at.get("vega_lite_chart")) == 2


def test_trace_page_links_a_failed_edge_to_the_handoff_screen(open_page: OpenPage, demo: Demo) -> None:
    source = MemoryTraceSource(demo[0])
    trace_id = demo[1]["failed_delegation"]
    at = open_page(source, "trace.py", trace_id=trace_id)
    show_section(at, "Delegations & attempts")
    at.button(key="trace_explain").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Failed handoff" and at.query_params["trace_id"] == trace_id
    assert any("failed" in rendered(h.value) for h in at.subheader)


def test_cost_over_time_stacks_by_model(open_page: OpenPage, demo: Demo) -> None:
    source = MemoryTraceSource(demo[0])
    at = open_page(source, "costs.py")
    at.radio(key="costs_stack_by").set_value("model").run()
    assert not at.exception
    timeline = next(
        e.value for e in at.dataframe if {"time", "band", "cost USD", "tokens"} <= set(e.value.columns)
    )
    for row in source.usage_by("model", TraceFilter()):
        rows = timeline[timeline["band"] == (row.key or "(no model)")]
        assert rows["cost USD"].sum() == pytest.approx(row.cost or 0.0)
    unpriced = timeline[timeline["band"] == "unpriced"]["tokens"].sum()
    assert unpriced == sum(r.unpriced_tokens or 0 for r in source.usage_by("model", TraceFilter())) > 0


def test_the_dashboard_reads_a_big_map_in_a_helper_process(
    open_page: OpenPage, demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard opens its embedded store with `map_process=True`: a map with enough traces to
    read is read by the helper process, and the page shows the same numbers."""
    from janux.tracing.sources.store import open_store
    from janux.tracing.sources.store import store as store_module

    monkeypatch.setattr(store_module, "MAP_PROCESS_MIN_TRACES", 1)  # the demo set is small
    data_dir = tmp_path / "data"
    with open_store(data_dir) as store:
        store.write(demo[0])
    monkeypatch.setenv("JANUX_DATA_DIR", str(data_dir))
    at = open_page(None, "agent_map.py")
    opened = at.session_state["janux_active_source"]
    try:
        pid = opened.map_helper_pid
        assert pid is not None and pid != os.getpid()
        expected = MemoryTraceSource(demo[0]).agent_map(TraceFilter())
        dot = "\n".join(chart_data(at, "choice", "detail")["detail"])
        for node in expected.nodes:
            assert f"{node.agent} · {node.runs:,} runs" in dot
        assert [m.value for m in at.metric if m.label == "Traces"] == [f"{expected.traces:,}"]
    finally:
        opened.close()
