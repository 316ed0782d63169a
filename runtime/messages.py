"""Message helpers: prompts, the text-only view of a conversation, and the JSON form for capture."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from janux.runtime.model import Message


def system(text: str) -> Message:
    """A system message."""
    return Message("system", text)


def user(text: str) -> Message:
    """A user message."""
    return Message("user", text)


def text_only(messages: Iterable[Message]) -> list[Message]:
    """User and assistant text, without tool results or tool-call scaffolding (what a thread keeps)."""
    kept = []
    for message in messages:
        if message.role in ("user", "assistant") and message.content:
            kept.append(Message(message.role, message.content, name=message.name))
    return kept


def transfer_note(from_agent: str, reason: str) -> str:
    """The note appended to a transfer target's instructions."""
    note = f"The conversation was transferred to you by {from_agent}."
    if reason:
        note += f" Reason: {reason}"
    return note


def message_json(message: Message) -> dict[str, Any]:
    """One message as the GenAI content-capture JSON (role, text, tool calls)."""
    item: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        item["tool_calls"] = [
            {"id": call.id, "name": call.name, "arguments": call.arguments} for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        item["tool_call_id"] = message.tool_call_id
    return item


def messages_json(messages: Iterable[Message]) -> str:
    """Messages (without the system prompt, which is captured on its own) as a JSON array."""
    return json.dumps([message_json(m) for m in messages if m.role != "system"], ensure_ascii=False)
