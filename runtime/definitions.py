"""Definitions users write (subagents, handoffs, policy, prices, filters), validated at the edge.

These are pydantic models: a bad definition raises `DefinitionError` at definition time with a
message naming the field (`Subagent 'researcher': max_turns: Field required`). Inside the run
they are read-only; the loop's own state lives in dataclasses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, InstanceOf, PlainValidator, ValidationError

from janux.runtime.errors import DefinitionError
from janux.runtime.handoff_record import HandoffRecord
from janux.runtime.usage import Price
from janux.tracing.conventions import SESSION_NEW, SESSION_REUSE


class AgentRef:
    """What a `Subagent` or a `Handoff` points at: an agent built with `janux.runtime.Agent`.

    A nominal base, so that these definitions check their `agent` field without importing the
    `Agent` facade, which sits at the top of the runtime and imports them.
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        """Agent name."""
        raise NotImplementedError


def _agent_only(value: Any) -> AgentRef:
    if not isinstance(value, AgentRef):
        raise ValueError(f"Input should be an instance of Agent, got {type(value).__name__}")
    return value


AgentField = Annotated[AgentRef, PlainValidator(_agent_only)]
"""A field holding an agent (`Subagent.agent`, `Handoff.agent`)."""


class SessionMode(StrEnum):
    """How a subagent's history carries over between delegations."""

    NEW_SESSION = SESSION_NEW
    """Fresh history for every delegation (the default)."""
    REUSE_SESSION = SESSION_REUSE
    """History accumulates per tool name within a thread; concurrent calls are serialized."""


class OnFailure(StrEnum):
    """What the policy does when a delegation or transfer is denied or fails."""

    FAIL = "fail"
    """Return an error result to the calling model (the turn goes on)."""
    FALLBACK_TO_PRIMARY = "fallback_to_primary"
    """Hand the same call to the primary executor (a fallback tool, or the fallback handler)."""
    RAISE = "raise"
    """Stop the turn: `run()` raises `HandoffError` carrying the handoff record."""


@dataclass(frozen=True, slots=True)
class DelegationRequest:
    """What an input filter sees: the delegation about to run."""

    tool: str
    """Tool name (`delegate.researcher`)."""
    target: str
    """Subagent name."""
    task: str
    """The task text the subagent would receive (`task`, plus the `context` when given)."""
    depth: int
    """Depth the subagent would run at."""
    call_id: str = ""
    """The model's tool-call id."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """The call's arguments as parsed (`task`, `context`, and anything else the model sent)."""


InputFilter = Callable[[DelegationRequest], "str | None"]
"""Rewrites a delegation's task once; returning `None` keeps the original."""

Guardrail = Callable[[str], "str | Awaitable[str | None] | None"]
"""An input guardrail: returns a refusal reason, or `None` to let the text through."""

HandoffListener = Callable[[dict[str, Any]], Any]
"""Receives HANDOFF_START / HANDOFF_END event dicts; an async listener is awaited. Exceptions are
logged and ignored."""

FallbackHandler = Callable[[HandoffRecord, Mapping[str, Any]], Any]
"""Serves FALLBACK_TO_PRIMARY for every delegate tool of an agent: receives the refused handoff's
record and the call's parsed arguments, returns the result the model reads (sync or async)."""


def describe_definition_error(exc: ValidationError) -> str:
    """`field.path: message; ...`, without pydantic's `Value error, ` prefix."""
    parts = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        where = ".".join(str(part) for part in error["loc"])
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


class Definition(BaseModel):
    """Base of user-facing definitions: frozen, no unknown fields, errors name the field."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise DefinitionError(f"{self._label(data)}: {describe_definition_error(exc)}") from None

    @classmethod
    def _label(cls, data: dict[str, Any]) -> str:
        agent = data.get("agent")
        name = getattr(agent, "name", None) or data.get("name")
        return f"{cls.__name__} {name!r}" if isinstance(name, str) else cls.__name__


class Cost(Definition):
    """An agent's price: USD per million tokens. Leave an agent's `cost` unset when unknown."""

    input: float = Field(ge=0)
    """USD per million input tokens."""
    output: float = Field(ge=0)
    """USD per million output tokens."""

    def price(self) -> Price:
        """The internal price form."""
        return Price(input_per_million=self.input, output_per_million=self.output)


class ToolFilter(Definition):
    """Glob patterns over tool names: kept when included (no list = all) and not excluded."""

    include: list[str] | None = None
    """Patterns a tool name must match one of; `None` keeps every tool."""
    exclude: list[str] | None = None
    """Patterns that remove a tool."""

    def key(self) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
        """The filter's content as a hashable value (what surface caches are keyed by)."""
        return (
            tuple(self.include) if self.include is not None else None,
            tuple(self.exclude) if self.exclude is not None else None,
        )


class RateLimit(Definition):
    """A caller's delegation rate: at most `max_calls` delegations per `per_seconds` (sliding window)."""

    max_calls: int = Field(ge=1)
    """Delegations allowed per window."""
    per_seconds: float = Field(default=60.0, gt=0)
    """Window length in seconds."""


class HandoffPolicy(Definition):
    """Governance of delegation and handoff tools (plain tools are never touched).

    Order: depth = current + 1 -> HANDOFF_START -> arguments -> deny checks (allowed, denied,
    depth) -> input filter -> attempts with per-attempt timeout -> HANDOFF_END. The deny rules in
    force for a loop are those of every enabled policy on its path (the turn's entry agent down to
    the caller): the smallest `max_depth`, and a tool must pass every allow-list and no deny-list.
    `enabled=False` switches this agent's own rules, filter and retries off (its callers' rules
    still hold) but still emits events and applies the timeout.
    """

    enabled: bool = True
    """Apply deny checks, the input filter and retries."""
    max_depth: int = Field(default=1, ge=0)
    """Deepest depth a delegated agent may run at (the entry agent is depth 0)."""
    max_retries: int = Field(default=0, ge=0)
    """Extra attempts after a failed one (attempts = retries + 1)."""
    max_transfers: int = Field(default=3, ge=0)
    """Most transfers in one user turn (a chain triage -> billing -> refunds is 2): a handoff call
    past it is denied (`max_transfers`), so two agents cannot pass a conversation back and forth
    forever. The smallest limit on the holder's path applies."""
    timeout_ms: float = Field(default=0, ge=0)
    """Per-attempt timeout in ms; 0 = none. A timed-out attempt is cancelled."""
    allowed_tools: list[str] | None = None
    """Delegation tool names (globs) allowed; `None` allows all."""
    denied_tools: list[str] | None = None
    """Delegation tool names (globs) denied."""
    on_denied: OnFailure = OnFailure.FAIL
    """On denial: an error naming the rule, the primary executor, or a stop of the turn."""
    on_error: OnFailure = OnFailure.FAIL
    """When every attempt failed: an error, the primary executor, or a stop of the turn."""
    input_filter: InstanceOf[Callable[..., Any]] | None = None
    """Rewrites the task once (`InputFilter`); returning `None` keeps the original."""


class Subagent(Definition):
    """A subagent run as a tool call (`delegate.<name>`), under a mandatory budget."""

    agent: AgentField
    """The agent that runs the delegated task (fresh history, its own instructions)."""
    max_turns: int = Field(ge=1)
    """Most model rounds per delegation attempt (required; a retry starts afresh)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Most input + output tokens across the rounds of one delegation attempt."""
    max_ms: float | None = Field(default=None, gt=0)
    """Wall clock of the whole delegation (all attempts), in ms."""
    session: SessionMode = SessionMode.NEW_SESSION
    """NEW_SESSION (default) or REUSE_SESSION."""
    tool_name: str | None = Field(default=None, min_length=1)
    """Overrides the default `delegate.<normalized name>`."""
    description: str | None = None
    """Tool description for the caller's model (default: from the agent)."""


class Handoff(Definition):
    """A transfer target (`handoff.<name>`): takes the conversation over for the rest of the turn."""

    agent: AgentField
    """The specialist that takes over."""
    tool_name: str | None = Field(default=None, min_length=1)
    """Overrides the default `handoff.<normalized name>`."""
    description: str | None = None
    """Tool description for the front desk's model."""
