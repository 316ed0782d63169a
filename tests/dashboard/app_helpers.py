"""AppTest runs of the real dashboard app: `open_page(source, "trace.py", trace_id=...)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from streamlit import dataframe_util
from streamlit.testing.v1 import AppTest

from janux.dashboard.ui.state import SOURCE_OVERRIDE
from tests.support.paths import REPO_ROOT

APP = REPO_ROOT / "dashboard" / "streamlit_app.py"
"""The dashboard entry script."""
TIMEOUT_S = 60
"""How long one AppTest run may take."""

OpenPage = Callable[..., AppTest]
"""`open_page(source, page="traces.py", **query) -> AppTest`."""


def run_page(source: Any, page: str = "traces.py", **query: str) -> AppTest:
    """Run the app on `source` (None: the configured source) and switch to `page` with `query`."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    if source is not None:
        at.session_state[SOURCE_OVERRIDE] = source
    at.run()
    assert not at.exception, at.exception
    if page != "traces.py" or query:
        at.switch_page(f"app_pages/{page}")
        for key, value in query.items():
            at.query_params[key] = value
        at.run()
    assert not at.exception, at.exception
    return at


def show_section(at: AppTest, label: str) -> AppTest:
    """Choose a tab below the Trace page's explorer (only the chosen one is drawn) and rerun."""
    at.session_state["trace_section"] = label
    at.run()
    assert not at.exception, at.exception
    return at


def handoff_graph(at: AppTest) -> pd.DataFrame:
    """Choose the Trace page's Graph tab (beside the detail) and return the marks its handoff chart
    was drawn from: `kind`, `detail` (a mark's whole label), `span_id`, ..."""
    at.query_params["trace_view_tab"] = "Graph"
    at.run()
    assert not at.exception, at.exception
    return chart_data(at, "detail")


def chart_data(at: AppTest, *columns: str) -> pd.DataFrame:
    """The one dataset of the page's charts that has all of `columns`."""
    found = []
    for chart in at.get("vega_lite_chart"):
        frames = [dataframe_util.convert_arrow_bytes_to_pandas_df(d.data.data) for d in chart.proto.datasets]
        found += [f for f in frames if set(columns) <= set(f.columns)]
    assert len(found) == 1, f"{len(found)} datasets with {columns}"
    return found[0]


def graph_text(at: AppTest) -> str:
    """Every label of the Trace page's handoff chart, one per line."""
    return "\n".join(handoff_graph(at)["detail"])
