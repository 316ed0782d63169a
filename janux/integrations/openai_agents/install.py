"""`instrument()`: the one line that sends every OpenAI Agents SDK run to Janux; `uninstrument()` stops it.

The SDK can add trace processors but not remove one, so `instrument()` registers a forwarding
processor pointed at its `JanuxProcessor`. Calling `instrument()` again returns the processor already
in place (nothing is registered twice, so no run is written twice), and registers it again when a
later `agents.set_trace_processors([...])` has removed it; `uninstrument()` stops new
traces from reaching it, while traces it already started go on to their end there, so nothing it
opened is left open.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from agents import add_trace_processor, set_trace_processors
from agents.tracing import TracingProcessor, get_trace_provider
from opentelemetry import trace

from janux.integrations.openai_agents.processor import DEFAULT_PROVIDER, JanuxProcessor
from janux.runtime.definitions import Cost
from janux.tracing.instrument import ContentCapture

_log = logging.getLogger("janux.integrations")


class Forwarder(TracingProcessor):
    """The processor `instrument()` registers with the SDK: hands each trace to the `JanuxProcessor`
    that was current when the trace started (none after `uninstrument()`)."""

    def __init__(self, target: JanuxProcessor) -> None:
        self.target: JanuxProcessor | None = target
        """Where new traces go (`None` once uninstrumented)."""
        self._traces: dict[str, JanuxProcessor] = {}

    def on_trace_start(self, trace: Any) -> None:
        """Route the trace to the current processor, if any."""
        target = self.target
        if target is not None:
            self._traces[trace.trace_id] = target
            target.on_trace_start(trace)

    def on_trace_end(self, trace: Any) -> None:
        """Hand the end to the trace's processor, then forget the trace."""
        target = self._traces.pop(trace.trace_id, None)
        if target is not None:
            target.on_trace_end(trace)

    def on_span_start(self, span: Any) -> None:
        """Hand the span to its trace's processor."""
        target = self._traces.get(span.trace_id)
        if target is not None:
            target.on_span_start(span)

    def on_span_end(self, span: Any) -> None:
        """Hand the span's end to its trace's processor."""
        target = self._traces.get(span.trace_id)
        if target is not None:
            target.on_span_end(span)

    def shutdown(self) -> None:
        """Nothing to release (see `JanuxProcessor.shutdown`)."""

    def force_flush(self) -> None:
        """Nothing is queued here."""


_ACTIVE: Forwarder | None = None
"""The forwarder of the current instrumentation (`None` when not instrumented)."""
_SETTINGS: tuple[Any, ...] | None = None
_LOCK = threading.Lock()


def _still_registered(processor: TracingProcessor) -> bool:
    """Whether the SDK still sends traces to `processor` (`set_trace_processors` may have replaced it).

    The SDK offers no public list of its processors, so this reads its default provider's; where that
    cannot be read (another provider or SDK version) the processor is taken as registered, since
    registering it twice would write every run twice."""
    multi = getattr(get_trace_provider(), "_multi_processor", None)
    registered = getattr(multi, "_processors", None)
    if not isinstance(registered, tuple | list):
        return True
    return any(each is processor for each in registered)


def instrument(
    *,
    costs: Mapping[str, Cost] | None = None,
    tracer_provider: trace.TracerProvider | None = None,
    capture: ContentCapture | bool | None = None,
    estimate_prices: bool = True,
    provider: str = DEFAULT_PROVIDER,
    exclusive: bool = False,
) -> JanuxProcessor:
    """Send every SDK run to a `JanuxProcessor` and return it; idempotent.

    With `exclusive=True` it replaces the SDK's processors (among them the default one that uploads
    traces to OpenAI), so nothing leaves the machine except through your OpenTelemetry exporter.
    The other arguments are `JanuxProcessor`'s. While instrumented, a further call returns the
    processor in place and registers nothing (with other arguments it says so in a log: call
    `uninstrument()` first), except that it registers the processor again when a later
    `agents.set_trace_processors([...])` has removed it.
    """
    global _ACTIVE, _SETTINGS
    settings = (dict(costs or {}), tracer_provider, capture, estimate_prices, provider)
    with _LOCK:
        active = _ACTIVE
        if active is not None and active.target is not None:
            if exclusive:
                set_trace_processors([active])
            elif not _still_registered(active):
                _log.info("instrument(): Janux's trace processor had been replaced; registering it again")
                add_trace_processor(active)
            if settings != _SETTINGS:
                _log.warning("instrument() was already called: keeping that processor (uninstrument() first)")
            return active.target
        processor = JanuxProcessor(
            costs=costs,
            tracer_provider=tracer_provider,
            capture=capture,
            estimate_prices=estimate_prices,
            provider=provider,
        )
        active = Forwarder(processor)
        if exclusive:
            set_trace_processors([active])
        else:
            add_trace_processor(active)
        _ACTIVE, _SETTINGS = active, settings
        return processor


def uninstrument() -> None:
    """Stop sending new SDK runs to Janux (runs already started are traced to their end)."""
    global _ACTIVE, _SETTINGS
    with _LOCK:
        if _ACTIVE is not None:
            _ACTIVE.target = None  # it stays registered (the SDK cannot remove it) but takes no new trace
        _ACTIVE, _SETTINGS = None, None


def forwarder() -> Forwarder | None:
    """The processor the current instrumentation registered with the SDK (`None` when not instrumented)."""
    return _ACTIVE
