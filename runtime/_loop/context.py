"""Run state: what one user turn shares, what one agent loop owns, and the delegation depth.

Depth lives in a contextvar: every tool call of a parallel fan-out runs in a task with its own
copy of the context, so a depth-1 subagent that fans out two delegations at once sees depth 1 in
both and each delegated loop runs at depth 2, whatever the interleaving.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import Span

from janux.errors import JanuxError
from janux.runtime.agent_core import AgentCore
from janux.runtime.catalog import Role, Surface
from janux.runtime.definitions import ToolFilter
from janux.runtime.model import Message, Model, ModelSettings
from janux.runtime.policy import PathRules
from janux.runtime.usage import Price, Usage, UsageLimits
from janux.tracing.instrument.run import RunInstrumentation

_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("janux_depth", default=0)


def current_depth() -> int:
    """Delegation depth of the agent loop running in this context (0 = the turn's agent)."""
    return _DEPTH.get()


def enter_depth(depth: int) -> contextvars.Token[int]:
    """Set the depth for the loop about to run here; undo with `leave_depth`."""
    return _DEPTH.set(depth)


def leave_depth(token: contextvars.Token[int]) -> None:
    """Restore the depth `enter_depth` replaced."""
    _DEPTH.reset(token)


class BudgetCrossed(JanuxError):
    """The rounds below a subagent took its whole delegation to its `max_tokens`: the work under it
    stops, reported as cancelled, and the cut is reported on the subagent whose line was crossed."""

    def __init__(self, owner: LoopContext) -> None:
        super().__init__(f"{owner.active.agent.name!r} reached max_tokens")
        self.owner = owner
        """The loop whose budget was crossed."""


@dataclass(slots=True, frozen=True)
class End:
    """A loop is over: the final text, or the budget line that cut it."""

    text: str
    """Final answer (or the last text seen when cut)."""
    stop_reason: str | None = None
    """`max_turns` / `max_tokens` when a budget line cut the loop."""


RunLoop = Callable[["LoopContext"], Awaitable[End]]
"""Runs one agent loop to its end (`janux.runtime._loop.loop.run_loop`)."""


@dataclass(slots=True, eq=False)
class TurnContext:
    """Shared by every loop of one user turn (root loop and all delegations)."""

    obs: RunInstrumentation
    """This run's instrumentation."""
    run_loop: RunLoop
    """How a delegation attempt runs its subagent's loop: handed down by the turn, so the steps
    below the loop never import it back."""
    entry: AgentCore
    """The agent `run` was called on (owns sessions and the thread store)."""
    thread_id: str
    """Conversation id of the turn."""
    input: str
    """The user's input of the turn (a transfer target's guardrails check it)."""
    models: Mapping[str, Model]
    """Registry resolving agents whose `model` is a name."""
    bill: Usage = field(default_factory=Usage)
    """The whole turn: every round of every loop, each priced by its own agent."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """HANDOFF_START / HANDOFF_END dicts in emission order."""
    transfers: int = 0
    """Transfers of the turn that happened (a refused handoff call never counts)."""


@dataclass(slots=True, eq=False)
class ActiveAgent:
    """An agent as one loop runs it: resolved model, prompt, surface, price, budget and rules."""

    agent: AgentCore
    """The agent definition."""
    model: Model
    """The resolved model."""
    system: str
    """System prompt of the loop."""
    role: Role
    """Which part of the catalog the loop may use."""
    filters: tuple[ToolFilter, ...]
    """Tool filters in force (callers' and own)."""
    rules: PathRules
    """Deny rules in force (every enabled policy from the turn's entry agent down to this one)."""
    surface: Surface
    """Tools allowed, and those shown."""
    price: Price | None
    """Price of the agent's rounds; `None` = unpriced."""
    limits: UsageLimits
    """Budget lines of the loop."""
    settings: ModelSettings
    """Per-request model settings."""

    @classmethod
    def of(
        cls,
        agent: AgentCore,
        model: Model,
        role: Role,
        limits: UsageLimits,
        *,
        depth: int,
        price: Price | None,
        inherited: ActiveAgent | None = None,
        system: str | None = None,
        rules: PathRules | None = None,
    ) -> ActiveAgent:
        """`agent` run in `role` at `depth`: its filter and policy after those it `inherited` from its
        caller's loop, its settings, and its instructions as the system prompt unless `system`
        replaces them; `rules` replaces the deny rules (a transfer target's: its caller's path and its
        own policy, without inheriting the caller's tool filters)."""
        filters = inherited.filters if inherited is not None else ()
        if agent.tool_filter is not None:
            filters = (*filters, agent.tool_filter)
        if rules is None:
            rules = inherited.rules.tightened_by(agent.policy) if inherited is not None else agent.rules
        return cls(
            agent=agent,
            model=model,
            system=agent.instructions if system is None else system,
            role=role,
            filters=filters,
            rules=rules,
            surface=agent.surface(role, filters, rules, depth),
            price=price,
            limits=limits,
            settings=agent.settings,
        )


@dataclass(slots=True, eq=False)
class Transfer:
    """A transfer accepted by a handoff call, applied after the round's tool calls finish."""

    target: AgentCore
    """The agent taking over."""
    model: Model
    """The model it answers with."""
    reason: str
    """Why (from the handoff call), for the transfer note."""


@dataclass(slots=True, eq=False)
class LoopContext:
    """One agent loop: its messages, span, depth and own usage."""

    turn: TurnContext
    """The turn it belongs to."""
    active: ActiveAgent
    """The agent running the loop (changes on each transfer)."""
    messages: list[Message]
    """History sent to the model (system prompt first)."""
    span: Span
    """The loop's `invoke_agent` span."""
    depth: int
    """Delegation depth of the loop."""
    parent: LoopContext | None = None
    """The loop that delegated to this one (`None` for the turn's loop)."""
    usage: Usage = field(default_factory=Usage)
    """This loop's OWN rounds (its `janux.turn.*`), never its delegations."""
    spent_tokens: int = 0
    """Input + output tokens of this loop and of every loop below it (what `max_tokens` counts)."""
    agent_rounds: int = 0
    """Rounds made by the current agent (reset by a transfer), checked against `max_turns`."""
    pending_transfer: Transfer | None = None
    """A transfer accepted this round (one per round: later handoff calls of the round are ignored)."""
    holders: list[str] = field(default_factory=list)
    """After a transfer: every agent that held the conversation in turn, the current one last."""

    def spend(self, tokens: int) -> None:
        """Count a round's tokens here and on every loop above."""
        loop: LoopContext | None = self
        while loop is not None:
            loop.spent_tokens += tokens
            loop = loop.parent

    def crossed_above(self) -> LoopContext | None:
        """The outermost loop above this one whose `max_tokens` is reached, if any."""
        crossed = None
        loop = self.parent
        while loop is not None:
            line = loop.active.limits.max_tokens
            if line is not None and loop.spent_tokens >= line:
                crossed = loop
            loop = loop.parent
        return crossed
