"""The agent map's pictures and tables as plain functions: escaping, widths, colours, the icicle."""

from __future__ import annotations

import pytest

from janux.dashboard.views import map_tables as views
from janux.dashboard.views.map_chart import map_frames
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


def test_map_draws_names_from_traces_as_text() -> None:
    frames = map_frames(_map())
    agents = frames.points[frames.points["kind"] == "agent"]
    hostile = next(label for label in agents["label"] if label.startswith("x"))
    assert hostile.split("\n")[0] == 'x"]; evil [label="pwned'  # data drawn as text, one line
    # Three agents, two edges, each an elbow of two lines: nothing injected.
    assert len(agents) == 3 and (frames.points["kind"] == "edge").sum() == 2 and len(frames.lines) == 2 * 2


def test_width_follows_count_or_cost_and_colour_follows_failure_rate() -> None:
    agent_map = _map()
    by_count = map_frames(agent_map, width_by="count").lines.drop_duplicates("choice")
    by_cost = map_frames(agent_map, width_by="cost").lines.drop_duplicates("choice")
    # The delegation (4×, $0.50) and the transfer (1×, unpriced), a transfer drawn thicker.
    assert list(by_count["width"]) == [views.MAX_PEN, pytest.approx((views.MIN_PEN + 7 / 4) * 1.6)]
    assert list(by_cost["width"]) == [views.MAX_PEN, pytest.approx(views.MIN_PEN * 1.6)]
    assert views.failure_color(0.75) == "#c62828" and views.failure_color(0.0) == "#2e7d32"
    points = map_frames(agent_map).points
    assert f"agent: {views.UNKNOWN_CALLER}" in set(points["choice"])
    assert set(by_count["dashed"]) == {True, False}  # the edge whose caller is missing


def test_every_mark_of_the_map_is_an_entry_of_the_inspector() -> None:
    """A click on a dot or a diamond inspects what the selector offers for it."""
    agent_map = _map()
    entries = {c.label for c in views.choices(agent_map)}
    points = map_frames(agent_map, selected="agent: triage").points
    known = {p for p in points["choice"] if p != f"agent: {views.UNKNOWN_CALLER}"}
    assert known == entries
    assert list(points[points["selected"]]["choice"]) == ["agent: triage"]


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
