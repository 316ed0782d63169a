"""Every tool an agent has (function, delegate, handoff), and the surface a loop may show the model.

An agent's catalog is fixed at definition time. The surface of one loop is the part of the
catalog its role allows (the entry agent: everything; a subagent: no handoffs; a transfer target:
function tools and its own handoffs, so a conversation can pass along a chain of specialists) that
passes every filter of the chain (for a subagent: the filters of all its callers plus its own).
Surfaces are cached per (role, filter chain).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from janux.runtime.definitions import Handoff, Subagent, ToolFilter
from janux.runtime.model import ToolSpec
from janux.runtime.tool_arguments import DELEGATE_PARAMETERS, HANDOFF_PARAMETERS
from janux.runtime.tool_names import allowed_by
from janux.runtime.tools import Tool
from janux.tracing.conventions import TOOL_TYPE_DELEGATE, TOOL_TYPE_FUNCTION, TOOL_TYPE_HANDOFF


class Role(Enum):
    """Which part of its catalog an agent's loop may use."""

    ENTRY = "entry"
    """The agent a turn starts with: functions, delegations and handoffs."""
    SUBAGENT = "subagent"
    """A delegated agent: functions and its own delegations, never transfers."""
    TARGET = "target"
    """A transfer target: functions and its own handoffs (a chain of transfers), never delegations."""


_KINDS_BY_ROLE = {
    Role.ENTRY: frozenset({TOOL_TYPE_FUNCTION, TOOL_TYPE_DELEGATE, TOOL_TYPE_HANDOFF}),
    Role.SUBAGENT: frozenset({TOOL_TYPE_FUNCTION, TOOL_TYPE_DELEGATE}),
    Role.TARGET: frozenset({TOOL_TYPE_FUNCTION, TOOL_TYPE_HANDOFF}),
}

@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One tool of an agent's catalog."""

    name: str
    """Tool name."""
    kind: str
    """`function`, `delegate` or `handoff` (the `gen_ai.tool.type`)."""
    spec: ToolSpec
    """What the model sees."""
    tool: Tool | None = None
    """The function, for `function` entries."""
    subagent: Subagent | None = None
    """The subagent, for `delegate` entries."""
    handoff: Handoff | None = None
    """The transfer target, for `handoff` entries."""


@dataclass(frozen=True, slots=True)
class Surface:
    """The tools one loop may reach, and the part of them its model is shown."""

    names: frozenset[str]
    """Names its role and filters allow; a call to any other name is refused (`tool_forbidden`)."""
    specs: list[ToolSpec] = field(default_factory=list)
    """What the model is shown, in catalog order: the allowed tools minus those a deny rule of the
    path always refuses (a call to one of those is still denied, naming the rule)."""


def function_entry(tool: Tool) -> ToolEntry:
    """Catalog entry of a function tool."""
    return ToolEntry(tool.name, TOOL_TYPE_FUNCTION, tool.spec, tool=tool)


def delegate_entry(name: str, subagent: Subagent, agent_description: str | None) -> ToolEntry:
    """Catalog entry of a subagent's delegate tool (`agent_description`: what the subagent does)."""
    agent = subagent.agent
    description = (
        subagent.description or agent_description or f"Delegate a task to the {agent.name} subagent."
    )
    return ToolEntry(
        name, TOOL_TYPE_DELEGATE, ToolSpec(name, description, DELEGATE_PARAMETERS), subagent=subagent
    )


def handoff_entry(name: str, handoff: Handoff, agent_description: str | None) -> ToolEntry:
    """Catalog entry of a transfer target's handoff tool (`agent_description`: what the target does)."""
    agent = handoff.agent
    description = (
        handoff.description or f"Transfer the conversation to {agent.name}. {agent_description or ''}".strip()
    )
    return ToolEntry(
        name, TOOL_TYPE_HANDOFF, ToolSpec(name, description, HANDOFF_PARAMETERS), handoff=handoff
    )


def build_surface(
    catalog: dict[str, ToolEntry],
    role: Role,
    filters: tuple[ToolFilter, ...],
    offered: Callable[[ToolEntry], bool],
) -> Surface:
    """The surface of `catalog` for `role` under every filter of `filters`; `offered` picks what is shown."""
    kinds = _KINDS_BY_ROLE[role]
    kept = [
        entry
        for entry in catalog.values()
        if entry.kind in kinds and all(allowed_by(entry.name, f.include, f.exclude) for f in filters)
    ]
    return Surface(frozenset(entry.name for entry in kept), [entry.spec for entry in kept if offered(entry)])


def tool_error(tool: str, code: str, detail: str) -> str:
    """Tool result (JSON) of a refused or failed function-tool call, for the model to read."""
    return json.dumps({"tool": tool, "error": code, "detail": detail}, ensure_ascii=False)
