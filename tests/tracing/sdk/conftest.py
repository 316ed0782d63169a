"""Fixtures: local OTLP sinks, and a workload of spans made through the OpenTelemetry API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.otlp_sink import Sink, serve_grpc, serve_http


@pytest.fixture
def http_sink() -> Iterator[Sink]:
    """An OTLP/HTTP sink on a free port of 127.0.0.1."""
    yield from serve_http()


@pytest.fixture
def grpc_sink() -> Iterator[Sink]:
    """An OTLP/gRPC sink on a free port of 127.0.0.1."""
    yield from serve_grpc()
