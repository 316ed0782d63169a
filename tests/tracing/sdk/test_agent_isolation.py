"""Failure isolation on real agent runs: every built-in scenario, with a broken exporter behind it.

The runtime's scenarios (scripted models, real agent loop, delegation, retries, timeouts, budget
cuts, transfers) run once against an in-memory exporter (the reference), then with telemetry going
to a refused port, a raising exporter and a 10 s hanging exporter. The results must be identical,
the run must not wait for the exporter, and every span must be counted as dropped.

The spans a run ends are counted beside the broken exporter (an in-memory processor on the same
provider), not taken from the reference run: at latency scale 0 the timed-out attempt is cut at 5 ms,
and on a loaded machine the cut can land before its `chat` span starts, so the count may differ.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.demo.scenarios import SCENARIO_NAMES, ScenarioOutcome, run_scenarios
from janux.tracing.sdk.telemetry import Telemetry, configure_telemetry
from tests.support.otlp_sink import refused_port

HANG_S = 60.0
RUN_BOUND_S = 10.0
"""Only "no hang": a scripted run takes well under a second; a hung exporter would add `HANG_S`."""
SHUTDOWN_NO_HANG_S = 20.0
"""Only "no hang": shutdown takes ~3 s here (1 s export timeout + 2 s shutdown margin)."""


class _Raising(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise ConnectionError("collector went away")


class _Hanging(SpanExporter):
    def __init__(self) -> None:
        self.release = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(HANG_S)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.wait(HANG_S)


def _summary(outcomes: list[ScenarioOutcome]) -> list[tuple[Any, ...]]:
    """What a run computed, without ids that differ between runs."""
    rows = []
    for outcome in outcomes:
        result = outcome.result
        if result is None:
            rows.append((outcome.name, outcome.error))
            continue
        rows.append(
            (
                outcome.name,
                result.text,
                result.agent,
                result.stop_reason,
                result.rounds,
                result.bill,
                [event.get("status") for event in result.handoff_events],
            )
        )
    return rows


@pytest.fixture(scope="module")
def reference() -> list[tuple[Any, ...]]:
    """The scenarios' results with a healthy in-memory exporter."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    outcomes = asyncio.run(run_scenarios(tracer_provider=provider, latency_scale=0))
    assert [outcome.name for outcome in outcomes] == list(SCENARIO_NAMES)
    assert memory.get_finished_spans()
    return _summary(outcomes)


@pytest.fixture
def hanging() -> Iterator[_Hanging]:
    exporter = _Hanging()
    yield exporter
    exporter.release.set()


def _broken(kind: str, hanging: _Hanging) -> Telemetry:
    common: dict[str, Any] = {"export_timeout_ms": 1000, "schedule_delay_ms": 20, "set_global": False}
    if kind == "refused":
        # Default OTLP timeout (10 s) on purpose: the guard, not the exporter, must bound the wait.
        return configure_telemetry(endpoint=f"http://127.0.0.1:{refused_port()}", env={}, **common)
    exporter = _Raising() if kind == "raising" else hanging
    return configure_telemetry(exporter=exporter, env={}, **common)


@pytest.mark.parametrize("kind", ["refused", "raising", "hanging"])
def test_agent_runs_are_unchanged_by_a_broken_exporter(
    kind: str, reference: list[tuple[Any, ...]], hanging: _Hanging
) -> None:
    telemetry = _broken(kind, hanging)
    ended = InMemorySpanExporter()  # what this run ended, whatever the broken exporter did with it
    telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(ended))
    started = time.monotonic()
    outcomes = asyncio.run(
        run_scenarios(
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            latency_scale=0,
        )
    )
    run_s = time.monotonic() - started
    shutdown_started = time.monotonic()
    clean = telemetry.shutdown()
    shutdown_s = time.monotonic() - shutdown_started
    assert _summary(outcomes) == reference
    assert all(outcome.trace_id for outcome in outcomes)
    assert run_s < RUN_BOUND_S
    assert shutdown_s < SHUTDOWN_NO_HANG_S  # bounded by the settings, not by the exporter's hang
    assert not clean
    assert telemetry.exported_spans == 0
    span_count = len(ended.get_finished_spans())
    assert span_count > len(outcomes)
    assert telemetry.dropped_spans == span_count
