"""Fixtures of the OpenAI Agents SDK integration tests: offline, and traced into memory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agents import set_trace_processors, set_tracing_disabled

from janux.integrations.openai_agents import JanuxProcessor, uninstrument
from tests.integrations.openai_agents.scripts import COSTS
from tests.support.contract_checker import Traced


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A dummy API key (never used: every model is scripted), SDK tracing on, content capture off,
    and no processor of the SDK's own left registered (its default one would upload to OpenAI)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-offline-test")
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    set_tracing_disabled(False)
    set_trace_processors([])
    uninstrument()
    yield
    uninstrument()
    set_trace_processors([])


@pytest.fixture
def traced() -> Traced:
    """A JanuxProcessor (with COSTS) writing to an in-memory TracerProvider, registered alone."""
    traced = Traced()
    set_trace_processors([JanuxProcessor(costs=COSTS, tracer_provider=traced.provider)])
    return traced
