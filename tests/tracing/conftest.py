"""Fixtures of the ingestion tests: a store in a temporary directory and a receiver on free ports."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.tracing.receiver import RunningReceiver, start_receiver
from janux.tracing.sources.store import TraceStore, open_store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TraceStore]:
    """A fresh embedded store."""
    with open_store(tmp_path / "data") as opened:
        yield opened


@pytest.fixture
def receiver(store: TraceStore) -> Iterator[RunningReceiver]:
    """A receiver without a token on free ports, with a 1 MiB body limit."""
    running = start_receiver(store, "127.0.0.1", 0, 0, max_body_bytes=1024 * 1024)
    yield running
    running.stop()


@pytest.fixture
def token_receiver(store: TraceStore) -> Iterator[RunningReceiver]:
    """A receiver that requires the bearer token `s3cret`."""
    running = start_receiver(store, "127.0.0.1", 0, 0, token="s3cret")
    yield running
    running.stop()
