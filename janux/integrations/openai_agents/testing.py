"""A scripted model for offline runs of the OpenAI Agents SDK that reports rounds like a real one.

The SDK ships `agents.testing.ScriptedModel` (scripted steps, recorded calls). Its trace span names
no model and carries no usage; the SDK's OpenAI models record both. `ScriptedTracedModel` is the
SDK's scripted model recording each round the way the OpenAI models do:

- `api="responses"` (the SDK's default model): a response span with `usage`, and with the
  response (model name, output) when the run traces sensitive data;
- `api="chat_completions"`: a generation span with the model name, its settings and `usage`
  (and input/output with sensitive data).

So examples, tests and benchmarks exercise the same span data a run against OpenAI produces,
without a network or an API key. Streamed runs are traced the same way.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable
from typing import Any, Literal

from agents.testing import ScriptedModel
from agents.tracing import SpanError, generation_span, response_span
from agents.usage import Usage, model_usage_to_span_usage
from openai.types.responses import Response

Api = Literal["responses", "chat_completions"]
"""Which of the SDK's OpenAI models to imitate."""

REDACTED = "Error details are redacted."
"""What the SDK's models record instead of an error's text when sensitive data is off."""


class ScriptedTracedModel(ScriptedModel):
    """`agents.testing.ScriptedModel` that traces each round like the SDK's OpenAI models."""

    def __init__(
        self, steps: Iterable[Any] = (), *, model: str, api: Api = "responses", default_usage: Any = None
    ) -> None:
        super().__init__(steps, emit_traces=False, default_usage=default_usage)
        self.model = model
        """The model name the rounds report."""
        self.api: Api = api
        """`responses` or `chat_completions`."""

    def _span(self, model_settings: Any, tracing: Any) -> Any:
        """The span the imitated model opens for one round."""
        if self.api == "responses":
            return response_span(disabled=tracing.is_disabled())
        traceable = getattr(model_settings, "to_traceable_dict", None)
        config = traceable() if callable(traceable) else {}
        return generation_span(model=self.model, model_config=config, disabled=tracing.is_disabled())

    async def get_response(  # type: ignore[override]  # same parameters as Model.get_response
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> Any:
        """Answer the next scripted step inside a response (or generation) span carrying its usage."""
        with self._span(model_settings, tracing) as span:
            try:
                result = await super().get_response(
                    system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
                    previous_response_id=previous_response_id, conversation_id=conversation_id,
                    prompt=prompt,
                )  # fmt: skip
            except Exception as exc:
                _record_error(span, exc, tracing)
                raise
            self._record(span, input, result.usage, list(result.output), tracing, result.response_id)
        return result

    async def stream_response(  # type: ignore[override]  # same parameters as Model.stream_response
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> AsyncIterator[Any]:
        """Stream the next scripted step inside a span that gets the usage of its completed response."""
        with self._span(model_settings, tracing) as span:
            final: Any = None
            try:
                async for event in super().stream_response(
                    system_instructions, input, model_settings, tools, output_schema, handoffs, tracing,
                    previous_response_id=previous_response_id, conversation_id=conversation_id,
                    prompt=prompt,
                ):  # fmt: skip
                    if getattr(event, "type", None) == "response.completed":
                        final = getattr(event, "response", None)
                    yield event
            except Exception as exc:
                _record_error(span, exc, tracing)
                raise
            if final is not None:
                usage = _usage(getattr(final, "usage", None))
                self._record(span, input, usage, list(final.output), tracing, final.id)

    def _record(
        self, span: Any, input: Any, usage: Usage, output: list[Any], tracing: Any, response_id: str | None
    ) -> None:
        """Usage always; input, output and (Responses API) the response only with sensitive data on."""
        data = span.span_data
        data.usage = model_usage_to_span_usage(usage)
        if not tracing.include_data():
            return
        if self.api == "responses":
            data.input = input
            data.response = Response.model_construct(
                id=response_id or "resp-scripted",
                object="response",
                created_at=time.time(),
                model=self.model,
                output=output,
                status="completed",
            )
        else:
            data.input = input if isinstance(input, list) else [{"role": "user", "content": input}]
            data.output = [{"model": self.model, "output": [_dump(item) for item in output]}]


def _record_error(span: Any, exc: Exception, tracing: Any) -> None:
    detail = str(exc) if tracing.include_data() else REDACTED
    span.set_error(SpanError(message="Error getting response", data={"error": detail}))


def _usage(response_usage: Any) -> Usage:
    """The SDK's usage of a streamed response's final usage (zero when it reported none)."""
    if response_usage is None:
        return Usage()
    tokens_in = int(getattr(response_usage, "input_tokens", 0) or 0)
    tokens_out = int(getattr(response_usage, "output_tokens", 0) or 0)
    total = tokens_in + tokens_out
    return Usage(requests=1, input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=total)


def _dump(item: Any) -> Any:
    dump = getattr(item, "model_dump", None)
    return dump() if callable(dump) else item
