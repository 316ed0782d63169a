"""Models for testing agents offline: `ScriptedModel` (queued steps) and `FunctionModel` (a callable).

    model = ScriptedModel([
        call_tools(delegate("researcher", "find the refund policy"), input_tokens=120, output_tokens=18),
        reply("Refunds take 5 days.", input_tokens=200, output_tokens=12),
    ])
    ...
    model.assert_complete()

A step is a text reply, tool calls, or an error, with its own usage and delay. Steps are consumed
in order; a step with a `when` predicate is only taken by a request whose messages match it (so a
model shared by concurrent subagents can route deterministically). A request with no step left
raises `UnexpectedModelCall`. Inside a delegation the runtime turns that error into a failed
attempt the parent's model reads, so `assert_complete()` raises it again (before checking for
`UnconsumedSteps`): a test that ends with `assert_complete()` cannot miss a script deviation. Every
request is recorded in `calls`, and `peak_concurrency` tells how many requests were in flight at once.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from janux.errors import JanuxError
from janux.runtime.model import (
    Message,
    ModelError,
    ModelResponse,
    ModelSettings,
    ModelUsage,
    ToolCall,
    ToolSpec,
)
from janux.runtime.tool_names import delegate_tool_name, handoff_tool_name

MessagesPredicate = Callable[[list[Message]], bool]
"""Decides whether a step answers a request, from the request's messages."""


class ScriptError(JanuxError, AssertionError):
    """A scripted model was used differently than its script says."""


class UnexpectedModelCall(ScriptError):
    """A request arrived and no remaining step matched it."""


class UnconsumedSteps(ScriptError):
    """`assert_complete()` found steps that were never requested."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptStep:
    """One scripted model round."""

    text: str = ""
    """Assistant text."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls to request (a call with an empty id gets `call_<n>`)."""
    usage: ModelUsage = field(default_factory=ModelUsage)
    """Usage reported for the round."""
    delay: float = 0.0
    """Seconds to wait before answering (times the model's `latency_scale`)."""
    error: tuple[str, str, int | None] | None = None
    """(message, error_type, status_code) of a `ModelError` to raise instead of answering."""
    when: MessagesPredicate | None = None
    """Only a request whose messages satisfy this takes the step."""
    model_name: str | None = None
    """Response model name (default: the model's name)."""


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One request a test model received."""

    messages: list[Message]
    """A copy of the messages sent."""
    tools: list[ToolSpec]
    """Tool surface shown."""
    settings: ModelSettings
    """Request settings."""

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools shown."""
        return [tool.name for tool in self.tools]

    @property
    def system(self) -> str:
        """The system prompt ("" when none)."""
        return next((m.content for m in self.messages if m.role == "system"), "")

    @property
    def last_user(self) -> str:
        """Text of the last user message ("" when none)."""
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, *, id: str = "") -> ToolCall:
    """A tool call for a step; dict arguments are JSON-encoded, a string is sent as is (even malformed)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ToolCall(id=id, name=name, arguments=raw)


def delegate(agent_name: str, task: str, *, context: str | None = None, id: str = "") -> ToolCall:
    """A call of the default delegate tool of `agent_name`."""
    arguments: dict[str, Any] = {"task": task}
    if context is not None:
        arguments["context"] = context
    return tool_call(delegate_tool_name(agent_name), arguments, id=id)


def transfer(agent_name: str, reason: str = "", *, id: str = "") -> ToolCall:
    """A call of the handoff tool of `agent_name`."""
    return tool_call(handoff_tool_name(agent_name), {"reason": reason} if reason else {}, id=id)


def reply(
    text: str,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    delay: float = 0.0,
    when: MessagesPredicate | None = None,
) -> ScriptStep:
    """A step answering with text (a final answer)."""
    return ScriptStep(text=text, usage=ModelUsage(input_tokens, output_tokens), delay=delay, when=when)


def call_tools(
    *calls: ToolCall,
    text: str = "",
    input_tokens: int = 0,
    output_tokens: int = 0,
    delay: float = 0.0,
    when: MessagesPredicate | None = None,
) -> ScriptStep:
    """A step requesting tool calls (several = parallel tool calls of one round)."""
    if not calls:
        raise ValueError("calls: a call_tools step needs at least one tool call")
    return ScriptStep(
        text=text, tool_calls=calls, usage=ModelUsage(input_tokens, output_tokens), delay=delay, when=when
    )


def fail(
    message: str = "scripted model failure",
    *,
    error_type: str = "model_error",
    status_code: int | None = None,
    delay: float = 0.0,
    when: MessagesPredicate | None = None,
) -> ScriptStep:
    """A step raising `ModelError`."""
    return ScriptStep(error=(message, error_type, status_code), delay=delay, when=when)


def user_contains(fragment: str) -> MessagesPredicate:
    """`when` predicate: the last user message contains `fragment`."""

    def check(messages: list[Message]) -> bool:
        return any(fragment in m.content for m in reversed(messages) if m.role == "user")

    return check


def system_contains(fragment: str) -> MessagesPredicate:
    """`when` predicate: the system prompt contains `fragment` (tells agents apart on a shared model)."""

    def check(messages: list[Message]) -> bool:
        return any(fragment in m.content for m in messages if m.role == "system")

    return check


class _RecordingModel:
    """What both test models share: names, and a thread-safe record of requests and concurrency."""

    def __init__(self, model_name: str, provider_name: str) -> None:
        self._model_name = model_name
        self._provider_name = provider_name
        self._lock = threading.Lock()
        self._calls: list[RecordedCall] = []
        self._in_flight = 0
        self._peak = 0

    @property
    def model_name(self) -> str:
        """Model name requested (`gen_ai.request.model`)."""
        return self._model_name

    @property
    def provider_name(self) -> str:
        """Provider name (`gen_ai.provider.name`)."""
        return self._provider_name

    @property
    def calls(self) -> list[RecordedCall]:
        """Every request received, in arrival order."""
        return self._calls

    @property
    def peak_concurrency(self) -> int:
        """Most requests in flight at the same time."""
        return self._peak

    def _enter(self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> None:
        with self._lock:
            self._calls.append(RecordedCall(list(messages), list(tools), settings))
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


class ScriptedModel(_RecordingModel):
    """A model that answers from a queue of steps; safe to share between concurrent subagents."""

    def __init__(
        self,
        steps: Iterable[ScriptStep | str] = (),
        *,
        model_name: str = "scripted-model",
        provider_name: str = "janux.scripted",
        latency_scale: float = 1.0,
    ) -> None:
        super().__init__(model_name, provider_name)
        self._steps: list[ScriptStep] = [reply(s) if isinstance(s, str) else s for s in steps]
        self.latency_scale = latency_scale
        """Multiplies every step's delay (0 = no waiting at all)."""
        self._ids = itertools.count(1)
        self._unexpected: list[str] = []

    @property
    def remaining(self) -> int:
        """Steps not consumed yet."""
        with self._lock:
            return len(self._steps)

    def add(self, *steps: ScriptStep | str) -> None:
        """Append steps to the script."""
        with self._lock:
            self._steps.extend(reply(s) if isinstance(s, str) else s for s in steps)

    def assert_complete(self) -> None:
        """Raise `UnexpectedModelCall` when a request matched no step (even if the run swallowed
        the error), else `UnconsumedSteps` when steps are left."""
        with self._lock:
            unexpected = list(self._unexpected)
        if unexpected:
            raise UnexpectedModelCall(
                f"{len(unexpected)} request(s) matched no scripted step: " + "; ".join(unexpected)
            )
        left = self.remaining
        if left:
            raise UnconsumedSteps(f"{left} scripted step(s) were never requested")

    def _take(self, messages: list[Message]) -> ScriptStep:
        last = next((m.content for m in reversed(messages) if m.role == "user"), "")
        with self._lock:
            for index, step in enumerate(self._steps):
                if step.when is None or step.when(messages):
                    return self._steps.pop(index)
            problem = (
                f"request #{len(self._calls)} matched no scripted step ({len(self._steps)} left); "
                f"last user message: {last[:80]!r}"
            )
            self._unexpected.append(problem)
        raise UnexpectedModelCall(problem)

    async def request(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        """Answer with the next matching step (after its delay)."""
        self._enter(messages, tools, settings)
        try:
            step = self._take(messages)
            if step.delay > 0 and self.latency_scale > 0:
                await asyncio.sleep(step.delay * self.latency_scale)
            if step.error is not None:
                message, error_type, status = step.error
                raise ModelError(message, error_type=error_type, status_code=status)
            return self._response(step)
        finally:
            self._leave()

    def _response(self, step: ScriptStep) -> ModelResponse:
        calls = tuple(
            call if call.id else ToolCall(f"call_{next(self._ids)}", call.name, call.arguments)
            for call in step.tool_calls
        )
        return ModelResponse(
            text=step.text,
            tool_calls=calls,
            usage=step.usage,
            model_name=step.model_name or self._model_name,
            finish_reason="tool_calls" if calls else "stop",
        )


ModelFunction = Callable[
    [list[Message], list[ToolSpec], ModelSettings], "ModelResponse | str | Awaitable[ModelResponse | str]"
]
"""What a `FunctionModel` calls: (messages, tools, settings) -> response or text (sync or async)."""


class FunctionModel(_RecordingModel):
    """A model whose every round is answered by a Python function."""

    def __init__(
        self,
        function: ModelFunction,
        *,
        model_name: str = "function-model",
        provider_name: str = "janux.function",
    ) -> None:
        super().__init__(model_name, provider_name)
        self.function = function
        """The answering function."""

    async def request(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        """Call the function; a string result is a final text answer."""
        self._enter(messages, tools, settings)
        try:
            result = self.function(list(messages), list(tools), settings)
            if inspect.isawaitable(result):
                result = await result
        finally:
            self._leave()
        if isinstance(result, str):
            return ModelResponse(text=result, model_name=self._model_name)
        return result
