"""An OpenAI-compatible chat-completions client: OpenAI, vLLM, Ollama, LM Studio and the like.

`OpenAIChatModel` implements `janux.runtime.model.Model` over `POST {base_url}/chat/completions`. It
retries 429, 5xx and connection failures with exponential backoff and jitter (honouring
`Retry-After`), raises `ModelError` at once on any other 4xx, and turns a malformed body into a
`ModelError` naming what was missing. Tool names that a provider would refuse (`delegate.researcher`:
dots, or more than 64 chars) are encoded reversibly on the way out and decoded on the way back.

Real model clients fail loudly inside tests: under pytest (`PYTEST_CURRENT_TEST` set) a request to
anything but a loopback address raises `RealModelInTestError` before any byte leaves the process.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import math
import os
import random
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from janux.runtime.model import (
    Message,
    ModelError,
    ModelResponse,
    ModelSettings,
    ModelUsage,
    ToolCall,
    ToolSpec,
)
from janux.runtime.tool_name_codec import ToolNameCodec

logger = logging.getLogger("janux.openai")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when neither `base_url` nor `OPENAI_BASE_URL` says otherwise."""
ENV_BASE_URL = "OPENAI_BASE_URL"
"""Environment variable with the server's base URL (the part before `/chat/completions`)."""
ENV_API_KEY = "OPENAI_API_KEY"
"""Environment variable with the API key (optional for local servers)."""
ENV_MODEL = "JANUX_MODEL"
"""Environment variable with the default model name."""

ERR_RATE_LIMITED = "rate_limited"
"""`ModelError.error_type` of HTTP 429 (after retries ran out, or a `Retry-After` too long to wait)."""
ERR_SERVER = "server_error"
"""`ModelError.error_type` of HTTP 5xx after retries ran out."""
ERR_CONNECTION = "connection_error"
"""`ModelError.error_type` of a request that never got an HTTP answer (refused, reset, timed out)."""
ERR_BAD_REQUEST = "bad_request"
"""`ModelError.error_type` of a 4xx other than 429, or of messages that cannot be encoded."""
ERR_BAD_RESPONSE = "bad_response"
"""`ModelError.error_type` of a 2xx answer whose body is not a valid chat completion."""


class RealModelInTestError(RuntimeError):
    """A test tried to reach a real (non-loopback) model server.

    Deliberately not a `ModelError`: the runtime turns model errors into tool results, and this
    must fail the test instead.
    """


# --- Retry policy ------------------------------------------------------------------------------------


@dataclass(slots=True, frozen=True, kw_only=True)
class RetryPolicy:
    """How 429, 5xx and connection failures are retried."""

    max_attempts: int = 4
    """Attempts in all (1 = no retry)."""
    initial_delay: float = 0.5
    """Seconds before the first retry (before jitter)."""
    multiplier: float = 2.0
    """Growth of the delay per attempt."""
    max_delay: float = 20.0
    """Cap on one backoff delay (before jitter)."""
    jitter: float = 0.25
    """Each delay is scaled by a random factor in [1 - jitter, 1 + jitter]."""
    max_retry_after: float = 60.0
    """A `Retry-After` longer than this is not waited for: the error is raised at once."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts: must be >= 1, got {self.max_attempts}")
        for name in ("initial_delay", "max_delay", "max_retry_after"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be >= 0, got {getattr(self, name)}")
        if self.multiplier < 1:
            raise ValueError(f"multiplier: must be >= 1, got {self.multiplier}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter: must be within [0, 1], got {self.jitter}")

    def backoff(self, failed_attempts: int, rng: random.Random) -> float:
        """Seconds to wait after `failed_attempts` failures when the server named no delay."""
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (failed_attempts - 1))
        return base * rng.uniform(1 - self.jitter, 1 + self.jitter)


def retry_after_seconds(headers: httpx.Headers) -> float | None:
    """The delay a server asked for (`retry-after-ms`, or `Retry-After` in seconds or as a date)."""
    millis = _seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


def _seconds(value: str | None) -> float | None:
    """A finite, non-negative number from a header, or `None` (servers send odd things)."""
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return max(number, 0.0) if math.isfinite(number) else None


@dataclass(slots=True, frozen=True)
class _Retryable:
    """A failed attempt worth retrying, and the delay the server asked for (if any)."""

    error: ModelError
    delay: float | None = None


def _is_retryable(status: int) -> bool:
    return status == 429 or status >= 500


def _error_type(status: int) -> str:
    if status == 429:
        return ERR_RATE_LIMITED
    return ERR_SERVER if status >= 500 else ERR_BAD_REQUEST


def provider_error_message(response: httpx.Response) -> str:
    """The provider's own words about a failed request (OpenAI, Ollama and plain-text shapes)."""
    try:
        data = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:500] if text else response.reason_phrase or "no error message"
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, str):
            return error
        if isinstance(error, dict):
            for key in ("message", "detail", "msg"):
                if isinstance(error.get(key), str):
                    return str(error[key])
    return json.dumps(data)[:500]


# --- Request encoding --------------------------------------------------------------------------------


def _encode_tool_call(call: ToolCall, codec: ToolNameCodec) -> dict[str, Any]:
    function = {"name": codec.encode(call.name), "arguments": call.arguments}
    return {"id": call.id, "type": "function", "function": function}


def encode_message(message: Message, index: int, codec: ToolNameCodec) -> dict[str, Any]:
    """One message in chat-completions form; `ModelError` names the field when it cannot be sent."""
    if message.role == "tool":
        if not message.tool_call_id:
            raise ModelError(
                f"messages[{index}].tool_call_id: required on a tool message", error_type=ERR_BAD_REQUEST
            )
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            # Null rather than "" next to tool calls: what OpenAI itself returns and accepts.
            "content": message.content or None,
            "tool_calls": [_encode_tool_call(c, codec) for c in message.tool_calls],
        }
    return {"role": message.role, "content": message.content}


def encode_tool(tool: ToolSpec, codec: ToolNameCodec) -> dict[str, Any]:
    """One tool in chat-completions form (a function tool)."""
    function = {
        "name": codec.encode(tool.name),
        "description": tool.description,
        "parameters": tool.parameters,
    }
    return {"type": "function", "function": function}


def build_request_body(
    model: str,
    messages: list[Message],
    tools: list[ToolSpec],
    settings: ModelSettings,
    codec: ToolNameCodec,
    max_tokens_field: str = "max_tokens",
) -> dict[str, Any]:
    """The JSON body of one chat-completions request."""
    body: dict[str, Any] = {"model": model, "stream": False}
    if tools:
        # Tools first, so that names in the history resolve to the same wire names.
        body["tools"] = [encode_tool(t, codec) for t in tools]
        if settings.parallel_tool_calls is not None:
            # Only with tools: OpenAI rejects parallel_tool_calls on a request without any.
            body["parallel_tool_calls"] = settings.parallel_tool_calls
    body["messages"] = [encode_message(m, i, codec) for i, m in enumerate(messages)]
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.max_output_tokens is not None:
        body[max_tokens_field] = settings.max_output_tokens
    return body


# --- Response decoding -------------------------------------------------------------------------------


def _bad(what: str) -> ModelError:
    return ModelError(f"malformed chat completion: {what}", error_type=ERR_BAD_RESPONSE)


def _text_of(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts, as some servers send them
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise _bad(f"{where}: expected a string, got {type(content).__name__}")


def _decode_tool_call(raw: Any, index: int, codec: ToolNameCodec) -> ToolCall:
    where = f"choices[0].message.tool_calls[{index}]"
    if not isinstance(raw, dict):
        raise _bad(f"{where}: expected an object")
    function = raw.get("function")
    if not isinstance(function, dict):
        raise _bad(f"{where}.function is missing")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise _bad(f"{where}.function.name is missing")
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # some local servers send the object instead of its JSON text
        arguments = json.dumps(arguments)
    if not isinstance(arguments, str):
        raise _bad(f"{where}.function.arguments is missing")
    call_id = raw.get("id")
    # A few local servers omit ids; the loop needs one to pair the result with the call.
    return ToolCall(
        id=call_id if isinstance(call_id, str) and call_id else f"call_{index}",
        name=codec.decode(name),
        arguments=arguments,
    )


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key, 0)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _bad(f"usage.{key}: expected a non-negative integer, got {value!r}")
    return value


def decode_usage(raw: Any) -> ModelUsage:
    """Token usage; a response without `usage` counts zero tokens."""
    if raw is None:
        return ModelUsage()
    if not isinstance(raw, dict):
        raise _bad("usage: expected an object")
    return ModelUsage(
        input_tokens=_count(raw, "prompt_tokens"), output_tokens=_count(raw, "completion_tokens")
    )


def _first_choice(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _bad(f"body: expected a JSON object, got {type(data).__name__}")
    if data.get("error"):
        # Some servers answer 200 with an error object instead of a completion.
        raise ModelError(f"provider error: {json.dumps(data['error'])[:500]}", error_type=ERR_BAD_RESPONSE)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _bad("choices[0] is missing")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise _bad("choices[0].message is missing")
    return choice


def decode_response(data: Any, codec: ToolNameCodec) -> ModelResponse:
    """A `ModelResponse` from a chat-completions body; `ModelError` names what was missing."""
    choice = _first_choice(data)
    message: dict[str, Any] = choice["message"]
    text = _text_of(message.get("content"), "choices[0].message.content")
    if not text and isinstance(message.get("refusal"), str):
        text = message["refusal"]
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise _bad("choices[0].message.tool_calls: expected a list")
    calls = tuple(_decode_tool_call(c, i, codec) for i, c in enumerate(raw_calls))
    finish = choice.get("finish_reason")
    if not isinstance(finish, str) or not finish:
        finish = "tool_calls" if calls else "stop"
    model = data.get("model")
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=decode_usage(data.get("usage")),
        model_name=model if isinstance(model, str) and model else None,
        finish_reason=finish,
    )


# --- The client --------------------------------------------------------------------------------------


def is_loopback_url(url: str) -> bool:
    """Whether `url` points at this machine (localhost, 127.0.0.0/8, ::1)."""
    host = httpx.URL(url).host
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# One pooled HTTP client per event loop, shared by every model on that loop. A pool belongs to the
# loop that made it, so `asyncio.run` per call (every sync wrapper) needs a fresh one; and tying the
# pool to the loop rather than to a model means models can come and go without leaking sockets.
_POOLS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, tuple[httpx.AsyncClient, AsyncGenerator[None, None]]
]
_POOLS = weakref.WeakKeyDictionary()


async def _close_when_loop_ends(
    loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient
) -> AsyncGenerator[None, None]:
    """Parks until `loop` finalizes its async generators (`asyncio.run` does on exit); closes `client`."""
    try:
        yield
    finally:
        if _POOLS.get(loop, (None,))[0] is client:
            del _POOLS[loop]
        if not client.is_closed:
            await client.aclose()


async def shared_http_client() -> httpx.AsyncClient:
    """The pooled client of the running loop, created on first use and closed when the loop ends."""
    loop = asyncio.get_running_loop()
    entry = _POOLS.get(loop)
    if entry is not None and not entry[0].is_closed:
        return entry[0]
    client = httpx.AsyncClient()
    closer = _close_when_loop_ends(loop, client)
    _POOLS[loop] = (client, closer)  # the strong reference that keeps `closer` registered with the loop
    await anext(closer)
    return client


async def close_shared_http_client() -> None:
    """Close the running loop's pooled client now (the next request opens a new one)."""
    entry = _POOLS.pop(asyncio.get_running_loop(), None)
    if entry is not None:
        await entry[1].aclose()


def _checked_base_url(url: str) -> str:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ValueError(f"base_url: {url!r} is not a URL ({exc})") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"base_url: expected http(s)://host[:port]/path, got {url!r}")
    return url.rstrip("/")


def _resolve(value: str | None, env: str, default: str | None = None) -> str | None:
    if value is not None:
        return value
    return os.environ.get(env) or default


class OpenAIChatModel:
    """A `Model` speaking the OpenAI chat-completions API (OpenAI, vLLM, Ollama, LM Studio, ...).

    Settings left as `None` come from the environment: `OPENAI_BASE_URL` (default OpenAI's),
    `OPENAI_API_KEY` (optional: local servers need none) and `JANUX_MODEL` for the model name.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        provider_name: str = "openai",
        retry: RetryPolicy | None = None,
        timeout: float = 120.0,
        max_tokens_field: str = "max_tokens",
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        http_client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        """Configure the client; raises `ValueError` naming the missing setting."""
        resolved_model = _resolve(model, ENV_MODEL)
        if not resolved_model:
            raise ValueError(f"model: pass model=... or set {ENV_MODEL}")
        self._model = resolved_model
        self.base_url = _checked_base_url(
            _resolve(base_url, ENV_BASE_URL, DEFAULT_BASE_URL) or DEFAULT_BASE_URL
        )
        """Server base URL; requests go to `{base_url}/chat/completions`."""
        if timeout <= 0:
            raise ValueError(f"timeout: must be > 0 seconds, got {timeout}")
        self._api_key = _resolve(api_key, ENV_API_KEY)
        if not self._api_key and httpx.URL(self.base_url).host == "api.openai.com":
            raise ValueError(f"api_key: OpenAI needs one; pass api_key=... or set {ENV_API_KEY}")
        self._provider = provider_name
        self.retry = retry or RetryPolicy()
        """Retry policy for 429, 5xx and connection failures."""
        self.timeout = timeout
        """Seconds one HTTP attempt may take."""
        self.max_tokens_field = max_tokens_field
        """Body field for `max_output_tokens` (`max_completion_tokens` for OpenAI reasoning models)."""
        self._headers = dict(extra_headers or {})
        self._extra_body = dict(extra_body or {})
        self._given_client = http_client
        self._sleep = sleep
        self._rng = rng or random.Random()

    @property
    def model_name(self) -> str:
        """Model name requested (`gen_ai.request.model`)."""
        return self._model

    @property
    def provider_name(self) -> str:
        """Provider (`gen_ai.provider.name`), `openai` unless configured."""
        return self._provider

    @property
    def endpoint(self) -> str:
        """The chat-completions URL."""
        return f"{self.base_url}/chat/completions"

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self._model!r}, base_url={self.base_url!r})"

    async def request(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        """Run one round; raises `ModelError` on failure."""
        self._refuse_real_server_in_tests()
        codec = ToolNameCodec()
        body = build_request_body(self._model, messages, tools, settings, codec, self.max_tokens_field)
        body.update(self._extra_body)
        data = await self._post_with_retries(body)
        return decode_response(data, codec)

    async def aclose(self) -> None:
        """Close the running loop's shared connection pool now, for a tidy shutdown.

        Optional: the pool closes by itself when its event loop ends. A client passed in as
        `http_client` is the caller's to close.
        """
        if self._given_client is None:
            await close_shared_http_client()

    def _refuse_real_server_in_tests(self) -> None:
        if os.environ.get("PYTEST_CURRENT_TEST") and not is_loopback_url(self.base_url):
            raise RealModelInTestError(
                f"a test tried to call the real model server {self.base_url}; tests must use "
                "janux.runtime.testing.ScriptedModel/FunctionModel or a server on 127.0.0.1"
            )

    async def _client(self) -> httpx.AsyncClient:
        if self._given_client is not None:
            return self._given_client
        return await shared_http_client()

    def _request_headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json", **self._headers}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _post_with_retries(self, body: dict[str, Any]) -> Any:
        attempts = self.retry.max_attempts
        for attempt in range(1, attempts + 1):
            outcome = await self._attempt(body)
            if not isinstance(outcome, _Retryable):
                return outcome
            failure = outcome.error
            if attempt == attempts:
                raise ModelError(
                    f"{failure} (gave up after {attempts} attempt{'s' if attempts > 1 else ''})",
                    error_type=failure.error_type,
                    status_code=failure.status_code,
                ) from failure
            wait = outcome.delay if outcome.delay is not None else self.retry.backoff(attempt, self._rng)
            logger.warning(
                "model request failed (%s); retry %d/%d in %.2fs", failure, attempt, attempts - 1, wait
            )
            await self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(self, body: dict[str, Any]) -> Any:
        """One HTTP attempt: the decoded body, or `_Retryable`; raises when retrying is pointless."""
        try:
            client = await self._client()
            response = await client.post(
                self.endpoint, json=body, headers=self._request_headers(), timeout=self.timeout
            )
        except httpx.TransportError as exc:
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return _Retryable(
                ModelError(f"cannot reach {self.endpoint}: {detail}", error_type=ERR_CONNECTION)
            )
        status = response.status_code
        if 200 <= status < 300:
            return self._json_body(response)
        error = ModelError(
            f"{self._provider} returned HTTP {status}: {provider_error_message(response)}",
            error_type=_error_type(status),
            status_code=status,
        )
        if not _is_retryable(status):
            raise error
        delay = retry_after_seconds(response.headers)
        if delay is not None and delay > self.retry.max_retry_after:
            raise ModelError(
                f"{error} (server asks to retry after {delay:.0f}s, more than max_retry_after)",
                error_type=error.error_type,
                status_code=status,
            )
        return _Retryable(error, delay)

    def _json_body(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            snippet = response.text[:200]
            raise ModelError(
                f"malformed chat completion: body is not JSON (HTTP {response.status_code}): {snippet!r}",
                error_type=ERR_BAD_RESPONSE,
                status_code=response.status_code,
            ) from exc
