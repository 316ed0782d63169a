"""Failures, through the `openai` client's transport: Retry-After, retries, timeouts, immediate
4xx, malformed and streamed bodies, a body cut off, and the test guard.

Waits are real (the `openai` client sleeps them), so the servers ask for short ones
(`retry-after-ms`); a wait is checked as the gap between two requests the server received, a lower
bound that load can only lengthen.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable

import pytest

from janux.runtime.model import Message, ModelError, ModelSettings
from janux.runtime.openai_client import OpenAIChatModel, RealModelInTestError
from tests.support.paths import REPO_ROOT

from .chat_server import ChatServer, Reply, completion, json_reply, wire_call

ModelFactory = Callable[..., OpenAIChatModel]
HI = [Message(role="user", content="Hi")]
NO_SETTINGS = ModelSettings()


def rate_limited(headers: dict[str, str]) -> Reply:
    """An OpenAI-shaped 429."""
    error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    return json_reply(429, error, headers)


def overloaded(status: int = 500) -> Reply:
    """A 5xx asking for a short wait, so the retry comes quickly."""
    return json_reply(status, {"error": {"message": "engine overloaded"}}, {"retry-after-ms": "10"})


@pytest.mark.parametrize(("headers", "wait"), [({"retry-after-ms": "300"}, 0.3), ({"retry-after": "1"}, 1.0)])
async def test_429_waits_out_retry_after_then_succeeds(
    server: ChatServer, make_model: ModelFactory, headers: dict[str, str], wait: float
) -> None:
    server.queue(rate_limited(headers), completion("ok"))
    response = await make_model().request(HI, [], NO_SETTINGS)
    assert response.text == "ok"
    first, second = server.requests
    assert second.at - first.at >= wait
    assert first.body == second.body  # the same request, resent


async def test_retry_after_longer_than_the_clients_cap_fails_at_once(
    server: ChatServer, make_model: ModelFactory
) -> None:
    server.queue(rate_limited({"retry-after": "3600"}))
    with pytest.raises(ModelError, match=r"Rate limit reached.*Retry-After: 3600") as caught:
        await make_model(max_retries=5).request(HI, [], NO_SETTINGS)
    assert caught.value.error_type == "rate_limited"
    assert caught.value.status_code == 429
    assert len(server.requests) == 1


async def test_500_then_success(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(overloaded(), completion("recovered"))
    assert (await make_model().request(HI, [], NO_SETTINGS)).text == "recovered"
    # The retry is the `openai` client's own: it numbers its attempts on the wire.
    assert [r.headers.get("x-stainless-retry-count") for r in server.requests] == ["0", "1"]


async def test_500_until_retries_run_out(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(*[overloaded()] * 3)
    with pytest.raises(ModelError) as caught:
        await make_model(max_retries=2).request(HI, [], NO_SETTINGS)
    assert len(server.requests) == 3
    assert caught.value.status_code == 500
    assert caught.value.error_type == "server_error"
    assert "openai returned HTTP 500: engine overloaded" in str(caught.value)


async def test_502_html_then_success(server: ChatServer, make_model: ModelFactory) -> None:
    html = {"content-type": "text/html", "retry-after-ms": "10"}
    server.queue(Reply(status=502, body=b"<html>Bad Gateway</html>", headers=html), completion("recovered"))
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
    server: ChatServer, make_model: ModelFactory, status: int, body: object, expected: str
) -> None:
    server.queue(json_reply(status, body))
    with pytest.raises(ModelError) as caught:
        await make_model().request(HI, [], NO_SETTINGS)
    assert caught.value.status_code == status
    assert caught.value.error_type == "bad_request"
    assert expected in str(caught.value) and f"HTTP {status}" in str(caught.value)
    assert len(server.requests) == 1


async def test_a_server_that_never_answers_times_out_each_attempt(
    server: ChatServer, make_model: ModelFactory
) -> None:
    server.queue(Reply(hang=True), Reply(hang=True))
    with pytest.raises(ModelError, match=r"no answer within 0\.2 s \(2 attempts\)") as caught:
        await make_model(timeout=0.2, max_retries=1).request(HI, [], NO_SETTINGS)
    assert caught.value.error_type == "connection_error" and caught.value.status_code is None
    assert len(server.requests) == 2


async def test_malformed_json_body(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(Reply(status=200, body=b'{"choices": [oops'))
    with pytest.raises(ModelError, match="not JSON") as caught:
        await make_model().request(HI, [], NO_SETTINGS)
    assert caught.value.error_type == "bad_response"
    assert len(server.requests) == 1


async def test_a_streamed_answer_although_stream_was_off_is_named(
    server: ChatServer, make_model: ModelFactory
) -> None:
    chunk = b'data: {"choices": [{"delta": {"content": "Hel"}}]}\n\ndata: [DONE]\n\n'
    server.queue(Reply(status=200, body=chunk, headers={"content-type": "text/event-stream"}))
    with pytest.raises(ModelError, match=r"streamed its answer \(text/event-stream\)") as caught:
        await make_model().request(HI, [], NO_SETTINGS)
    assert caught.value.error_type == "bad_response"
    assert server.requests[0].body["stream"] is False


async def test_a_body_cut_off_mid_stream_is_retried(server: ChatServer, make_model: ModelFactory) -> None:
    whole = completion("the whole answer")
    server.queue(Reply(status=200, body=whole.body, cut_off=True), whole)
    assert (await make_model().request(HI, [], NO_SETTINGS)).text == "the whole answer"
    assert len(server.requests) == 2


async def test_a_body_cut_off_every_time_is_a_connection_error(
    server: ChatServer, make_model: ModelFactory
) -> None:
    server.queue(Reply(status=200, body=completion("x").body, cut_off=True))
    with pytest.raises(ModelError, match="cannot reach") as caught:
        await make_model(max_retries=0).request(HI, [], NO_SETTINGS)
    assert caught.value.error_type == "connection_error"


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


async def test_connection_refused_is_reported(make_model: ModelFactory) -> None:
    model = make_model(base_url=f"http://127.0.0.1:{closed_port()}/v1", max_retries=0)
    with pytest.raises(ModelError, match="cannot reach") as caught:
        await model.request(HI, [], NO_SETTINGS)
    assert caught.value.error_type == "connection_error"
    assert caught.value.status_code is None


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


@pytest.mark.parametrize("value", [-1, 1.5, True, None])
def test_bad_max_retries_is_named(value: object) -> None:
    with pytest.raises(ValueError, match="max_retries"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", max_retries=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("url", ["localhost:11434/v1", "ftp://example.com/v1", "http://", "http://[::1/v1"])
def test_bad_base_url_is_named(url: str) -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAIChatModel("m", base_url=url)


def test_bad_timeout_is_named() -> None:
    with pytest.raises(ValueError, match="timeout"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", timeout=0)


@pytest.mark.parametrize("value", ["nan", "inf", "soon", "-5"])
async def test_odd_retry_after_values_fall_back_to_backoff(
    server: ChatServer, make_model: ModelFactory, value: str
) -> None:
    server.queue(rate_limited({"retry-after": value}), completion("ok"))
    assert (await make_model().request(HI, [], NO_SETTINGS)).text == "ok"
    assert len(server.requests) == 2


_WITHOUT_OPENAI = """
import sys
sys.modules["openai"] = None  # as if the janux[openai] extra were not installed
import janux.runtime, janux.runtime.openai_client
from janux.runtime.openai_client import OpenAIChatModel
try:
    OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1")
except ImportError as exc:
    print(exc)
"""


def test_the_runtime_imports_without_openai_and_the_client_names_the_extra() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_OPENAI], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "needs the openai package: pip install 'janux[openai]'" in done.stdout
