"""An OpenAI-compatible chat-completions client: OpenAI, vLLM, Ollama, LM Studio and the like.

`OpenAIChatModel` implements `janux.runtime.model.Model` over `POST {base_url}/chat/completions`.
The transport is the maintained `openai` package (install `janux[openai]`): its retries with
backoff and jitter for 408/409/429/5xx and connection failures, its handling of `Retry-After`
(`retry-after-ms`, seconds or an HTTP date, up to two minutes; a longer one is not retried) and its
timeouts. Janux keeps its own wire format (`janux.runtime.chat_wire`): the request body, the
tool-name codec, the usage mapping, tolerant decoding of local servers' answers, and `ModelError`
with Janux's error types.

Real model clients fail loudly inside tests: under pytest (`PYTEST_CURRENT_TEST` set) a request to
anything but a loopback address raises `RealModelInTestError` before any byte leaves the process.

The runtime never needs `openai` to import: this module imports it only when a client is built.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import weakref
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from janux.errors import JanuxError
from janux.runtime.chat_wire import (
    ERR_BAD_REQUEST,
    ERR_CONNECTION,
    ToolNameCodec,
    build_request_body,
    decode_response,
    provider_error_message,
    response_json,
    status_error_type,
)
from janux.runtime.model import Message, ModelError, ModelResponse, ModelSettings, ToolSpec

if TYPE_CHECKING:
    import httpx2
    import openai

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where requests go when neither `base_url` nor `OPENAI_BASE_URL` says otherwise."""
ENV_BASE_URL = "OPENAI_BASE_URL"
"""Environment variable with the server's base URL (the part before `/chat/completions`)."""
ENV_API_KEY = "OPENAI_API_KEY"
"""Environment variable with the API key (optional for local servers)."""
ENV_MODEL = "JANUX_MODEL"
"""Environment variable with the default model name."""
DEFAULT_MAX_RETRIES = 3
"""Retries after a failed attempt (4 attempts in all)."""

_NO_KEY = "janux-no-api-key"
"""Stands in for a key the `openai` client insists on; its header is never sent (local servers)."""


class RealModelInTestError(JanuxError, RuntimeError):
    """A test tried to reach a real (non-loopback) model server.

    Deliberately not a `ModelError`: the runtime turns model errors into tool results, and this
    must fail the test instead.
    """


def require_openai() -> None:
    """Raise a clear `ImportError` when the `openai` package (the `janux[openai]` extra) is missing."""
    try:
        import openai  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "janux.runtime.openai_client needs the openai package: pip install 'janux[openai]'"
        ) from exc


def is_loopback_url(url: str) -> bool:
    """Whether `url` points at this machine (localhost, 127.0.0.0/8, ::1)."""
    host = urlsplit(url).hostname or ""
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
    asyncio.AbstractEventLoop, tuple[httpx2.AsyncClient, AsyncGenerator[None, None]]
]
_POOLS = weakref.WeakKeyDictionary()


async def _close_when_loop_ends(
    loop: asyncio.AbstractEventLoop, client: httpx2.AsyncClient
) -> AsyncGenerator[None, None]:
    """Parks until `loop` finalizes its async generators (`asyncio.run` does on exit); closes `client`."""
    try:
        yield
    finally:
        if _POOLS.get(loop, (None,))[0] is client:
            del _POOLS[loop]
        if not client.is_closed:
            await client.aclose()


async def shared_http_client() -> httpx2.AsyncClient:
    """The pooled client of the running loop, created on first use and closed when the loop ends."""
    import openai

    loop = asyncio.get_running_loop()
    entry = _POOLS.get(loop)
    if entry is not None and not entry[0].is_closed:
        return entry[0]
    client = openai.DefaultAsyncHttpxClient()  # the openai client's own timeouts and limits
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
        parsed = urlsplit(url)
        host = parsed.hostname
    except ValueError as exc:
        raise ValueError(f"base_url: {url!r} is not a URL ({exc})") from exc
    if parsed.scheme not in ("http", "https") or not host:
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
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = 120.0,
        max_tokens_field: str = "max_tokens",
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        """Configure the client; `ValueError` names a bad setting, `ImportError` a missing `openai`."""
        require_openai()
        resolved_model = _resolve(model, ENV_MODEL)
        if not resolved_model:
            raise ValueError(f"model: pass model=... or set {ENV_MODEL}")
        self._model = resolved_model
        self.base_url = _checked_base_url(_resolve(base_url, ENV_BASE_URL) or DEFAULT_BASE_URL)
        """Server base URL; requests go to `{base_url}/chat/completions`."""
        if timeout <= 0:
            raise ValueError(f"timeout: must be > 0 seconds, got {timeout}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries: must be an integer >= 0, got {max_retries!r}")
        self._api_key = _resolve(api_key, ENV_API_KEY)
        if not self._api_key and urlsplit(self.base_url).hostname == "api.openai.com":
            raise ValueError(f"api_key: OpenAI needs one; pass api_key=... or set {ENV_API_KEY}")
        self._provider = provider_name
        self.max_retries = max_retries
        """Retries after a failed attempt (429, 5xx, 408, 409, connection failures, timeouts)."""
        self.timeout = timeout
        """Seconds one HTTP attempt may take."""
        self.max_tokens_field = max_tokens_field
        """Body field for `max_output_tokens` (`max_completion_tokens` for OpenAI reasoning models)."""
        self._headers = dict(extra_headers or {})
        self._extra_body = dict(extra_body or {})
        self._given_client = http_client
        self._clients: weakref.WeakKeyDictionary[httpx2.AsyncClient, openai.AsyncOpenAI]
        self._clients = weakref.WeakKeyDictionary()

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
        response = await self._post(body)
        return decode_response(response_json(response), codec)

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

    async def _client(self) -> openai.AsyncOpenAI:
        """The `openai` client over this loop's pool (or the given `http_client`), built once per pool."""
        import openai

        pool = self._given_client if self._given_client is not None else await shared_http_client()
        client = self._clients.get(pool)
        if client is None:
            client = self._clients[pool] = openai.AsyncOpenAI(
                api_key=self._api_key or _NO_KEY,
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=self.timeout,
                default_headers=self._headers,
                http_client=pool,
            )
        return client

    async def _post(self, body: dict[str, Any]) -> httpx2.Response:
        """One request with the `openai` client's retries; its errors become `ModelError`s."""
        import httpx2
        import openai

        client = await self._client()
        # Without a key, the Authorization header is left out (the client would send the stand-in).
        options: openai.RequestOptions = {} if self._api_key else {"headers": {"Authorization": openai.omit}}
        try:
            return await client.post("/chat/completions", cast_to=httpx2.Response, body=body, options=options)
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except openai.APITimeoutError as exc:
            raise ModelError(
                f"cannot reach {self.endpoint}: no answer within {self.timeout:g} s "
                f"({self.max_retries + 1} attempts)",
                error_type=ERR_CONNECTION,
            ) from exc
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            detail = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
            raise ModelError(f"cannot reach {self.endpoint}: {detail}", error_type=ERR_CONNECTION) from exc
        except openai.OpenAIError as exc:  # a request the client refused to build or send
            raise ModelError(f"{type(exc).__name__}: {exc}", error_type=ERR_BAD_REQUEST) from exc

    def _status_error(self, exc: openai.APIStatusError) -> ModelError:
        status = exc.status_code
        message = f"{self._provider} returned HTTP {status}: {provider_error_message(exc.response)}"
        retry_after = exc.response.headers.get("retry-after")
        if retry_after is not None:
            message += f" (Retry-After: {retry_after})"
        return ModelError(message, error_type=status_error_type(status), status_code=status)
