"""The model boundary: messages in, one response out, through a single async method.

Every model client (the scripted and function models of `janux.runtime.testing`, the OpenAI-compatible
client) implements `Model`. Tracing wraps this boundary rather than living in each client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from janux.errors import JanuxError

Role = Literal["system", "user", "assistant", "tool"]
"""Who wrote a message."""


@dataclass(slots=True, frozen=True)
class ToolCall:
    """A tool call the model asked for."""

    id: str
    """The model's id for the call; echoed back on the tool result."""
    name: str
    """Tool name as the runtime knows it (dots allowed: `delegate.researcher`)."""
    arguments: str
    """Raw JSON arguments as the model produced them (may be malformed)."""


@dataclass(slots=True)
class Message:
    """One chat message."""

    role: Role
    """Author of the message."""
    content: str = ""
    """Text content (empty for an assistant message that only calls tools)."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """Tool calls of an assistant message."""
    tool_call_id: str | None = None
    """For a `tool` message: the call it answers."""
    name: str | None = None
    """For a `tool` message: the tool name; for an assistant message: the agent that wrote it."""


@dataclass(slots=True, frozen=True)
class ToolSpec:
    """A tool as shown to the model."""

    name: str
    """Tool name (dots allowed; clients encode it when the provider forbids them)."""
    description: str
    """What the tool does, for the model."""
    parameters: dict[str, Any]
    """JSON Schema of the arguments."""


@dataclass(slots=True, frozen=True, kw_only=True)
class ModelSettings:
    """Per-request settings; `None` leaves the provider default."""

    temperature: float | None = None
    """Sampling temperature."""
    max_output_tokens: int | None = None
    """Cap on output tokens of one round."""
    parallel_tool_calls: bool | None = None
    """Whether the model may ask for several tool calls in one round."""


@dataclass(slots=True, frozen=True)
class ModelUsage:
    """Token usage of one model round."""

    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


@dataclass(slots=True, frozen=True)
class ModelResponse:
    """What one model round returned."""

    text: str = ""
    """Assistant text (empty when it only calls tools)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls requested this round."""
    usage: ModelUsage = field(default_factory=ModelUsage)
    """Tokens this round used."""
    model_name: str | None = None
    """Model the provider says answered (`gen_ai.response.model`)."""
    finish_reason: str = "stop"
    """`stop`, `tool_calls`, `length`, ..."""


class ModelError(JanuxError):
    """A model round failed (provider error, bad response, unreachable endpoint)."""

    def __init__(self, message: str, *, error_type: str = "model_error", status_code: int | None = None):
        super().__init__(message)
        self.error_type = error_type
        """Short machine-readable class of the failure (recorded as `error.type`)."""
        self.status_code = status_code
        """HTTP status from the provider, when there was one."""


@runtime_checkable
class Model(Protocol):
    """A chat model: one async request per round."""

    @property
    def model_name(self) -> str:
        """Model name requested (`gen_ai.request.model`)."""
        ...

    @property
    def provider_name(self) -> str:
        """Provider (`gen_ai.provider.name`): `openai`, `janux.scripted`, ..."""
        ...

    async def request(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        """Run one round. Raises `ModelError` on failure."""
        ...
