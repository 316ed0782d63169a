"""Agents from a configuration mapping (e.g. parsed YAML or JSON), validated at the edge.

    agents:
      triage:
        instructions: You are the front desk.
        model: gpt-4o-mini            # a registry name (or a Model passed in `models`)
        cost: {input: 0.15, output: 0.60}
        subagents:
          - {agent: researcher, max_turns: 3, max_tokens: 4000}
        handoffs: [billing]
      researcher: {instructions: ..., tools: [search_docs]}
      billing: {instructions: ...}

Agents reference each other (subagents, handoffs) and tools by name. Every error names the field:
`agents.triage.handoffs.0: unknown handoff target 'billingg'`, `agents.triage.subagents.0.max_turns:
Field required`, `agents.a.subagents.0: delegation cycle a -> b -> a`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from janux.runtime.agent import Agent
from janux.runtime.definitions import (
    Cost,
    Handoff,
    HandoffPolicy,
    RateLimit,
    SessionMode,
    Subagent,
    ToolFilter,
    describe_definition_error,
)
from janux.runtime.errors import DefinitionError
from janux.runtime.model import Model
from janux.runtime.tools import Tool

T = TypeVar("T")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SubagentConfig(_Strict):
    """A subagent reference with its mandatory budget."""

    agent: str
    """Name of the agent (a key of `agents`)."""
    max_turns: int = Field(ge=1)
    """Most rounds per delegation (required)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Token budget."""
    max_ms: float | None = Field(default=None, gt=0)
    """Wall-clock budget in ms."""
    session: SessionMode = SessionMode.NEW_SESSION
    """`new_session` or `reuse_session`."""
    tool_name: str | None = None
    """Tool-name override."""
    description: str | None = None
    """Tool description."""


class HandoffConfig(_Strict):
    """A transfer target reference."""

    agent: str
    """Name of the target agent."""
    tool_name: str | None = None
    """Tool-name override."""
    description: str | None = None
    """Tool description."""


class AgentConfig(_Strict):
    """One agent of the file."""

    instructions: str = ""
    """System prompt."""
    description: str | None = None
    """What the agent does."""
    model: str | None = None
    """Model name (looked up in `models`, else resolved at run time through the run's registry)."""
    tools: list[str] = Field(default_factory=list)
    """Names of function tools."""
    subagents: list[SubagentConfig] = Field(default_factory=list)
    """Subagents."""
    handoffs: list[str | HandoffConfig] = Field(default_factory=list)
    """Transfer targets."""
    tool_filter: dict[str, list[str] | None] | None = None
    """`{include: [...], exclude: [...]}`."""
    cost: dict[str, Any] | None = None
    """`{input: USD/M, output: USD/M}`."""
    max_turns: int = Field(default=10, ge=1)
    """Round limit of a turn."""
    policy: dict[str, Any] | None = None
    """HandoffPolicy fields (all but `input_filter`, which only code can supply)."""
    parallel_tool_calls: bool = True
    """Fork-join tool calls."""
    rate_limit: dict[str, Any] | None = None
    """`{max_calls: n, per_seconds: s}`."""


class TeamConfig(_Strict):
    """The whole file."""

    agents: dict[str, AgentConfig]
    """Agents by name."""


def agents_from_config(
    data: Mapping[str, Any],
    *,
    models: Mapping[str, Model] | None = None,
    tools: Iterable[Tool] | Mapping[str, Tool] = (),
) -> dict[str, Agent]:
    """Build every agent of `data` (dependencies first); raises `DefinitionError` naming the field."""
    try:
        team = TeamConfig.model_validate(data)
    except ValidationError as exc:
        raise DefinitionError(f"config: {describe_definition_error(exc)}") from None
    tool_map = dict(tools) if isinstance(tools, Mapping) else {tool.name: tool for tool in tools}
    builder = _Builder(team, models or {}, tool_map)
    return {name: builder.build(name, ()) for name in team.agents}


class _Builder:
    def __init__(self, team: TeamConfig, models: Mapping[str, Model], tools: Mapping[str, Tool]) -> None:
        self.team = team
        self.models = models
        self.tools = tools
        self.built: dict[str, Agent] = {}

    def build(self, name: str, chain: tuple[str, ...]) -> Agent:
        if name in self.built:
            return self.built[name]
        config = self.team.agents[name]
        where = f"agents.{name}"
        subagents = [
            self._subagent(sub, f"{where}.subagents.{i}", (*chain, name))
            for i, sub in enumerate(config.subagents)
        ]
        handoffs = [
            self._handoff(h, f"{where}.handoffs.{i}", (*chain, name)) for i, h in enumerate(config.handoffs)
        ]
        agent = self._agent(name, config, subagents, handoffs, where)
        self.built[name] = agent
        return agent

    def _reference(self, target: str, where: str, what: str, chain: tuple[str, ...]) -> Agent:
        if target not in self.team.agents:
            raise DefinitionError(f"{where}: unknown {what} {target!r}")
        if target in chain:
            raise DefinitionError(f"{where}: delegation cycle {' -> '.join((*chain, target))}")
        return self.build(target, chain)

    def _subagent(self, sub: SubagentConfig, where: str, chain: tuple[str, ...]) -> Subagent:
        agent = self._reference(sub.agent, where, "subagent", chain)
        fields = sub.model_dump(exclude={"agent"})
        return _wrap(where, lambda: Subagent(agent=agent, **fields))

    def _handoff(self, handoff: str | HandoffConfig, where: str, chain: tuple[str, ...]) -> Handoff:
        config = HandoffConfig(agent=handoff) if isinstance(handoff, str) else handoff
        agent = self._reference(config.agent, where, "handoff target", chain)
        return Handoff(agent=agent, tool_name=config.tool_name, description=config.description)

    def _agent(
        self, name: str, config: AgentConfig, subagents: list[Subagent], handoffs: list[Handoff], where: str
    ) -> Agent:
        tools = []
        for index, tool_name in enumerate(config.tools):
            if tool_name not in self.tools:
                raise DefinitionError(f"{where}.tools.{index}: unknown tool {tool_name!r}")
            tools.append(self.tools[tool_name])
        model: Model | str | None = config.model
        if isinstance(model, str) and model in self.models:
            model = self.models[model]
        options = _optional_parts(config, where)
        return _wrap(
            where,
            lambda: Agent(
                name,
                instructions=config.instructions,
                description=config.description,
                model=model,
                tools=tools,
                subagents=subagents,
                handoffs=handoffs,
                max_turns=config.max_turns,
                parallel_tool_calls=config.parallel_tool_calls,
                **options,
            ),
        )


def _optional_parts(config: AgentConfig, where: str) -> dict[str, Any]:
    """Filter, cost, rate limit and policy of an agent config, each validated under its own path."""
    parts: dict[str, Any] = {}
    tool_filter = config.tool_filter
    if tool_filter is not None:
        parts["tool_filter"] = _wrap(f"{where}.tool_filter", lambda: ToolFilter(**tool_filter))
    cost = config.cost
    if cost is not None:
        parts["cost"] = _wrap(f"{where}.cost", lambda: Cost(**cost))
    rate = config.rate_limit
    if rate is not None:
        parts["rate_limit"] = _wrap(f"{where}.rate_limit", lambda: RateLimit(**rate))
    policy = config.policy
    if policy is not None:
        if "input_filter" in policy:
            raise DefinitionError(
                f"{where}.policy.input_filter: an input filter is a function; set it in code"
            )
        parts["policy"] = _wrap(f"{where}.policy", lambda: HandoffPolicy(**policy))
    return parts


def _wrap(where: str, make: Callable[[], T]) -> T:
    """Call `make`, prefixing a DefinitionError with the config path."""
    try:
        return make()
    except DefinitionError as exc:
        raise DefinitionError(f"{where}: {exc}") from None
