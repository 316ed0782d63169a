"""The cost pictures' time charts: their legend names what the bars are stacked by."""

from __future__ import annotations

from typing import Any

import pandas as pd

from janux.dashboard.views import charts


def _timeline() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "time": pd.to_datetime(["2026-12-01T06:00:00Z"] * 3),
            "band": ["gpt-4o", "gpt-4o-mini", charts.UNPRICED_BAND],
            "cost USD": [0.002, 0.001, None],
            "tokens": [1_000, 2_000, 500],
        }
    )


def test_the_legend_names_the_stacking_and_the_unpriced_band_comes_last() -> None:
    cost = charts.cost_over_time(_timeline(), "model").to_dict()
    tokens = charts.tokens_over_time(_timeline(), "model").to_dict()
    assert cost["encoding"]["color"]["title"] == "model"
    assert cost["encoding"]["color"]["scale"]["domain"] == ["gpt-4o", "gpt-4o-mini"]
    assert tokens["encoding"]["color"]["title"] == "model / unpriced"
    assert tokens["encoding"]["color"]["scale"]["domain"] == ["gpt-4o", "gpt-4o-mini", charts.UNPRICED_BAND]
    assert tokens["encoding"]["color"]["scale"]["range"][-1] == charts.UNPRICED_COLOR
    assert charts.cost_over_time(_timeline()).to_dict()["encoding"]["color"]["title"] == "agent"


def test_time_buckets_follow_the_range_from_minutes_to_days() -> None:
    from janux.dashboard.ui.map_data import bucket_for
    from janux.tracing.sources.protocol import TraceFilter

    now, minute = 10**18, 60 * 10**9
    # "All time" over ten minutes of traces: minute buckets, not one hour-wide bar.
    assert bucket_for(TraceFilter(), now, oldest_ns=now - 10 * minute) == minute
    hour = 60 * minute
    assert bucket_for(TraceFilter(start_ns=now - 12 * hour), now) == 15 * minute
    # From a day up, whole hours (a ClickHouse source's hourly rollups answer them): a day's 48
    # half hours become 24 hours, a week's 3.5 hours become 3.
    assert bucket_for(TraceFilter(start_ns=now - 24 * hour - minute), now) == hour
    week = 7 * 24 * hour
    assert bucket_for(TraceFilter(), now, oldest_ns=now - week) == 3 * hour
    assert bucket_for(TraceFilter(start_ns=now - week), now) == 3 * hour
    assert bucket_for(TraceFilter(start_ns=now - 30 * 24 * hour), now) == 15 * hour
    assert bucket_for(TraceFilter(), now) == hour  # no trace to measure from


def test_legends_list_only_the_series_drawn(demo: Any) -> None:
    """A band with nothing to draw (an agent whose rounds are all unpriced has no cost; a band
    without tokens) is in no legend; the waterfall's legend lists the span kinds of this trace."""
    timeline = pd.concat(
        [_timeline(), pd.DataFrame({"time": _timeline()["time"][:1], "band": ["fact_checker"],
                                    "cost USD": [0.0], "tokens": [0]})]
    )  # fmt: skip
    cost = charts.cost_over_time(timeline, "agent").to_dict()
    tokens = charts.tokens_over_time(timeline, "agent").to_dict()
    assert "fact_checker" not in cost["encoding"]["color"]["scale"]["domain"]
    assert "fact_checker" not in tokens["encoding"]["color"]["scale"]["domain"]
    from janux.dashboard.views.timeline import KIND_COLORS, waterfall, waterfall_chart
    from janux.tracing.analysis import reconstruct

    spans, ids = demo
    view = reconstruct([s for s in spans if s.trace_id == ids["plain_answer"]])
    fall = waterfall(view, mode="all", max_rows=500)
    domain = waterfall_chart(fall).to_dict()["encoding"]["color"]["scale"]["domain"]
    assert domain == [k for k in KIND_COLORS if k in set(fall.rows["kind"])]
    assert len(domain) < len(KIND_COLORS)  # a plain answer has no delegation, so none in the legend


def test_the_icicle_is_labelled_and_holds_every_path(demo: Any) -> None:
    """Sized by tokens, every delegation path that ran has a bar (the unpriced depth-2 path
    `triage > researcher > fact_checker` included), each labelled with its agent and amount; sized
    by cost, unpriced paths have no width."""
    from janux.dashboard.views import map_tables
    from janux.tracing.sources.memory import MemoryTraceSource
    from janux.tracing.sources.protocol import TraceFilter

    agent_map = MemoryTraceSource(demo[0]).agent_map(TraceFilter())
    deep = "triage > researcher > fact_checker"
    by_tokens = map_tables.icicle_frame(agent_map, "tokens")
    assert set(by_tokens["path"]) == {" > ".join(p.path) for p in agent_map.paths} and deep in set(
        by_tokens["path"]
    )
    assert deep not in set(map_tables.icicle_frame(agent_map, "cost")["path"])
    spec = charts.icicle(by_tokens, "inclusive tokens").to_dict()
    text = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "text")
    assert text["encoding"]["text"]["field"] == "text"
    labels = charts.icicle_labels(by_tokens).set_index("path")["text"]
    assert labels["triage"].startswith("triage\n") and labels["triage"].endswith(" out")
    widest = by_tokens.assign(w=by_tokens["x1"] - by_tokens["x0"]).set_index("path")["w"]
    assert all(
        labels[p] == "" or len(labels[p].split("\n")[0]) <= widest[p] * charts.CHARS_PER_SHARE
        for p in labels.index
    )
