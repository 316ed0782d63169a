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
