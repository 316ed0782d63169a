"""The arguments of delegate and handoff tools: their JSON Schemas, and the checks that hold calls to them.

A model's tool arguments are untrusted text. `parse_json_object` never lets one break a turn (not
valid JSON, not an object, nested past the parser's recursion limit: all `ToolArgumentsError`), and
the two parsers below check exactly what the schemas the model was shown promise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from janux.errors import JanuxError


class ToolArgumentsError(JanuxError, ValueError):
    """The arguments of a tool call were not valid JSON or did not match the schema."""

MAX_REASON_CHARS = 2000
"""Longest handoff `reason` accepted (it goes into the target's system prompt)."""

DELEGATE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "description": "What the subagent should do."},
        "context": {"type": "string", "description": "Background the subagent needs (optional)."},
    },
    "required": ["task"],
}
"""JSON Schema of every delegate tool."""

HANDOFF_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {
            "type": "string",
            "description": "Why the conversation is transferred.",
            "maxLength": MAX_REASON_CHARS,
        }
    },
}
"""JSON Schema of every handoff tool."""


def parse_json_object(arguments: str) -> dict[str, Any]:
    """A call's arguments as a JSON object (blank = `{}`); `ToolArgumentsError` names the problem."""
    if not arguments.strip():
        return {}
    try:
        data = json.loads(arguments)
    except ValueError as exc:
        raise ToolArgumentsError(f"arguments are not valid JSON: {exc}") from None
    except RecursionError:
        raise ToolArgumentsError("arguments are nested too deeply") from None
    if not isinstance(data, dict):
        raise ToolArgumentsError(f"arguments must be a JSON object, got {_json_type(data)}")
    return data


@dataclass(slots=True, frozen=True)
class DelegateArguments:
    """A checked delegate call."""

    task: str
    """What the subagent should do."""
    context: str | None
    """Background, when given."""
    raw: dict[str, Any]
    """Every argument as parsed (what an input filter and a fallback handler see)."""

    def text(self) -> str:
        """The task the subagent receives: `task`, plus `"\\n\\nContext:\\n" + context` when given."""
        if self.context is not None and self.context.strip():
            return f"{self.task}\n\nContext:\n{self.context}"
        return self.task


def parse_delegate_arguments(arguments: str) -> DelegateArguments:
    """Check a delegate call against `DELEGATE_PARAMETERS` (`task` required and not blank, both strings)."""
    data = parse_json_object(arguments)
    if data.get("task") is None:
        raise ToolArgumentsError("task: Field required")
    task = _string(data, "task")
    if not task.strip():
        raise ToolArgumentsError("task must not be empty")
    return DelegateArguments(task=task, context=_optional_string(data, "context"), raw=data)


def parse_handoff_reason(arguments: str) -> str:
    """The `reason` of a handoff call (`""` when absent), checked against `HANDOFF_PARAMETERS`."""
    reason = _optional_string(parse_json_object(arguments), "reason") or ""
    if len(reason) > MAX_REASON_CHARS:
        raise ToolArgumentsError(f"reason: at most {MAX_REASON_CHARS} characters, got {len(reason)}")
    return reason


def _string(data: dict[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise ToolArgumentsError(f"{key}: Input should be a valid string, got {_json_type(value)}")
    return value


def _optional_string(data: dict[str, Any], key: str) -> str | None:
    # `null` is what models send for an optional field they leave out.
    return None if data.get(key) is None else _string(data, key)


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (what the model sent, in its own terms)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__
