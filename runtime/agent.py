"""`Agent`: the public definition of an agent, and the entry point of a user turn.

    researcher = Agent("researcher", instructions="...", cost=Cost(input=0.15, output=0.6))
    triage = Agent(
        "triage",
        instructions="...",
        model=my_model,
        subagents=[Subagent(agent=researcher, max_turns=3, max_tokens=4000)],
        handoffs=[billing],
    )
    result = await triage.run("Why was I charged twice?", thread_id="t-42")

Definitions are validated when constructed (`DefinitionError` names the field). A turn runs with
`run` (async) or `run_sync`; tracing goes to the global OpenTelemetry providers unless a
`tracer_provider` / `meter_provider` is passed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry.trace import TracerProvider

from janux.runtime.agent_spec import AgentSpec
from janux.runtime.catalog import (
    Role,
    Surface,
    ToolEntry,
    build_surface,
    delegate_entry,
    function_entry,
    handoff_entry,
)
from janux.runtime.definitions import (
    Cost,
    Guardrail,
    Handoff,
    HandoffListener,
    HandoffPolicy,
    RateLimit,
    Subagent,
    ToolFilter,
)
from janux.runtime.errors import UnknownAgentError
from janux.runtime.model import Model, ModelSettings
from janux.runtime.policy import SlidingWindow
from janux.runtime.result import RunResult
from janux.runtime.sessions import SessionRegistry
from janux.runtime.threads import InMemoryThreadStore, ThreadStore
from janux.runtime.tool_names import delegate_tool_name, handoff_tool_name
from janux.runtime.tools import Tool
from janux.runtime.turn import run_turn
from janux.runtime.usage import Price
from janux.tracing.instrument.content import ContentCapture
from janux.tracing.instrument.run import instrumentation_for_run


class Agent:
    """An agent: instructions, a model, tools, subagents, handoffs, a price, a budget and a policy."""

    def __init__(
        self,
        name: str,
        *,
        instructions: str = "",
        description: str | None = None,
        model: Model | str | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        subagents: Iterable[Subagent] = (),
        handoffs: Iterable[Agent | Handoff] = (),
        tool_filter: ToolFilter | None = None,
        cost: Cost | None = None,
        max_turns: int = 10,
        policy: HandoffPolicy | None = None,
        parallel_tool_calls: bool = True,
        rate_limit: RateLimit | None = None,
        input_guardrails: Iterable[Guardrail] = (),
        fallback_tools: Iterable[Tool | Callable[..., Any]] = (),
        listeners: Iterable[HandoffListener] = (),
        settings: ModelSettings | None = None,
        thread_store: ThreadStore | None = None,
    ) -> None:
        # Plain functions and bare agents are wrapped by AgentSpec's validators.
        spec = AgentSpec(
            name=name,
            instructions=instructions,
            description=description,
            model=model,
            tools=list(tools),  # type: ignore[arg-type]
            subagents=list(subagents),
            handoffs=list(handoffs),  # type: ignore[arg-type]
            tool_filter=tool_filter,
            cost=cost,
            max_turns=max_turns,
            policy=policy if policy is not None else HandoffPolicy(),
            parallel_tool_calls=parallel_tool_calls,
            rate_limit=rate_limit,
            input_guardrails=list(input_guardrails),
            fallback_tools=list(fallback_tools),  # type: ignore[arg-type]
            listeners=list(listeners),
            settings=settings,
        )
        self._adopt(spec, thread_store)

    def _adopt(self, spec: AgentSpec, thread_store: ThreadStore | None) -> None:
        """Derive the runtime state of a validated definition."""
        self.spec = spec
        """The validated definition."""
        self.catalog: dict[str, ToolEntry] = _catalog(spec)
        """Every tool of the agent by name (functions, delegations, handoffs)."""
        self.fallback_tools: dict[str, Tool] = {tool.name: tool for tool in spec.fallback_tools}
        """The primary executor's tools for FALLBACK_TO_PRIMARY, by name."""
        self.price: Price | None = spec.cost.price() if spec.cost is not None else None
        """Price of this agent's rounds; `None` = unpriced."""
        self.rate_window: SlidingWindow | None = (
            SlidingWindow.of(spec.rate_limit) if spec.rate_limit else None
        )
        """This agent's delegation rate limit state (shared by its runs)."""
        self.sessions = SessionRegistry()
        """REUSE_SESSION memories of turns entered through this agent."""
        self.listeners: list[HandoffListener] = list(spec.listeners)
        """HANDOFF event listeners."""
        self.settings: ModelSettings = spec.settings or ModelSettings(
            parallel_tool_calls=spec.parallel_tool_calls
        )
        """Per-request model settings."""
        self.threads: ThreadStore = thread_store if thread_store is not None else InMemoryThreadStore()
        """Where this agent's threads are kept between turns."""
        self._surfaces: dict[tuple[Role, tuple[object, ...]], Surface] = {}

    # -- definition --------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """Agent name."""
        return self.spec.name

    @property
    def instructions(self) -> str:
        """System prompt."""
        return self.spec.instructions

    @property
    def description(self) -> str | None:
        """What the agent does."""
        return self.spec.description

    @property
    def model(self) -> Model | str | None:
        """Declared model (instance, registry name, or `None`)."""
        return self.spec.model

    @property
    def tool_filter(self) -> ToolFilter | None:
        """Own tool filter."""
        return self.spec.tool_filter

    @property
    def policy(self) -> HandoffPolicy:
        """Governance of this agent's delegation tools."""
        return self.spec.policy

    @property
    def max_turns(self) -> int:
        """Round limit when running a turn."""
        return self.spec.max_turns

    @property
    def parallel_tool_calls(self) -> bool:
        """Whether one round's tool calls run concurrently."""
        return self.spec.parallel_tool_calls

    @property
    def input_guardrails(self) -> list[Guardrail]:
        """Input checks (turn input and delegated tasks)."""
        return self.spec.input_guardrails

    def add_listener(self, listener: HandoffListener) -> None:
        """Register a HANDOFF_START / HANDOFF_END listener."""
        self.listeners.append(listener)

    def surface(self, role: Role, filters: tuple[ToolFilter, ...]) -> Surface:
        """The tools a loop of this agent shows under `role` and `filters` (cached).

        Keyed by the filters' content, not their identity: a filter built per request and freed can
        hand its id to a different filter, and the cache must never serve the old one's surface.
        """
        key = (role, tuple(f.key() for f in filters))
        surface = self._surfaces.get(key)
        if surface is None:
            surface = self._surfaces[key] = build_surface(self.catalog, role, filters)
        return surface

    def transfer_targets(self) -> dict[str, Agent]:
        """Handoff targets by agent name."""
        return {handoff.agent.name: handoff.agent for handoff in self.spec.handoffs}

    def resolve_holder(self, name: str) -> Agent:
        """The agent a turn starts as: this one or one of its handoff targets; else `unknown_agent`."""
        if name == self.name:
            return self
        target = self.transfer_targets().get(name)
        if target is None:
            known = ", ".join(sorted([self.name, *self.transfer_targets()]))
            raise UnknownAgentError(f"unknown agent {name!r} (known: {known})")
        return target

    def __repr__(self) -> str:
        return f"Agent({self.name!r})"

    # -- running -----------------------------------------------------------------------------------

    async def run(
        self,
        input: str,
        *,
        thread_id: str | None = None,
        agent: str | None = None,
        models: Mapping[str, Model] | None = None,
        tracer_provider: TracerProvider | None = None,
        meter_provider: Any | None = None,
        capture_content: ContentCapture | bool | None = None,
    ) -> RunResult:
        """Run one user turn.

        `thread_id` continues a thread (a new one is made when omitted); `agent` names who starts the
        turn (this agent or a handoff target; default: whoever holds the thread); `models` resolves
        agents whose `model` is a name; providers default to the global ones; `capture_content`
        overrides the OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT environment setting.
        """
        obs = instrumentation_for_run(tracer_provider, meter_provider, capture_content)
        # `is not None`: an empty registry the caller fills lazily is still the caller's registry.
        registry = models if models is not None else {}
        return await run_turn(self, input, thread_id=thread_id, start_as=agent, models=registry, obs=obs)

    def run_sync(self, input: str, **options: Any) -> RunResult:
        """`run` for synchronous callers (not from inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(input, **options))
        raise RuntimeError(
            "run_sync() cannot be called from a running event loop; use `await agent.run(...)`"
        )


def _catalog(spec: AgentSpec) -> dict[str, ToolEntry]:
    catalog: dict[str, ToolEntry] = {tool.name: function_entry(tool) for tool in spec.tools}
    for sub in spec.subagents:
        name = sub.tool_name or delegate_tool_name(sub.agent.name)
        catalog[name] = delegate_entry(name, sub)
    for handoff in spec.handoffs:
        name = handoff.tool_name or handoff_tool_name(handoff.agent.name)
        catalog[name] = handoff_entry(name, handoff)
    return catalog


Subagent.model_rebuild(_types_namespace={"Agent": Agent})
Handoff.model_rebuild(_types_namespace={"Agent": Agent})
