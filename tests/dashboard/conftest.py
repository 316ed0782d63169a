"""Fixtures of the dashboard tests: contract-shaped sources and AppTest runs of the real app."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dash_fixtures import contract_trace, plain_trace
from streamlit.testing.v1 import AppTest

from janux.dashboard.ui.state import SOURCE_OVERRIDE
from janux.dashboard.ui.view_cache import SHARED
from janux.tracing.sources.memory import MemoryTraceSource

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


@pytest.fixture(scope="session")
def demo() -> tuple[list[Any], dict[str, str]]:
    """The runtime's demo scenarios, traced with the SDK in memory: (span records, name -> trace id)."""
    import asyncio

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from janux.demo.scenarios import run_scenarios
    from janux.tracing.sdk.convert import span_records_from_readable

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    outcomes = asyncio.run(run_scenarios(tracer_provider=provider, latency_scale=0))
    provider.shutdown()
    failed = [(o.name, o.error) for o in outcomes if o.error or not o.trace_id]
    assert not failed, failed
    ids = {o.name: str(o.trace_id) for o in outcomes}
    return span_records_from_readable(exporter.get_finished_spans()), ids
