"""`instrument()`: the one line that sends every OpenAI Agents SDK run to Janux."""

from __future__ import annotations

from collections.abc import Mapping

from agents import add_trace_processor, set_trace_processors
from opentelemetry import trace

from janux.integrations.openai_agents.processor import DEFAULT_PROVIDER, JanuxProcessor
from janux.runtime.definitions import Cost
from janux.tracing.instrument import ContentCapture


def instrument(
    *,
    costs: Mapping[str, Cost] | None = None,
    tracer_provider: trace.TracerProvider | None = None,
    capture: ContentCapture | bool | None = None,
    estimate_prices: bool = True,
    provider: str = DEFAULT_PROVIDER,
    exclusive: bool = False,
) -> JanuxProcessor:
    """Register a `JanuxProcessor` with the SDK and return it.

    With `exclusive=True` it replaces the SDK's processors (among them the default one that uploads
    traces to OpenAI), so nothing leaves the machine except through your OpenTelemetry exporter.
    The other arguments are `JanuxProcessor`'s.
    """
    processor = JanuxProcessor(
        costs=costs,
        tracer_provider=tracer_provider,
        capture=capture,
        estimate_prices=estimate_prices,
        provider=provider,
    )
    if exclusive:
        set_trace_processors([processor])
    else:
        add_trace_processor(processor)
    return processor
