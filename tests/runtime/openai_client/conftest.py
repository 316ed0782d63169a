"""Fixtures: a local chat-completions server and a client wired to it with recorded sleeps."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from janux.runtime.openai_client import OpenAIChatModel, RetryPolicy

from .chat_server import ChatServer, serve


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own OpenAI settings must not leak into (or out of) these tests."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JANUX_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    """A fresh server on 127.0.0.1 with a free port."""
    yield from serve()


class SleepRecorder:
    """Stands in for `asyncio.sleep`: records each backoff delay instead of waiting it out."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    """The recorder the `make_model` clients sleep through."""
    return SleepRecorder()


@pytest.fixture
def make_model(server: ChatServer, sleeps: SleepRecorder) -> Callable[..., OpenAIChatModel]:
    """Build a client pointed at `server`; keyword arguments override the defaults."""

    def build(**overrides: Any) -> OpenAIChatModel:
        options: dict[str, Any] = {
            "model": "test-model",
            "base_url": server.base_url,
            "api_key": None,
            "retry": RetryPolicy(max_attempts=3, initial_delay=0.5, jitter=0.25),
            "sleep": sleeps,
            "rng": random.Random(7),
            "timeout": 10.0,
        }
        options.update(overrides)
        return OpenAIChatModel(**options)

    return build
