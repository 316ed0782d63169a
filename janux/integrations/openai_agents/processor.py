"""`JanuxProcessor`: an OpenAI Agents SDK `TracingProcessor` that writes the Janux trace contract.

The SDK calls its processors synchronously from the agent's own code path, and its interface asks
that they never block or raise. So every callback here only maps (no I/O: exporting is the
OpenTelemetry SDK's business, behind whatever span processor the application installed), and
catches anything that goes wrong, logging it once per callback: a tracing failure loses some
trace, never the run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from agents.tracing import TracingProcessor
from opentelemetry import trace

from janux.integrations.openai_agents.accounting import Pricing
from janux.integrations.openai_agents.mapper import SpanMapper
from janux.runtime.definitions import Cost
from janux.tracing.instrument import ContentCapture, RunInstrumentation, resolve_capture
from janux.tracing.instrument.run import tracer_for

_log = logging.getLogger("janux.integrations")

DEFAULT_PROVIDER = "openai"
"""`gen_ai.provider.name` of the rounds unless told otherwise (the SDK's own models are OpenAI's)."""


class JanuxProcessor(TracingProcessor):
    """Turns the SDK's traces into OpenTelemetry spans that follow the Janux trace contract.

    Register it with `agents.add_trace_processor(JanuxProcessor(...))` (or `instrument(...)`);
    the spans go to `tracer_provider` (default: the global one, e.g. as set by
    `janux.tracing.sdk.configure_telemetry`).
    """

    def __init__(
        self,
        *,
        costs: Mapping[str, Cost] | None = None,
        tracer_provider: trace.TracerProvider | None = None,
        capture: ContentCapture | bool | None = None,
        estimate_prices: bool = True,
        provider: str = DEFAULT_PROVIDER,
        pricing: Pricing | None = None,
    ) -> None:
        """
        - `costs`: Janux `Cost` (USD per million tokens) by agent name; rounds of those agents get
          an exact `janux.round.cost`.
        - `estimate_prices`: for agents without a cost, record a genai-prices estimate in the
          `*.cost_estimate` attributes (never as a cost; the tokens stay unpriced).
        - `capture`: content capture (prompts, outputs, tool arguments); default from
          `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`. The SDK must also trace sensitive
          data (`RunConfig.trace_include_sensitive_data`, on by default) for content to exist.
        - `provider`: `gen_ai.provider.name` of the rounds.
        - `pricing`: prices the rounds instead of `costs` and `estimate_prices` (a replay prices each
          round as its recording did).
        """
        self._reported: set[str] = set()
        obs = RunInstrumentation(tracer_for(tracer_provider), None, resolve_capture(capture))
        if pricing is None:
            pricing = Pricing(costs, estimate=estimate_prices, provider=provider)
        self._mapper = SpanMapper(obs, pricing, provider)

    def on_trace_start(self, trace: Any) -> None:
        """Remember the trace (its group id becomes the conversation id)."""
        try:
            self._mapper.trace_started(trace.trace_id, getattr(trace, "group_id", None))
        except Exception as exc:
            self._report("on_trace_start", exc)

    def on_trace_end(self, trace: Any) -> None:
        """Close what the trace left open."""
        try:
            self._mapper.trace_ended(trace.trace_id)
        except Exception as exc:
            self._report("on_trace_end", exc)

    def on_span_start(self, span: Any) -> None:
        """Map an SDK span start."""
        try:
            self._mapper.span_started(span)
        except Exception as exc:
            self._report("on_span_start", exc)

    def on_span_end(self, span: Any) -> None:
        """Map an SDK span end."""
        try:
            self._mapper.span_ended(span)
        except Exception as exc:
            self._report("on_span_end", exc)

    def _report(self, where: str, exc: BaseException) -> None:
        """Log a mapping failure once per callback; the agent run goes on."""
        if where not in self._reported:
            self._reported.add(where)
            _log.warning("janux tracing failed in %s (logged once; the run continues): %r", where, exc)

    def shutdown(self) -> None:
        """Nothing to release: the application owns the OpenTelemetry providers and their exporters."""

    def force_flush(self) -> None:
        """Nothing is queued here: spans are handed to the OpenTelemetry SDK as they end."""
