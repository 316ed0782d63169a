"""Fixtures of the instrumentation tests."""

from __future__ import annotations

import pytest

from tests.support.contract_checker import Traced


@pytest.fixture
def traced() -> Traced:
    """A fresh local TracerProvider + InMemorySpanExporter."""
    return Traced()
