"""The cost pictures' time charts: their legend names what the bars are stacked by."""

from __future__ import annotations

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
    week = 7 * 24 * 60 * minute
    assert bucket_for(TraceFilter(), now, oldest_ns=now - week) == week // 48
    assert bucket_for(TraceFilter(start_ns=now - week), now) == week // 48
    assert bucket_for(TraceFilter(), now) == 60 * minute  # no trace to measure from
