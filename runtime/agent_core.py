"""`AgentCore`: an agent as the run machinery sees it, a validated definition plus shared run state.

The public `Agent` facade (`janux.runtime.agent`) is an `AgentCore` with a constructor and `run`.
Everything below the facade (the loop, its steps, the turn) takes an `AgentCore`, so no internal
module imports the facade and the runtime's imports read bottom-up. A `Subagent` or `Handoff`
holds its agent as an `AgentRef`; `core_of` gives back the `AgentCore` behind it.
"""

from __future__ import annotations

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
    AgentRef,
    FallbackHandler,
    Guardrail,
    HandoffListener,
    HandoffPolicy,
    OnFailure,
    ToolFilter,
)
from janux.runtime.errors import UnknownAgentError
from janux.runtime.model import Model, ModelSettings
from janux.runtime.policy import PathRules, SlidingWindow
from janux.runtime.sessions import SessionRegistry
from janux.runtime.threads import InMemoryThreadStore, ThreadStore
from janux.runtime.tool_names import delegate_tool_name, handoff_tool_name
from janux.runtime.tools import Tool
from janux.runtime.usage import Price
from janux.tracing.conventions import TOOL_TYPE_DELEGATE, TOOL_TYPE_HANDOFF


class AgentCore(AgentRef):
    """A validated agent definition and the state its runs share (catalog, rate window, sessions)."""

    def __init__(self, spec: AgentSpec, thread_store: ThreadStore | None) -> None:
        self.spec = spec
        """The validated definition."""
        self.catalog: dict[str, ToolEntry] = _catalog(spec)
        """Every tool of the agent by name (functions, delegations, handoffs)."""
        self.fallback_tools: dict[str, Tool] = {tool.name: tool for tool in spec.fallback_tools}
        """The primary executor's tools for FALLBACK_TO_PRIMARY, by name."""
        self.fallback_handler: FallbackHandler | None = spec.fallback_handler
        """Serves FALLBACK_TO_PRIMARY for delegate tools without a fallback tool."""
        self.rules = PathRules().tightened_by(spec.policy)
        """The deny rules of a path this agent starts (as the entry agent, or a transfer target)."""
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
        self._surfaces: dict[tuple[Role, tuple[object, ...], PathRules, int], Surface] = {}

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

    # -- what the run machinery asks -----------------------------------------------------------------

    def surface(self, role: Role, filters: tuple[ToolFilter, ...], rules: PathRules, depth: int) -> Surface:
        """The tools a loop of this agent at `depth` reaches under `role` and `filters` (cached), and
        what its model is shown: never a delegate or handoff tool that `rules` always deny there,
        unless this agent's policy falls back to a primary tool for the denial.

        Keyed by the filters' content, not their identity: a filter built per request and freed can
        hand its id to a different filter, and the cache must never serve the old one's surface.
        """
        key = (role, tuple(f.key() for f in filters), rules, depth)
        surface = self._surfaces.get(key)
        if surface is None:
            surface = self._surfaces[key] = build_surface(
                self.catalog, role, filters, lambda entry: self._offered(entry, rules, depth)
            )
        return surface

    def _offered(self, entry: ToolEntry, rules: PathRules, depth: int) -> bool:
        if entry.kind == TOOL_TYPE_HANDOFF:
            return not rules.denies(entry.name, depth)  # the target takes over at this same depth
        if entry.kind == TOOL_TYPE_DELEGATE and rules.denies(entry.name, depth + 1):
            # Still worth calling when the denial is served by a primary tool.
            served = entry.name in self.fallback_tools or self.fallback_handler is not None
            return served and self.policy.on_denied is OnFailure.FALLBACK_TO_PRIMARY
        return True

    def transfer_targets(self) -> dict[str, AgentCore]:
        """Handoff targets by agent name."""
        return {handoff.agent.name: core_of(handoff.agent) for handoff in self.spec.handoffs}

    def reachable_by_transfer(self) -> dict[str, AgentCore]:
        """This agent and every agent a chain of transfers from it can reach, by name (breadth first,
        so the nearest definition of a name wins)."""
        found: dict[str, AgentCore] = {self.name: self}
        queue = [self]
        while queue:
            agent = queue.pop(0)
            for name, target in agent.transfer_targets().items():
                if name not in found:
                    found[name] = target
                    queue.append(target)
        return found

    def resolve_holder(self, name: str) -> AgentCore:
        """The agent a turn starts as: this one or one a chain of transfers from it reaches (the
        thread's holder after an earlier turn's transfers); else `unknown_agent`."""
        reachable = self.reachable_by_transfer()
        holder = reachable.get(name)
        if holder is None:
            raise UnknownAgentError(f"unknown agent {name!r} (known: {', '.join(sorted(reachable))})")
        return holder

    def __repr__(self) -> str:
        return f"Agent({self.name!r})"


def core_of(agent: AgentRef) -> AgentCore:
    """The `AgentCore` a subagent or handoff definition points at."""
    if not isinstance(agent, AgentCore):
        raise TypeError(f"expected an agent built with janux.runtime.Agent, got {type(agent).__name__}")
    return agent


def _catalog(spec: AgentSpec) -> dict[str, ToolEntry]:
    catalog: dict[str, ToolEntry] = {tool.name: function_entry(tool) for tool in spec.tools}
    for sub in spec.subagents:
        name = sub.tool_name or delegate_tool_name(sub.agent.name)
        catalog[name] = delegate_entry(name, sub, core_of(sub.agent).description)
    for handoff in spec.handoffs:
        name = handoff.tool_name or handoff_tool_name(handoff.agent.name)
        catalog[name] = handoff_entry(name, handoff, core_of(handoff.agent).description)
    return catalog
