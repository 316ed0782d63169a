"""The agent map's pictures and tables as plain functions: escaping, widths, colours, the icicle."""

from __future__ import annotations

from janux.dashboard.views import map_tables as views
from janux.tracing.analysis.agentmap.build import percentile
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, AgentStats, EdgeStats, PathStats
from janux.tracing.analysis.trace_parts import Usage


def _map() -> AgentMap:
    evil = 'x"];\nevil [label="pwned'
    return AgentMap(
        nodes=[AgentStats("triage", runs=4), AgentStats(evil, runs=1, errors=1)],
        edges=[
            EdgeStats("triage", evil, "delegate", count=4, failed=3, cost=Usage(10, 1, 0.5, 0)),
            EdgeStats("", "triage", "transfer", count=1, cost=Usage(1, 1, None, 2)),
        ],
        paths=[
            PathStats(("triage",), runs=4, inclusive=Usage(cost=1.0)),
            PathStats(("triage", "a"), runs=2, inclusive=Usage(cost=0.5)),
            PathStats(("triage", "b"), runs=2, inclusive=Usage(cost=0.25)),
            PathStats(("triage", "a", "c"), runs=1, inclusive=Usage(cost=0.5)),
            PathStats(("solo",), runs=1, inclusive=Usage(unpriced_tokens=9)),
        ],
    )


def test_dot_escapes_names_from_traces() -> None:
    dot = views.map_dot(_map())
    line = next(line for line in dot.splitlines() if line.startswith("  n1 [label="))
    assert 'label="x\\"]; evil [label=\\"pwned\\n' in line  # quotes escaped, newline flattened
    assert len(dot.splitlines()) == 4 + 3 + 2 + 1  # header, 3 nodes, 2 edges, "}": nothing injected


def test_width_follows_count_or_cost_and_colour_follows_failure_rate() -> None:
    agent_map = _map()
    by_count = views.map_dot(agent_map, width_by="count")
    by_cost = views.map_dot(agent_map, width_by="cost")
    assert f"penwidth={views.MAX_PEN:.2f}" in by_count and f"penwidth={views.MIN_PEN + 7 / 4:.2f}" in by_count
    assert f"penwidth={views.MIN_PEN:.2f}" in by_cost  # the unpriced edge carries no known cost
    assert views.failure_color(0.75) == "#c62828" and views.failure_color(0.0) == "#2e7d32"
    assert views.UNKNOWN_CALLER in by_count and 'style="bold"' in by_count  # a transfer


def test_icicle_children_nest_inside_their_parent() -> None:
    rects = views.icicle_frame(_map()).set_index("path")
    assert (rects.loc["triage", "x0"], rects.loc["triage", "x1"]) == (
        0.0,
        1.0,
    )  # the unpriced root gets no width
    a, b, c = (rects.loc[p] for p in ("triage > a", "triage > b", "triage > a > c"))
    assert (a["x0"], a["x1"], b["x0"], b["x1"]) == (0.0, 0.5, 0.5, 0.75)
    assert (c["x0"], c["x1"]) == (0.0, 0.5)
    assert "solo" not in rects.index


def test_tables_keep_unpriced_apart() -> None:
    edges = views.edges_frame(_map()).set_index("target")
    assert edges.loc["triage", "carried USD"] == float("-inf")  # shown as "unpriced", never $0
    assert edges.loc["triage", "caller"] == views.UNKNOWN_CALLER
    paths = views.paths_frame(_map()).set_index("path")
    assert paths.loc["triage", "parent"] == views.ROOT_PATH


def test_nearest_rank_percentile() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0
