"""Validation of `Agent(...)` arguments: types, limits and tool-name uniqueness, errors naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field, InstanceOf, field_validator, model_validator

from janux.runtime.definitions import (
    AgentRef,
    Cost,
    Definition,
    Handoff,
    HandoffPolicy,
    RateLimit,
    Subagent,
    ToolFilter,
)
from janux.runtime.model import Model, ModelSettings
from janux.runtime.tool_names import delegate_tool_name, handoff_tool_name
from janux.runtime.tools import Tool, make_tool


def _as_tool(item: Any) -> Any:
    """Plain functions are accepted where tools are expected and wrapped with `make_tool`."""
    if callable(item) and not isinstance(item, Tool):
        return make_tool(item)
    return item


class AgentSpec(Definition):
    """Everything `Agent(...)` accepts, checked at definition time."""

    name: str = Field(min_length=1)
    """Agent name (`gen_ai.agent.name`)."""
    instructions: str = ""
    """System prompt."""
    description: str | None = None
    """What the agent does (default tool description when it is a subagent or handoff target)."""
    model: InstanceOf[Model] | str | None = None
    """A model, a registry name, or `None` (subagents and targets then inherit the caller's)."""
    tools: list[InstanceOf[Tool]] = Field(default_factory=list)
    """Function tools (plain functions are wrapped)."""
    subagents: list[InstanceOf[Subagent]] = Field(default_factory=list)
    """Subagents, each a `delegate.<name>` tool."""
    handoffs: list[InstanceOf[Handoff]] = Field(default_factory=list)
    """Transfer targets, each a `handoff.<name>` tool (agents are wrapped in `Handoff`)."""
    tool_filter: InstanceOf[ToolFilter] | None = None
    """Include/exclude globs over tool names."""
    cost: InstanceOf[Cost] | None = None
    """USD per million input/output tokens; `None` = unpriced."""
    max_turns: int = Field(default=10, ge=1)
    """Most model rounds per turn when this agent runs the turn (or holds it after a transfer)."""
    policy: InstanceOf[HandoffPolicy] = Field(default_factory=HandoffPolicy)
    """Governance of this agent's delegation tools."""
    parallel_tool_calls: bool = True
    """Run one round's tool calls concurrently (fork-join)."""
    rate_limit: InstanceOf[RateLimit] | None = None
    """Delegations this agent may start per window."""
    input_guardrails: list[InstanceOf[Callable[..., Any]]] = Field(default_factory=list)
    """Checks on the turn input and on every task this agent delegates."""
    fallback_tools: list[InstanceOf[Tool]] = Field(default_factory=list)
    """The primary executor's tools for FALLBACK_TO_PRIMARY, each named after a delegate tool."""
    fallback_handler: InstanceOf[Callable[..., Any]] | None = None
    """Serves FALLBACK_TO_PRIMARY for every delegate tool without a fallback tool (`FallbackHandler`)."""
    listeners: list[InstanceOf[Callable[..., Any]]] = Field(default_factory=list)
    """Receive HANDOFF_START / HANDOFF_END dicts (async ones are awaited)."""
    settings: InstanceOf[ModelSettings] | None = None
    """Per-request model settings."""

    @classmethod
    def _label(cls, data: dict[str, Any]) -> str:
        name = data.get("name")
        return f"Agent {name!r}" if isinstance(name, str) else "Agent"

    @model_validator(mode="before")
    @classmethod
    def _explain_references(cls, data: Any) -> Any:
        """Say what is wrong with the two common slips: a target by name, a subagent without budget."""
        if not isinstance(data, dict):
            return data
        for index, item in enumerate(data.get("handoffs") or ()):
            if isinstance(item, str):
                raise ValueError(
                    f"handoffs.{index}: unknown handoff target {item!r}: pass the Agent itself (or a "
                    "Handoff); names are resolved only by janux.runtime.config.agents_from_config"
                )
        for index, item in enumerate(data.get("subagents") or ()):
            if isinstance(item, AgentRef):
                raise ValueError(
                    f"subagents.{index}: agent {item.name!r} has no budget: wrap it as "
                    f"Subagent(agent=..., max_turns=N) (max_turns is required)"
                )
        return data

    @field_validator("tools", "fallback_tools", mode="before")
    @classmethod
    def _wrap_functions(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return [_as_tool(item) for item in value]
        return value

    @field_validator("handoffs", mode="before")
    @classmethod
    def _wrap_agents(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return [Handoff(agent=item) if isinstance(item, AgentRef) else item for item in value]
        return value

    @model_validator(mode="after")
    def _unique_tool_names(self) -> AgentSpec:
        seen: dict[str, str] = {}
        for name, where in self.tool_names():
            if name in seen:
                raise ValueError(f"{where}: duplicate tool name {name!r} (also {seen[name]})")
            seen[name] = where
        for index, handoff in enumerate(self.handoffs):
            if handoff.agent.name == self.name:
                raise ValueError(f"handoffs.{index}: an agent cannot hand off to itself")
        self._check_fallbacks()
        return self

    def _check_fallbacks(self) -> None:
        """A fallback tool that serves no delegate tool is a slip (a typo, a renamed subagent)."""
        delegates = [name for name, where in self.tool_names() if where.startswith("subagents.")]
        for index, tool in enumerate(self.fallback_tools):
            if tool.name not in delegates:
                known = ", ".join(delegates) or "none"
                raise ValueError(
                    f"fallback_tools.{index}: {tool.name!r} matches no delegate tool "
                    f"(delegate tools: {known})"
                )

    def tool_names(self) -> list[tuple[str, str]]:
        """(tool name, field path) of every tool the agent defines, in catalog order."""
        names = [(tool.name, f"tools.{i}") for i, tool in enumerate(self.tools)]
        names += [
            (sub.tool_name or delegate_tool_name(sub.agent.name), f"subagents.{i}")
            for i, sub in enumerate(self.subagents)
        ]
        names += [
            (h.tool_name or handoff_tool_name(h.agent.name), f"handoffs.{i}")
            for i, h in enumerate(self.handoffs)
        ]
        return names
