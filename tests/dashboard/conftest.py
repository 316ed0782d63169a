"""Fixtures of the dashboard tests: contract-shaped sources and AppTest runs of the real app."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dash_fixtures import contract_trace, plain_trace
from streamlit.testing.v1 import AppTest

from dashboard.memory_source import MemoryTraceSource
from dashboard.ui.state import SOURCE_OVERRIDE
from dashboard.view_cache import SHARED

APP = Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py"
"""The dashboard entry script."""
TIMEOUT_S = 60


@pytest.fixture(autouse=True)
def _isolated_app_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's ~/.janux or a source configured in the environment."""
    for name in ("JANUX_SOURCE", "JANUX_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    SHARED.clear()


@pytest.fixture
def two_traces() -> MemoryTraceSource:
    """The contract trace (conversation conv-1) and a plain GenAI trace from another runtime."""
    return MemoryTraceSource(contract_trace() + plain_trace())


OpenPage = Callable[..., AppTest]


@pytest.fixture
def open_page() -> OpenPage:
    """Run the app on a source and switch to one page: `open_page(source, "trace.py", trace_id=...)`."""

    def run(source: Any, page: str = "traces.py", **query: str) -> AppTest:
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

    return run
