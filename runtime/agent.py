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

from janux.runtime._loop.turn import run_turn
from janux.runtime.agent_core import AgentCore
from janux.runtime.agent_spec import AgentSpec
from janux.runtime.definitions import (
    Cost,
    FallbackHandler,
    Guardrail,
    Handoff,
    HandoffListener,
    HandoffPolicy,
    RateLimit,
    Subagent,
    ToolFilter,
)
from janux.runtime.model import Model, ModelSettings
from janux.runtime.result import RunResult
from janux.runtime.threads import ThreadStore
from janux.runtime.tools import Tool
from janux.tracing.instrument.content import ContentCapture
from janux.tracing.instrument.run import instrumentation_for_run


class Agent(AgentCore):
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
        fallback_handler: FallbackHandler | None = None,
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
            fallback_handler=fallback_handler,
            listeners=list(listeners),
            settings=settings,
        )
        super().__init__(spec, thread_store)

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
