"""The chat-completions wire format: request bodies out, responses in, errors named by field.

Shared by every OpenAI-compatible client. Tool names that a provider would refuse
(`delegate.researcher`: dots, or more than 64 chars) are encoded reversibly on the way out and
decoded on the way back (`ToolNameCodec`); a malformed body becomes a `ModelError` naming what was
missing; usage maps `prompt_tokens` / `completion_tokens` to `ModelUsage`.
"""

from __future__ import annotations

import hashlib
import json
import string
from typing import Any, Protocol

from janux.runtime.model import (
    Message,
    ModelError,
    ModelResponse,
    ModelSettings,
    ModelUsage,
    ToolCall,
    ToolSpec,
)

# ---------------------------------------------------------------- tool names on the wire
# Reversible: every runtime name maps to a name a provider accepts (`^[a-zA-Z0-9_-]{1,64}$`) and back.

_ERR_BAD_REQUEST = "bad_request"

# Providers accept tool names matching ^[a-zA-Z0-9_-]{1,64}$. A name that already fits and holds no
# "__" goes out unchanged. Any other name is escaped: each char outside [a-zA-Z0-9-] becomes
# "__<hex code point>__", and so does each "_" next to another "_" or an escaped char, so that in
# escaped form "__" only ever opens or closes an escape. Plain names never contain "__" and escaped
# names always do, so the two never collide; escaping is injective because decoding is deterministic.
# An escaped form longer than 64 chars keeps a prefix of whole tokens plus "__h" and a hash of the
# name; "h" is not a hex digit, so such a name is never a valid escaped form either.

MAX_TOOL_NAME_LENGTH = 64
"""Longest tool name OpenAI-compatible providers accept."""
_WORD = frozenset(string.ascii_letters + string.digits + "-")
_HEX = frozenset("0123456789abcdef")
_HASH_MARK = "__h"
_HASH_CHARS = 16


def _is_plain(name: str) -> bool:
    return (
        0 < len(name) <= MAX_TOOL_NAME_LENGTH
        and "__" not in name
        and all(c in _WORD or c == "_" for c in name)
    )


def _escape_tokens(name: str) -> list[str]:
    tokens: list[str] = []
    for i, char in enumerate(name):
        neighbours = name[max(i - 1, 0) : i] + name[i + 1 : i + 2]
        if char in _WORD or (char == "_" and all(n in _WORD for n in neighbours)):
            tokens.append(char)
        else:
            tokens.append(f"__{ord(char):x}__")
    return tokens


def encode_tool_name(name: str) -> str:
    """The wire form of tool `name`: unchanged when a provider accepts it, else escaped reversibly."""
    if not name:
        raise ValueError("tool name: must not be empty")
    if _is_plain(name):
        return name
    tokens = _escape_tokens(name)
    escaped = "".join(tokens)
    if len(escaped) <= MAX_TOOL_NAME_LENGTH:
        return escaped
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    room = MAX_TOOL_NAME_LENGTH - len(_HASH_MARK) - _HASH_CHARS
    head = ""
    for token in tokens:
        if len(head) + len(token) > room:
            break
        head += token
    return head + _HASH_MARK + digest


def decode_tool_name(wire: str) -> str | None:
    """The tool name whose wire form is `wire`, or `None` when `wire` is no canonical wire form.

    Hashed forms (names too long to escape) cannot be decoded alone; `ToolNameCodec` remembers them.
    """
    if _is_plain(wire):
        return wire
    out: list[str] = []
    i = 0
    while i < len(wire):
        if wire.startswith("__", i):
            end = wire.find("__", i + 2)
            digits = wire[i + 2 : end]
            if end < 0 or not digits or not set(digits) <= _HEX or int(digits, 16) > 0x10FFFF:
                return None
            out.append(chr(int(digits, 16)))
            i = end + 2
        elif wire[i] in _WORD or wire[i] == "_":
            out.append(wire[i])
            i += 1
        else:
            return None
    name = "".join(out)
    # Only the canonical form decodes, so decode(encode(n)) == n and nothing else maps to n.
    return name if name and encode_tool_name(name) == wire else None


class ToolNameCodec:
    """Encodes the tool names of one request and decodes the names the model answers with."""

    def __init__(self) -> None:
        self._to_wire: dict[str, str] = {}
        self._from_wire: dict[str, str] = {}

    def encode(self, name: str) -> str:
        """Wire form of `name`; raises `ModelError` if two names of the request would share one."""
        wire = self._to_wire.get(name)
        if wire is not None:
            return wire
        try:
            wire = encode_tool_name(name)
        except ValueError as exc:
            raise ModelError(str(exc), error_type=_ERR_BAD_REQUEST) from exc
        other = self._from_wire.setdefault(wire, name)
        if other != name:
            raise ModelError(
                f"tool names {other!r} and {name!r} share the wire name {wire!r}", error_type=_ERR_BAD_REQUEST
            )
        self._to_wire[name] = wire
        return wire

    def decode(self, wire: str) -> str:
        """The runtime's name for `wire`; an unknown, undecodable name is returned as it came."""
        known = self._from_wire.get(wire)
        if known is not None:
            return known
        return decode_tool_name(wire) or wire


# ---------------------------------------------------------------- requests and responses

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


class HttpResponse(Protocol):
    """What the decoders read of an HTTP response (an `httpx2.Response` is one)."""

    @property
    def status_code(self) -> int:
        """HTTP status."""
        ...

    @property
    def text(self) -> str:
        """Body as text."""
        ...

    @property
    def reason_phrase(self) -> str:
        """HTTP reason phrase."""
        ...

    @property
    def headers(self) -> Any:
        """Response headers (case-insensitive `get`)."""
        ...

    def json(self) -> Any:
        """Body as JSON; raises `ValueError` when it is not."""
        ...


def status_error_type(status: int) -> str:
    """`error_type` of a failed HTTP status."""
    if status == 429:
        return ERR_RATE_LIMITED
    return ERR_SERVER if status >= 500 else ERR_BAD_REQUEST


def provider_error_message(response: HttpResponse) -> str:
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


def response_json(response: HttpResponse) -> Any:
    """The body of a 2xx answer as JSON; a streamed or non-JSON body is a `bad_response`."""
    content_type = str(response.headers.get("content-type") or "")
    if content_type.startswith("text/event-stream"):
        raise ModelError(
            "malformed chat completion: the server streamed its answer (text/event-stream) although "
            "the request asked for stream=false",
            error_type=ERR_BAD_RESPONSE,
            status_code=response.status_code,
        )
    try:
        return response.json()
    except ValueError as exc:
        snippet = response.text[:200]
        raise ModelError(
            f"malformed chat completion: body is not JSON (HTTP {response.status_code}): {snippet!r}",
            error_type=ERR_BAD_RESPONSE,
            status_code=response.status_code,
        ) from exc


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


