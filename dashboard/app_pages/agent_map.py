"""Agent map: which agent delegates to which, how often each edge fails, where the money goes.

Nodes and edges are the source's exact aggregate over every trace in the range (`agent_map`);
click a node or an edge (on the map or in its tables) to list its traces and its failures (read
for that node or edge alone, `map_refs`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import altair as alt
import pandas as pd
import streamlit as st

from janux.dashboard.ui import headline, nav
from janux.dashboard.ui.filters import trace_filter
from janux.dashboard.ui.map_data import bucket_for, cached_map, cached_refs, rules_report
from janux.dashboard.ui.state import active_source
from janux.dashboard.ui.table import show_table
from janux.dashboard.views import map_tables as views
from janux.dashboard.views.map_chart import map_chart, map_frames
from janux.tracing.alerts import Report, badges
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, AgentStats, EdgeStats, MapKey, MapRefs

INSPECT = "map_inspect"
GRAPH_KEY = "map_graph"
MAP_TABS = "map_tab"
MAP_TAB = "Map"
TABLE_KEYS = {"nodes": "map_table_nodes", "edges": "map_table_edges"}
_LABELS = "__choices"


def _refs_table(refs: list[tuple[str, int, str]], key: str) -> None:
    """Traces (newest first) of a node or an edge; a click opens the trace at that span."""
    frame = pd.DataFrame(
        [{"started (UTC)": fmt.utc(s), "trace": t, "span": sp} for t, s, sp in refs],
        columns=["started (UTC)", "trace", "span"],
    )
    picked = show_table(frame, key=key, selectable=True)
    if picked is not None:
        nav.remember_list(nav.AGENT_MAP, [t for t, _, _ in refs])
        nav.open_trace(refs[picked][0], refs[picked][2])


def _node(node: AgentStats, refs: MapRefs) -> None:
    cols = st.columns(5)
    headline.count(cols[0], "Runs", node.runs)
    cols[1].metric("Error rate", views.rate_label(node.error_rate))
    headline.cost(cols[2], "Own cost", node.own)
    headline.cost(cols[3], "Inclusive cost", node.inclusive)
    headline.durations(cols[4], "p50 duration", views.ms(node.p50_ms), views.ms(node.p95_ms))
    st.subheader(fmt.markdown_text(f"Newest traces of {node.agent} ({node.traces:,} in the range)"))
    _refs_table([(r.trace_id, r.start_ns, r.span_id) for r in refs.recent], "map_node_traces")


def _edge(edge: EdgeStats, refs: MapRefs) -> None:
    cols = st.columns(5)
    headline.count(cols[0], "Delegations", edge.count)
    # Counted, not divided: denied handoffs run no attempt, so a ratio would read "0.25 attempts".
    headline.count(cols[1], "Attempts", edge.attempts, "Attempts run over all delegations of the edge.")
    cols[2].metric("Failure rate", views.rate_label(edge.failure_rate))
    headline.cost(cols[3], "Cost carried", edge.cost)
    headline.durations(cols[4], "p50 duration", views.ms(edge.p50_ms), views.ms(edge.p95_ms))
    kinds = " · ".join(f"{k} {edge.failures[k]}" for k in views.FAILURE_KINDS if edge.failures.get(k))
    st.caption(fmt.markdown_text(f"Failures by kind: {kinds or 'none'}"))
    if edge.failed:
        if st.button("All failures of this edge ›", key="map_edge_all_failures"):
            nav.go(nav.FAILURES, caller=edge.caller, target=edge.target)
        show_table(views.reasons_frame(edge), key="map_edge_reasons")
        recent = refs.failures
        failures = pd.DataFrame(
            [{"started (UTC)": fmt.utc(f.start_ns), "kind": f.kind, "reason": f.reason, "trace": f.trace_id}
             for f in recent],
            columns=["started (UTC)", "kind", "reason", "trace"],
        )  # fmt: skip
        st.subheader("Newest failures")
        st.caption("Click a row to see why it failed.")
        picked = show_table(failures, key="map_edge_failures", selectable=True)
        if picked is not None:
            nav.open_handoff(recent[picked].trace_id, recent[picked].span_id)
    st.subheader(fmt.markdown_text(f"Newest delegations ({edge.traces:,} traces in the range)"))
    _refs_table([(r.trace_id, r.start_ns, r.span_id) for r in refs.recent], "map_edge_traces")


def _inspect(agent_map: AgentMap, refs: Callable[[MapKey], MapRefs]) -> None:
    """The inspected node or edge: its figures from the map, its newest traces read for it alone
    (`refs`: the source's `map_refs` over the page's range)."""
    options = views.choices(agent_map)
    labels = [c.label for c in options]
    label = st.selectbox("Inspect a node or an edge", labels, key=INSPECT, on_change=_publish)
    choice = options[labels.index(label)]
    if choice.agent is not None:
        # An agent drawn only as a handoff's target never ran: its panel says 0 runs, not nothing.
        node = agent_map.node(choice.agent) or AgentStats(choice.agent)
        _node(node, refs(node.agent))
    elif choice.edge is not None:
        edge = agent_map.edge(*choice.edge)
        if edge is not None:
            _edge(edge, refs(edge.key))


def _publish() -> None:
    """The inspected node or edge goes in the URL (`?select=`), so the link opens it."""
    st.query_params["select"] = str(st.session_state[INSPECT])


def _inspect_clicked() -> None:
    """A click on the map (a dot or a diamond) or on a row of its tables inspects that node or
    edge, before the selector is drawn; the Map tab shows it."""
    picked = nav.chart_pick(GRAPH_KEY, "choice")
    for key in (TABLE_KEYS["nodes"], TABLE_KEYS["edges"]):
        labels: list[str] = st.session_state.get(f"{key}{_LABELS}", [])
        row = nav.picked_row(st.session_state.get(key))
        if row is not None and row < len(labels):
            picked = labels[row]
            st.session_state[key] = {"selection": {"rows": [], "columns": [], "cells": []}}
    if picked:
        st.session_state[INSPECT] = picked
        st.session_state[MAP_TABS] = MAP_TAB
        _publish()


def _inspected(agent_map: AgentMap) -> None:
    """What the selector (and the map's outline) starts on: the URL's `?select=`, else the first
    agent; kept while it is on the map."""
    labels = [c.label for c in views.choices(agent_map)]
    if st.session_state.get(INSPECT) not in labels:
        wanted = str(st.query_params.get("select", ""))
        st.session_state[INSPECT] = wanted if wanted in labels else labels[0]


def _tables(agent_map: AgentMap, report: Report | None) -> None:
    st.caption("Click a row to inspect that agent or edge on the map.")
    edge_choices = [f"edge: {views.edge_label(e)}" for e in agent_map.edges]
    for title, frame, key, labels in (
        ("Nodes", views.nodes_frame(agent_map), "nodes", [f"agent: {n.agent}" for n in agent_map.nodes]),
        ("Edges", views.edges_frame(agent_map), "edges", edge_choices),
    ):
        st.subheader(title)
        st.session_state[f"{TABLE_KEYS[key]}{_LABELS}"] = labels
        show_table(frame, key=TABLE_KEYS[key], selectable=True)
        st.download_button(
            f"Download {title.lower()} (CSV)", cells.csv_bytes(frame), file_name=f"janux-map-{key}.csv",
            mime="text/csv", key=f"map_csv_{key}",
        )  # fmt: skip
    if report is not None:
        st.subheader("Alert rules")
        frame = pd.DataFrame(
            [{"rule": f.rule, "check": f.check, "subject": f.subject, "value": f.value, "limit": f.limit,
              "crossed": f.crossed, "counts": f.note} for f in report.findings]
        )  # fmt: skip
        show_table(frame, key="map_table_rules")


def _map(agent_map: AgentMap, report: Report | None) -> None:
    width_by = st.radio("Edge width by", ["count", "cost"], horizontal=True, key="map_width")
    node_badges, edge_badges = badges(report) if report is not None else ({}, {})
    frames = map_frames(
        agent_map, width_by="cost" if width_by == "cost" else "count", node_badges=node_badges,
        edge_badges=edge_badges, selected=st.session_state.get(INSPECT),
    )  # fmt: skip
    pick = alt.selection_point(name="pick", fields=["choice"], on="click")
    st.altair_chart(
        map_chart(frames, pick), width="stretch", on_select="rerun", key=GRAPH_KEY, selection_mode="pick"
    )
    st.caption(
        "Click an agent (dot) or an edge (diamond) to inspect it below. Edge colour: failure rate "
        "(green none, amber < 10%, orange < 50%, red more). Dashed: the caller's spans are missing. "
        "Thick: transfers. ⚠: an alert rule is crossed."
    )


def main() -> None:
    """Draw the page."""
    nav.restore_list(nav.AGENT_MAP)
    st.title("Agent map")
    active = active_source()
    if active is None:
        return
    key, source = active
    flt = trace_filter("map", source, full=False)
    agent_map = cached_map(key, source, flt, bucket_for(flt, time.time_ns()))
    report, note = rules_report(source, flt, agent_map)
    cols = st.columns(5)
    headline.count(cols[0], "Traces", agent_map.traces)
    headline.count(cols[1], "Agents", len(agent_map.nodes))
    headline.count(cols[2], "Edges", len(agent_map.edges))
    p95 = views.turn_cost_summary(agent_map)["p95 USD"]
    headline.amount(cols[3], "p95 cost / turn", p95 if isinstance(p95, float) else None)
    crossed = len(report.crossed) if report is not None else 0
    cols[4].metric("Rules crossed", f"{crossed:,}" if report is not None else "—", help=note)
    if not agent_map.nodes:
        st.info("No agent loops in this range.")
        return
    _inspect_clicked()
    _inspected(agent_map)
    graph_tab, table_tab = st.tabs([MAP_TAB, "Tables (the data of the map)"], key=MAP_TABS, on_change="rerun")
    if graph_tab.open is not False:
        with graph_tab:
            _map(agent_map, report)
            _inspect(agent_map, lambda group: cached_refs(key, source, flt, group))
    if table_tab.open:
        with table_tab:
            _tables(agent_map, report)


main()
