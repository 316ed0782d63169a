"""Fixtures of the instrumentation tests."""

from __future__ import annotations

import pytest

from .tracing_helpers import Traced


@pytest.fixture
def traced() -> Traced:
    """A fresh local TracerProvider + InMemorySpanExporter."""
    return Traced()
