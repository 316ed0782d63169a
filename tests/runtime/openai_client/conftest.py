"""Fixtures: a local chat-completions server and a client wired to it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from janux.runtime.openai_client import OpenAIChatModel

from .chat_server import ChatServer, serve


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own OpenAI settings must not leak into (or out of) these tests."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JANUX_MODEL", "OPENAI_CUSTOM_HEADERS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    """A fresh server on 127.0.0.1 with a free port."""
    yield from serve()


@pytest.fixture
def make_model(server: ChatServer) -> Callable[..., OpenAIChatModel]:
    """Build a client pointed at `server`; keyword arguments override the defaults."""

    def build(**overrides: Any) -> OpenAIChatModel:
        options: dict[str, Any] = {
            "model": "test-model",
            "base_url": server.base_url,
            "api_key": None,
            "max_retries": 2,
            "timeout": 10.0,
        }
        options.update(overrides)
        return OpenAIChatModel(**options)

    return build
