"""Fixtures of the dashboard tests: contract-shaped sources and AppTest runs of the real app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from janux.dashboard.sign_ins import GuessLimit
from janux.dashboard.ui import login
from janux.dashboard.ui.view_cache import SHARED
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import OpenPage, run_page
from tests.support.contract_traces import contract_trace, plain_trace
from tests.support.demo_traces import demo_traces


@pytest.fixture(autouse=True)
def _isolated_app_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's ~/.janux or a source configured in the environment."""
    for name in ("JANUX_SOURCE", "JANUX_DATA_DIR", "JANUX_UI_TOKEN", "JANUX_ALLOW_SOURCE_EDIT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    SHARED.clear()
    monkeypatch.setattr(login, "GUESSES", GuessLimit())  # each test starts with the process's attempts


@pytest.fixture
def two_traces() -> MemoryTraceSource:
    """The contract trace (conversation conv-1) and a plain GenAI trace from another runtime."""
    return MemoryTraceSource(contract_trace() + plain_trace())


@pytest.fixture
def open_page() -> OpenPage:
    """Run the app on a source and switch to one page: `open_page(source, "trace.py", trace_id=...)`."""
    return run_page


@pytest.fixture(scope="session")
def demo() -> tuple[list[Any], dict[str, str]]:
    """The runtime's demo scenarios, traced with the SDK in memory: (span records, name -> trace id)."""
    traces = demo_traces()
    return list(traces.spans), dict(traces.trace_ids)
