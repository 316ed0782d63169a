"""Small builders shared by the runtime tests."""

from __future__ import annotations

import json
from typing import Any

from janux.runtime import Agent, RunResult
from janux.runtime.testing import ScriptedModel


def end_events(result: RunResult) -> list[dict[str, Any]]:
    """The HANDOFF_END dicts of a turn, in order."""
    return [event for event in result.handoff_events if event["event"] == "HANDOFF_END"]


def tool_results(model: ScriptedModel, call_index: int) -> dict[str, Any]:
    """Tool results (parsed JSON when possible) the model saw in request `call_index`, by tool-call id."""
    results: dict[str, Any] = {}
    for message in model.calls[call_index].messages:
        if message.role == "tool" and message.tool_call_id is not None:
            try:
                results[message.tool_call_id] = json.loads(message.content)
            except ValueError:
                results[message.tool_call_id] = message.content
    return results


def leaf(name: str, model: ScriptedModel, **options: Any) -> Agent:
    """A subagent with instructions naming it."""
    return Agent(name, instructions=f"You are {name}.", model=model, **options)
