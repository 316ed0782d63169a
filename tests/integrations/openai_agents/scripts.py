"""Scripted OpenAI Agents SDK runs for the integration tests: models, steps, prices and the SDK's own account.

Nothing here touches the network: every agent runs on a scripted model, either the SDK's own
`agents.testing.ScriptedModel` (its round spans carry no usage: the processor takes it from the
SDK's turn spans) or `ScriptedTracedModel` (rounds reported like the SDK's OpenAI models, on a
response or generation span).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any, Literal

from agents import Agent, RunHooks, Runner
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.run_context import RunContextWrapper
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage

from janux.integrations.openai_agents.testing import ScriptedTracedModel
from janux.runtime import Cost

ModelKind = Literal["sdk", "responses", "chat_completions"]
"""`sdk`: agents.testing.ScriptedModel(emit_traces=True); the others: ScriptedTracedModel(api=...)."""

MODEL_KINDS: tuple[ModelKind, ...] = ("sdk", "responses", "chat_completions")
"""Every way a model can report its rounds."""

COSTS = {
    "triage": Cost(input=0.15, output=0.60),
    "researcher": Cost(input=2.50, output=10.00),
    "writer": Cost(input=1.00, output=4.00),
    "billing": Cost(input=0.50, output=2.00),
    "refunds": Cost(input=3.00, output=12.00),
}
"""USD per million tokens, by agent; agents missing here are unpriced."""

MODEL_NAME = "gpt-4o-mini"
"""What ScriptedTracedModel rounds report (genai-prices knows it)."""


def usage(input_tokens: int, output_tokens: int) -> Usage:
    """One round's usage."""
    return Usage(
        requests=1,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    )


def reply(text: str, input_tokens: int, output_tokens: int) -> ModelStep:
    """A round that answers."""
    return ModelStep(output=[assistant_message(text)], usage=usage(input_tokens, output_tokens))


def calls(*tools: tuple[str, dict[str, Any]], input_tokens: int, output_tokens: int) -> ModelStep:
    """A round that calls tools (in parallel when several): (tool name, arguments)."""
    items = [
        function_call(name, json.dumps(arguments), call_id=f"call-{next(_CALL_IDS)}")
        for name, arguments in tools
    ]
    return ModelStep(output=items, usage=usage(input_tokens, output_tokens))


_CALL_IDS = itertools.count(1)
"""The SDK refuses a call id used before in the same run: every scripted call gets a new one."""


def failing(error: Exception) -> ModelStep:
    """A round whose model call raises."""
    return ModelStep.raise_error(error)


def model(kind: ModelKind, *steps: ModelStep) -> Model:
    """A scripted model of `kind` with `steps`."""
    if kind == "sdk":
        return ScriptedModel(steps, emit_traces=True)
    return ScriptedTracedModel(steps, model=MODEL_NAME, api=kind)


def price(agent: str, input_tokens: int, output_tokens: int) -> float:
    """USD of one round of `agent` at its COSTS entry."""
    cost = COSTS[agent]
    return (input_tokens * cost.input + output_tokens * cost.output) / 1e6


class _ContextSpy(RunHooks[Any]):
    """Keeps the run's context wrapper, whose usage is the SDK's own account of the run."""

    def __init__(self) -> None:
        self.context: RunContextWrapper[Any] | None = None

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        self.context = context


@dataclass
class Outcome:
    """A finished run: its result or its exception, and the SDK's usage of the whole run."""

    result: Any
    """The RunResult; None when the run raised."""
    error: BaseException | None
    """What the run raised."""
    usage: Usage
    """`context_wrapper.usage`: every round of the run, delegations included."""


async def run(agent: Agent[Any], text: str, **kwargs: Any) -> Outcome:
    """Run `agent` like an application does; a raised exception is returned, not propagated."""
    spy = _ContextSpy()
    try:
        result = await Runner.run(agent, text, hooks=spy, **kwargs)
    except Exception as exc:
        run_data = getattr(exc, "run_data", None)
        if run_data is not None:
            return Outcome(None, exc, run_data.context_wrapper.usage)
        return Outcome(None, exc, spy.context.usage if spy.context is not None else Usage())
    return Outcome(result, None, result.context_wrapper.usage)
