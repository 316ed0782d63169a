"""Generate the Semantic Kernel fixture: a handoff orchestration (`HandoffOrchestration` on the
`InProcessRuntime`) traced by the kernel's own OpenTelemetry spans (its model diagnostics on).

Run offline: `.venv/bin/python -m tests.support.foreign.generate_semantic_kernel [OUT_DIR]`; the
library runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. Each agent's chat completion
service answers from a script (streamed, as the orchestration asks), reporting usage as the kernel's
connectors do (`CompletionUsage` in the message metadata); the truth is written from the scenario.

Scenario `handoff`: triage calls its `transfer_to_billing` function (the orchestration's handoff
plugin) and billing answers, then completes the task. The runtime delivers each message in a trace
of its own, joined to the sender's span by a span link: one run, several traces.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "semantic_kernel"
LIBRARY = "semantic-kernel 1.45.0 (its own spans, model diagnostics on)"
REQUIREMENTS = ("semantic-kernel==1.45.0", "opentelemetry-sdk==1.45.2")
"""The pinned versions the fixture was generated with."""

Reply = tuple[str | tuple[str, dict[str, Any]], int, int]
"""A scripted answer: a text or one function call (name, arguments), input and output tokens."""


def _service(script: list[Reply], truth: Truth, service_id: str) -> Any:
    """A chat completion service answering `script` in order, traced by the kernel's decorators."""
    from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
    from semantic_kernel.connectors.ai.completion_usage import CompletionUsage
    from semantic_kernel.connectors.ai.function_call_choice_configuration import (
        FunctionCallChoiceConfiguration,
    )
    from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
    from semantic_kernel.contents import (
        ChatMessageContent,
        FunctionCallContent,
        StreamingChatMessageContent,
        StreamingTextContent,
        TextContent,
    )
    from semantic_kernel.contents.utils.author_role import AuthorRole
    from semantic_kernel.utils.telemetry.model_diagnostics.decorators import (
        trace_chat_completion,
        trace_streaming_chat_completion,
    )

    queue = list(script)

    def _next(function_invoke_attempt: int) -> tuple[list[Any], dict[str, Any]]:
        said, tokens_in, tokens_out = queue.pop(0)
        truth.usage(tokens_in, tokens_out)
        metadata = {"usage": CompletionUsage(prompt_tokens=tokens_in, completion_tokens=tokens_out)}
        if isinstance(said, str):
            return [said], metadata
        name, arguments = said
        plugin, function = name.split("-", 1)
        call = FunctionCallContent(id=f"call_{len(queue)}", plugin_name=plugin, function_name=function,
                                   arguments=arguments, index=0)  # fmt: skip
        return [call], metadata

    class Scripted(ChatCompletionClientBase):  # type: ignore[misc]
        SUPPORTS_FUNCTION_CALLING = True

        def service_url(self) -> str | None:
            return None

        def _update_function_choice_settings_callback(self) -> Any:
            def update(configuration: FunctionCallChoiceConfiguration, settings: Any, kind: Any) -> None:
                return None

            return update

        def _reset_function_choice_settings(self, settings: PromptExecutionSettings) -> None:
            return None

        @trace_chat_completion("scripted")
        async def _inner_get_chat_message_contents(self, chat_history: Any, settings: Any) -> Any:
            items, metadata = _next(0)
            contents = [TextContent(text=i) if isinstance(i, str) else i for i in items]
            return [ChatMessageContent(role=AuthorRole.ASSISTANT, items=contents, metadata=metadata,
                                       ai_model_id=self.ai_model_id)]  # fmt: skip

        @trace_streaming_chat_completion("scripted")
        async def _inner_get_streaming_chat_message_contents(
            self, chat_history: Any, settings: Any, function_invoke_attempt: int = 0
        ) -> Any:
            items, metadata = _next(function_invoke_attempt)
            contents = [StreamingTextContent(choice_index=0, text=i) if isinstance(i, str) else i
                        for i in items]  # fmt: skip
            yield [StreamingChatMessageContent(choice_index=0, role=AuthorRole.ASSISTANT, items=contents,
                                               metadata=metadata, ai_model_id=self.ai_model_id,
                                               function_invoke_attempt=function_invoke_attempt)]  # fmt: skip

    return Scripted(ai_model_id="gpt-4o-mini", service_id=service_id)


async def _handoff(truth: Truth) -> None:
    from semantic_kernel.agents import ChatCompletionAgent, HandoffOrchestration, OrchestrationHandoffs
    from semantic_kernel.agents.runtime import InProcessRuntime

    triage = ChatCompletionAgent(name="triage", instructions="Route.", service=_service(
        [(("Handoff-transfer_to_billing", {}), 300, 12)], truth, "triage"))  # fmt: skip
    billing = ChatCompletionAgent(name="billing", instructions="Billing.", service=_service(
        [("Your invoice is paid.", 420, 11)], truth, "billing"))  # fmt: skip
    handoffs = OrchestrationHandoffs().add(source_agent="triage", target_agent="billing",
                                           description="Billing questions")  # fmt: skip
    orchestration = HandoffOrchestration(members=[triage, billing], handoffs=handoffs)
    truth.agents, truth.root_agent = ["triage", "billing"], "triage"
    truth.edge("triage", "billing", kind="transfer")
    runtime = InProcessRuntime()
    runtime.start()
    try:
        result = await orchestration.invoke(task="Is my invoice paid?", runtime=runtime)
        await result.get(timeout=30)
    finally:
        await runtime.stop_when_idle()


def inner(out: Path) -> None:
    """Run the scenario (inside the virtualenv) and write the fixture."""
    import os

    os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"] = "true"
    from opentelemetry import trace

    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=29_08, service="semantic-kernel-app")
    trace.set_tracer_provider(tracer_provider)
    writer = Writer(NAME)
    truth = Truth(scenario="handoff", library=LIBRARY)
    try:
        asyncio.run(_handoff(truth))
    except Exception:
        truth.raised = True
        raise
    writer.take_run(exporter, truth)
    writer.write(out)


if __name__ == "__main__":
    venvs.main(NAME, "tests.support.foreign.generate_semantic_kernel", REQUIREMENTS, inner)
