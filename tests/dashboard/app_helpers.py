"""AppTest runs of the real dashboard app: `open_page(source, "trace.py", trace_id=...)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
