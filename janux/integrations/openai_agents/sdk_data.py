"""Reading the OpenAI Agents SDK's span data: usage, model names, finish reason, content, errors.

Pure functions over `span.span_data` and `span.error`. They read defensively (`getattr` with a
default, type checks) because span data comes from every model implementation, the SDK's own
and third-party ones, across SDK versions: anything missing reads as None, never as zero.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

UNKNOWN_MODEL = "unknown"
"""Request model of a round whose span names none (the SDK's models name it only with data on)."""

_ERROR_TEXT_LIMIT = 256
"""Longest error text kept: diagnostics, not content."""


def _tokens(usage: Any) -> tuple[int, int] | None:
    """(input, output) tokens of a usage mapping or object; None when either is missing."""
    if usage is None:
        return None
    if type(usage) is dict or isinstance(usage, Mapping):
        tokens_in = usage["input_tokens"] if "input_tokens" in usage else usage.get("prompt_tokens")
        tokens_out = usage["output_tokens"] if "output_tokens" in usage else usage.get("completion_tokens")
    else:
        tokens_in = getattr(usage, "input_tokens", None)
        tokens_out = getattr(usage, "output_tokens", None)
    if type(tokens_in) is int and type(tokens_out) is int:  # the usual case, checked first
        return (tokens_in, tokens_out) if tokens_in >= 0 and tokens_out >= 0 else None
    if not isinstance(tokens_in, int) or not isinstance(tokens_out, int):
        return None
    if isinstance(tokens_in, bool) or isinstance(tokens_out, bool) or tokens_in < 0 or tokens_out < 0:
        return None
    return tokens_in, tokens_out


def round_usage(data: Any) -> tuple[int, int] | None:
    """Tokens of one model round: the span's usage, else its response's usage; None when unreported."""
    found = _tokens(getattr(data, "usage", None))
    if found is not None:
        return found
    return _tokens(getattr(getattr(data, "response", None), "usage", None))


def aggregate_usage(data: Any) -> tuple[int, int] | None:
    """Tokens the SDK reports on a turn or task span (usage of everything under it); None when absent."""
    return _tokens(getattr(data, "usage", None))


def turn_usage(data: Any) -> tuple[int, int] | None:
    """Tokens of a turn span; the SDK leaves usage out when it was zero, so a turn without it used none."""
    found = aggregate_usage(data)
    if found is None and hasattr(data, "usage") and data.usage is None:
        return 0, 0
    return found


def priced_model(model: str) -> str | None:
    """The model name to look a price up by; None for the `unknown` placeholder."""
    return None if model == UNKNOWN_MODEL else model


def round_models(data: Any) -> tuple[str, str | None]:
    """(request model, response model) of a round; the request model is `unknown` when not named."""
    model = getattr(data, "model", None)
    response_model = getattr(getattr(data, "response", None), "model", None)
    request = model if isinstance(model, str) and model else None
    answered = response_model if isinstance(response_model, str) and response_model else None
    return request or answered or UNKNOWN_MODEL, answered


def _output_items(data: Any) -> list[Any]:
    """Output items of a round, from a Responses-API response or a generation span's output."""
    response = getattr(data, "response", None)
    if response is not None:
        answered = getattr(response, "output", None)
        return list(answered) if isinstance(answered, list) else []
    output = getattr(data, "output", None)
    if not isinstance(output, list | tuple):
        return []
    items: list[Any] = []
    for entry in output:
        nested = entry.get("output") if isinstance(entry, Mapping) else None
        items.extend(nested if isinstance(nested, list) else [entry])
    return items


def _item_field(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def finish_reason(data: Any) -> str | None:
    """`tool_calls` when the round asked for tools, `stop` when it answered, None when not recorded."""
    items = _output_items(data)
    if not items:
        return None
    for item in items:
        reason = _item_field(item, "finish_reason")
        if isinstance(reason, str) and reason:
            return reason
        if _item_field(item, "type") == "function_call" or _item_field(item, "tool_calls"):
            return "tool_calls"
    return "stop"


def _json(value: Any) -> str:
    """JSON text of span content (pydantic models dumped, anything else as its string)."""

    def fallback(obj: Any) -> Any:
        dump = getattr(obj, "model_dump", None)
        return dump() if callable(dump) else str(obj)

    return json.dumps(value, default=fallback, ensure_ascii=False)


def round_input(data: Any) -> str | None:
    """The messages sent in a round as JSON (present only when the SDK traced sensitive data)."""
    value = getattr(data, "input", None)
    if value is None:
        return None
    return value if isinstance(value, str) else _json(value)


def round_output(data: Any) -> str | None:
    """What a round returned as JSON (present only when the SDK traced sensitive data)."""
    items = _output_items(data)
    return _json(items) if items else None


def content_text(value: Any) -> str | None:
    """A tool's arguments or output as text; None when the SDK did not record it."""
    if value is None:
        return None
    return value if isinstance(value, str) else _json(value)


def error_text(error: Any) -> str | None:
    """One line from the SDK's span error (`message: detail`), already redacted by the SDK's settings."""
    if not isinstance(error, Mapping):
        return None
    message = error.get("message")
    text = message if isinstance(message, str) else ""
    data = error.get("data")
    if isinstance(data, Mapping):
        detail = data.get("error", data.get("message"))
        if isinstance(detail, str) and detail and detail not in text:
            text = f"{text}: {detail}" if text else detail
    return text[:_ERROR_TEXT_LIMIT] or None


def error_message(error: Any) -> str | None:
    """The SDK's own message of a span error (`Max turns exceeded`, ...), without its detail."""
    if not isinstance(error, Mapping):
        return None
    message = error.get("message")
    return message if isinstance(message, str) else None


def error_class(error: Any) -> str | None:
    """Exception class name the SDK recorded in a span error's data (`name`), when it did."""
    if not isinstance(error, Mapping):
        return None
    data = error.get("data")
    name = data.get("name") if isinstance(data, Mapping) else None
    return name if isinstance(name, str) and name else None
