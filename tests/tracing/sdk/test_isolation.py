"""Failure isolation: a refused, raising or hanging exporter never fails or slows the workload.

The latency bounds here are not speed measurements: they check that a 10 s hang or a dead
collector does not leak into the run at all (bounds far below the hang, far above normal).
"""

from __future__ import annotations

import asyncio
import io
import logging
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter, SpanExportResult

from janux.tracing.sdk.telemetry import Telemetry, configure_telemetry
from tests.support.otlp_sink import refused_port
from tests.support.wait import wait_until

from .workload import SPANS_PER_TURN, expected_results, run_turns

HANG_S = 60.0
"""How long the hanging exporter blocks each call."""

RUN_BOUND_S = 10.0
"""Only "no hang": the workload takes milliseconds; a hung exporter would add `HANG_S`."""
SHUTDOWN_NO_HANG_S = 20.0
"""Only "no hang": shutdown takes ~3 s here (1 s export timeout + 2 s shutdown margin)."""

TURNS = 20


class RaisingExporter(SpanExporter):
    """Raises on every call, like a buggy custom exporter."""

    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        raise RuntimeError("collector exploded")

    def shutdown(self) -> None:
        raise RuntimeError("shutdown exploded too")


class HangingExporter(SpanExporter):
    """Blocks every call for HANG_S seconds (or until released), then reports success."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        self.release.wait(HANG_S)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.wait(HANG_S)


@pytest.fixture
def hanging() -> Iterator[HangingExporter]:
    exporter = HangingExporter()
    yield exporter
    exporter.release.set()  # let abandoned daemon threads finish


def timed_run(telemetry: Telemetry, turns: int = TURNS) -> float:
    started = time.monotonic()
    results = asyncio.run(run_turns(telemetry.tracer_provider, turns))
    elapsed = time.monotonic() - started
    assert results == expected_results(turns)
    return elapsed


def timed_shutdown(telemetry: Telemetry) -> tuple[bool, float]:
    started = time.monotonic()
    ok = telemetry.shutdown()
    return ok, time.monotonic() - started


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_refused_port_changes_nothing_and_counts_every_span(protocol: str) -> None:
    env = {"OTEL_EXPORTER_OTLP_TIMEOUT": "300", "OTEL_BSP_SCHEDULE_DELAY": "20"}
    telemetry = configure_telemetry(
        endpoint=f"http://127.0.0.1:{refused_port()}",
        protocol=protocol,
        export_timeout_ms=1000,
        max_export_batch_size=16,
        set_global=False,
        env=env,
    )
    assert timed_run(telemetry) < RUN_BOUND_S
    ok, shutdown_s = timed_shutdown(telemetry)
    assert not ok
    assert shutdown_s < SHUTDOWN_NO_HANG_S
    assert telemetry.exported_spans == 0
    assert telemetry.dropped_spans == TURNS * SPANS_PER_TURN


def test_raising_exporter_is_contained_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    exporter = RaisingExporter()
    # Full batches of 8 go out as they fill; with no timed export, the last 4 of the 100 spans stay
    # queued until the flush, which therefore has something to fail on (a short schedule delay
    # could export them first, and then the flush would rightly report nothing left to fail).
    telemetry = configure_telemetry(exporter=exporter, max_export_batch_size=8, schedule_delay_ms=600_000,
                                    set_global=False, env={})
    processor = telemetry._processor
    assert processor is not None
    with caplog.at_level(logging.WARNING, logger="janux.tracing.sdk.processor"):
        assert timed_run(telemetry) < RUN_BOUND_S
        total = TURNS * SPANS_PER_TURN
        wait_until(lambda: processor.accounting.handed_off == total - total % 8, what="the full batches")
        assert processor.accounting.pending == total % 8 > 0
        assert not telemetry.force_flush(timeout_ms=5000)
        ok, _ = timed_shutdown(telemetry)
    assert not ok
    assert exporter.calls >= (TURNS * SPANS_PER_TURN) // 8
    assert telemetry.dropped_spans == TURNS * SPANS_PER_TURN
    raised = [
        r
        for r in caplog.records
        if "raised RuntimeError" in r.getMessage() and "span exporter" in r.getMessage()
    ]
    assert len(raised) == 1, [r.getMessage() for r in caplog.records]
    assert any("span shutdown" in r.getMessage() for r in caplog.records)


def test_hanging_exporter_bounds_the_run_flush_and_shutdown(hanging: HangingExporter) -> None:
    telemetry = configure_telemetry(
        exporter=hanging,
        export_timeout_ms=500,
        max_export_batch_size=10,
        schedule_delay_ms=20,
        set_global=False,
        env={},
    )
    assert timed_run(telemetry) < RUN_BOUND_S
    started = time.monotonic()
    assert not telemetry.force_flush()
    assert time.monotonic() - started < SHUTDOWN_NO_HANG_S
    ok, shutdown_s = timed_shutdown(telemetry)
    assert not ok
    assert shutdown_s < SHUTDOWN_NO_HANG_S
    assert telemetry.exported_spans == 0
    assert telemetry.dropped_spans == TURNS * SPANS_PER_TURN


def test_full_queue_drops_are_counted_and_logged_once(
    hanging: HangingExporter, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry = configure_telemetry(
        exporter=hanging,
        max_queue_size=10,
        max_export_batch_size=5,
        schedule_delay_ms=60_000,
        export_timeout_ms=5000,
        set_global=False,
        env={},
    )
    with caplog.at_level(logging.WARNING, logger="janux.tracing.sdk.processor"):
        assert timed_run(telemetry) < RUN_BOUND_S
    processor = telemetry._processor
    assert processor is not None
    accounting = processor.accounting
    total = TURNS * SPANS_PER_TURN
    assert accounting.dropped_queue_full > 0
    assert accounting.admitted + accounting.dropped_queue_full == total
    assert sum("queue full" in r.getMessage() for r in caplog.records) == 1
    hanging.release.set()  # the collector comes back: what was admitted gets out
    assert telemetry.shutdown(timeout_ms=10_000) is False  # drops happened before, so not clean
    assert telemetry.exported_spans + telemetry.dropped_spans == total
    assert telemetry.exported_spans > 0


def test_spans_after_shutdown_are_counted() -> None:
    telemetry = configure_telemetry(exporter=ConsoleSpanExporter(out=io.StringIO()), set_global=False, env={})
    assert telemetry.shutdown(timeout_ms=5000)
    telemetry.tracer_provider.get_tracer("x").start_span("late").end()
    assert telemetry.dropped_spans == 1
    assert telemetry.shutdown() is False  # a second call is a harmless no-op


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_dead_collector_is_logged_once_not_once_per_batch(
    protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Many failed batches: the OTLP exporter's own error and our warning each appear once."""
    env = {"OTEL_EXPORTER_OTLP_TIMEOUT": "300"}
    with caplog.at_level(logging.WARNING):
        telemetry = configure_telemetry(
            endpoint=f"http://127.0.0.1:{refused_port()}", protocol=protocol, export_timeout_ms=1000,
            max_export_batch_size=4, schedule_delay_ms=10, metrics=False, set_global=False, env=env,
        )  # fmt: skip
        timed_run(telemetry, turns=8)  # 40 spans: at least 10 failed batches
        telemetry.shutdown()
    assert telemetry.dropped_spans == 8 * SPANS_PER_TURN
    ours = ("opentelemetry", "janux.tracing")
    messages = [(r.name, r.msg) for r in caplog.records if r.name.startswith(ours)]
    assert messages and len(messages) == len(set(messages)), messages
    if protocol == "http/protobuf":  # its error is still shown, once (gRPC may not get to log in time)
        assert any(name.startswith("opentelemetry.exporter") for name, _ in messages)
