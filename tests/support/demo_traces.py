"""The demo scenarios traced in memory, once per test session: the suite's one "demo traces" source."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cache

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.demo.scenarios import run_scenarios
from janux.tracing.records import SpanRecord
from janux.tracing.sdk.convert import span_records_from_readable


@dataclass(frozen=True)
class DemoTraces:
    """Every span of every demo scenario, and each scenario's trace id."""

    spans: tuple[SpanRecord, ...]
    """Span records as the SDK exported them (typed attribute values)."""
    trace_ids: dict[str, str]
    """Scenario name -> hex trace id."""


@cache
def demo_traces(capture_content: bool = False) -> DemoTraces:
    """Run every demo scenario with an SDK `TracerProvider` into memory (cached: they are deterministic);
    `capture_content=True` records content and the agents' definitions, as `janux replay` needs."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    outcomes = asyncio.run(
        run_scenarios(tracer_provider=provider, latency_scale=0, capture_content=capture_content)
    )
    provider.shutdown()
    failed = [(o.name, o.error) for o in outcomes if o.error or not o.trace_id]
    assert not failed, failed
    spans = tuple(span_records_from_readable(exporter.get_finished_spans()))
    return DemoTraces(spans=spans, trace_ids={o.name: str(o.trace_id) for o in outcomes})
