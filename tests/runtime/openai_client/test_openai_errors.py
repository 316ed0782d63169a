"""Failures: retries with backoff, Retry-After, immediate 4xx, malformed bodies, the test guard."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest

from janux.runtime.model import Message, ModelError, ModelSettings
from janux.runtime.openai_client import OpenAIChatModel, RealModelInTestError, RetryPolicy

from .chat_server import ChatServer, Reply, completion, json_reply, wire_call
from .conftest import SleepRecorder

ModelFactory = Callable[..., OpenAIChatModel]
HI = [Message(role="user", content="Hi")]
NO_SETTINGS = ModelSettings()


def rate_limited(headers: dict[str, str]) -> Reply:
    """An OpenAI-shaped 429."""
    error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    return json_reply(429, error, headers)


async def test_429_then_success_honours_retry_after(
    server: ChatServer, make_model: ModelFactory, sleeps: SleepRecorder
) -> None:
    server.queue(
        rate_limited({"retry-after": "3"}), rate_limited({"retry-after-ms": "250"}), completion("ok")
    )
    response = await make_model().request(HI, [], NO_SETTINGS)
    assert response.text == "ok"
    assert len(server.requests) == 3
    assert sleeps.delays == [3.0, 0.25]
    assert server.requests[0].body == server.requests[2].body  # the same request, resent


async def test_retry_after_longer_than_the_cap_fails_at_once(
    server: ChatServer, make_model: ModelFactory, sleeps: SleepRecorder
) -> None:
    server.queue(rate_limited({"retry-after": "3600"}))
    model = make_model(retry=RetryPolicy(max_attempts=5, max_retry_after=60))
    with pytest.raises(ModelError, match=r"Rate limit reached.*3600s") as caught:
        await model.request(HI, [], NO_SETTINGS)
    assert caught.value.error_type == "rate_limited"
    assert caught.value.status_code == 429
    assert len(server.requests) == 1 and sleeps.delays == []


async def test_500_until_attempts_run_out(
    server: ChatServer, make_model: ModelFactory, sleeps: SleepRecorder
) -> None:
    server.queue(*[json_reply(500, {"error": {"message": "engine overloaded"}})] * 4)
    model = make_model(retry=RetryPolicy(max_attempts=4, initial_delay=0.5, multiplier=2, jitter=0.25))
    with pytest.raises(ModelError) as caught:
        await model.request(HI, [], NO_SETTINGS)
    assert len(server.requests) == 4
    assert caught.value.status_code == 500
    assert caught.value.error_type == "server_error"
    assert "engine overloaded" in str(caught.value) and "gave up after 4 attempts" in str(caught.value)
    # Exponential backoff with ±25 % jitter: 0.5, 1, 2 seconds before jitter.
    assert len(sleeps.delays) == 3
    for delay, base in zip(sleeps.delays, (0.5, 1.0, 2.0), strict=True):
        assert base * 0.75 <= delay <= base * 1.25
    assert len(set(sleeps.delays)) == 3


async def test_502_then_success(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(Reply(status=502, body=b"<html>Bad Gateway</html>", headers={"content-type": "text/html"}))
    server.queue(completion("recovered"))
    assert (await make_model().request(HI, [], NO_SETTINGS)).text == "recovered"
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            400,
            {"error": {"message": "Invalid 'messages[0].role'", "type": "invalid_request_error"}},
            "messages",
        ),
        (401, {"error": {"message": "Incorrect API key provided"}}, "Incorrect API key"),
        (404, {"error": "model 'llama9' not found, try pulling it first"}, "llama9"),  # Ollama's shape
        (422, {"detail": "unprocessable"}, "unprocessable"),
    ],
)
async def test_other_4xx_fail_at_once_with_the_provider_message(
    server: ChatServer,
    make_model: ModelFactory,
    sleeps: SleepRecorder,
    status: int,
    body: object,
    expected: str,
) -> None:
    server.queue(json_reply(status, body))
    with pytest.raises(ModelError) as caught:
        await make_model().request(HI, [], NO_SETTINGS)
    assert caught.value.status_code == status
    assert caught.value.error_type == "bad_request"
    assert expected in str(caught.value) and f"HTTP {status}" in str(caught.value)
    assert len(server.requests) == 1 and sleeps.delays == []


async def test_malformed_json_body(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(Reply(status=200, body=b'{"choices": [oops'))
    with pytest.raises(ModelError, match="not JSON") as caught:
        await make_model().request(HI, [], NO_SETTINGS)
    assert caught.value.error_type == "bad_response"
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("body", "missing"),
    [
        ([1, 2], "expected a JSON object"),
        ({"object": "chat.completion"}, "choices[0] is missing"),
        ({"choices": []}, "choices[0] is missing"),
        ({"choices": [{"finish_reason": "stop"}]}, "choices[0].message is missing"),
        ({"choices": [{"message": {"content": 7}}]}, "choices[0].message.content"),
        (
            {"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}}]},
            "choices[0].message.tool_calls[0].function.name is missing",
        ),
        (
            {"choices": [{"message": {"tool_calls": [wire_call("c", "search", "{}") | {"function": None}]}}]},
            "choices[0].message.tool_calls[0].function is missing",
        ),
        (
            {"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"name": "search"}}]}}]},
            "choices[0].message.tool_calls[0].function.arguments is missing",
        ),
        ({"error": {"message": "context length exceeded"}}, "context length exceeded"),
    ],
)
async def test_bad_bodies_name_what_is_missing(
    server: ChatServer, make_model: ModelFactory, body: object, missing: str
) -> None:
    server.queue(json_reply(200, body))
    with pytest.raises(ModelError) as caught:
        await make_model().request(HI, [], NO_SETTINGS)
    assert missing in str(caught.value)
    assert caught.value.error_type == "bad_response"


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_connection_refused_is_retried_then_reported(
    make_model: ModelFactory, sleeps: SleepRecorder
) -> None:
    model = make_model(base_url=f"http://127.0.0.1:{closed_port()}/v1")
    with pytest.raises(ModelError, match="cannot reach") as caught:
        await model.request(HI, [], NO_SETTINGS)
    assert caught.value.error_type == "connection_error"
    assert caught.value.status_code is None
    assert len(sleeps.delays) == 2  # three attempts


async def test_real_servers_are_refused_inside_tests(make_model: ModelFactory) -> None:
    model = make_model(base_url="http://janux-must-not-call.invalid/v1")
    with pytest.raises(RealModelInTestError, match=r"janux-must-not-call\.invalid"):
        await model.request(HI, [], NO_SETTINGS)
    assert not isinstance(RealModelInTestError("x"), ModelError)  # the runtime must not swallow it


async def test_localhost_is_allowed_inside_tests(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(completion("local"))
    model = make_model(base_url=server.base_url.replace("127.0.0.1", "localhost"))
    assert (await model.request(HI, [], NO_SETTINGS)).text == "local"


def test_settings_come_from_the_environment(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/")
    monkeypatch.setenv("JANUX_MODEL", "qwen2.5:7b")
    model = OpenAIChatModel()
    assert model.model_name == "qwen2.5:7b"
    assert model.endpoint == server.base_url + "/chat/completions"
    assert OpenAIChatModel("explicit").model_name == "explicit"


def test_missing_settings_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"model: pass model=\.\.\. or set JANUX_MODEL"):
        OpenAIChatModel()
    with pytest.raises(ValueError, match=r"api_key.*OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4o-mini")  # OpenAI itself needs a key; local servers do not
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert OpenAIChatModel("gpt-4o-mini").base_url == "https://api.openai.com/v1"


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_attempts", 0), ("initial_delay", -1), ("multiplier", 0.5), ("jitter", 2), ("max_retry_after", -1)],
)
def test_bad_retry_policy_names_the_field(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        options: dict[str, Any] = {field: value}
        RetryPolicy(**options)


@pytest.mark.parametrize("url", ["localhost:11434/v1", "ftp://example.com/v1", "http://"])
def test_bad_base_url_is_named(url: str) -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAIChatModel("m", base_url=url)


def test_bad_timeout_is_named() -> None:
    with pytest.raises(ValueError, match="timeout"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", timeout=0)


@pytest.mark.parametrize("value", ["nan", "inf", "soon", "-5"])
async def test_odd_retry_after_values_fall_back_to_backoff(
    server: ChatServer, make_model: ModelFactory, sleeps: SleepRecorder, value: str
) -> None:
    server.queue(rate_limited({"retry-after": value}), completion("ok"))
    assert (await make_model().request(HI, [], NO_SETTINGS)).text == "ok"
    [delay] = sleeps.delays
    assert delay == 0.0 if value == "-5" else 0.375 <= delay <= 0.625
