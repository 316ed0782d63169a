"""The span processor's own queue and export thread, and the reusable call thread of `BoundedCall`."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from janux.tracing.sdk.bounded_call import BoundedCall
from janux.tracing.sdk.processor import BoundedSpanProcessor
from janux.tracing.sdk.settings import BatchSettings
from tests.support.wait import wait_until

WAIT_S = 10.0
"""Upper bound for background work that normally takes milliseconds."""


class Recording(SpanExporter):
    """Keeps the size of each batch and the thread that exported it; can be held."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.threads: set[str] = set()
        self.hold = threading.Event()
        self.hold.set()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.hold.wait(WAIT_S)
        self.batches.append(len(spans))
        self.threads.add(threading.current_thread().name)
        return SpanExportResult.SUCCESS


def _provider(exporter: SpanExporter, **limits: int) -> tuple[TracerProvider, BoundedSpanProcessor]:
    limits = {"max_queue_size": 100, "schedule_delay_ms": 60_000, "max_export_batch_size": 4,
              "export_timeout_ms": 2_000, **limits}  # fmt: skip
    processor = BoundedSpanProcessor(exporter, BatchSettings(**limits))
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    return provider, processor


def _end_spans(provider: TracerProvider, count: int) -> None:
    tracer = provider.get_tracer("test")
    for n in range(count):
        tracer.start_span(f"s{n}").end()


def _wait_for(condition: Callable[[], bool]) -> None:
    wait_until(condition, timeout_s=WAIT_S, interval_s=0.005)


def test_full_batches_leave_before_the_schedule_delay_on_the_export_thread() -> None:
    exporter = Recording()
    provider, processor = _provider(exporter)
    _end_spans(provider, 9)
    _wait_for(lambda: sum(exporter.batches) >= 8)
    assert exporter.batches == [4, 4]  # the ninth waits for the delay, a flush or shutdown
    assert exporter.threads == {"janux-span-batcher"}
    assert processor.accounting.pending == 1
    assert processor.force_flush(5_000)
    assert exporter.batches == [4, 4, 1] and processor.accounting.exported == 9
    processor.shutdown()


def test_a_held_exporter_fills_the_queue_then_spans_are_refused_and_counted() -> None:
    exporter = Recording()
    exporter.hold.clear()
    provider, processor = _provider(exporter, max_queue_size=8)
    _end_spans(provider, 4)
    _wait_for(lambda: processor.accounting.pending == 0)  # taken by the held export
    _end_spans(provider, 20)
    accounting = processor.accounting
    assert (accounting.admitted, accounting.pending, accounting.dropped_queue_full) == (12, 8, 12)
    assert not processor.force_flush(100)  # the export thread is still held
    exporter.hold.set()
    assert processor.force_flush(5_000)
    assert accounting.exported == 12 and accounting.dropped == 12
    processor.shutdown()


def test_shutdown_counts_the_batch_a_hanging_export_holds_and_ignores_its_late_answer() -> None:
    exporter = Recording()
    exporter.hold.clear()
    provider, processor = _provider(exporter, export_timeout_ms=200)
    _end_spans(provider, 6)
    _wait_for(lambda: processor.accounting.pending == 2)
    processor.shutdown()
    assert processor.accounting.dropped_shutdown == 6 and processor.accounting.exported == 0
    exporter.hold.set()
    _wait_for(lambda: exporter.batches)
    # The export thread ends once the late call has returned and its answer has been counted (or not).
    _wait_for(lambda: not processor._worker._thread.is_alive())
    assert processor.accounting.exported == 0 and processor.accounting.dropped == 6


def test_a_forked_child_starts_with_an_empty_queue_and_its_own_export_thread() -> None:
    exporter = Recording()
    exporter.hold.clear()
    provider, processor = _provider(exporter)
    _end_spans(provider, 7)
    _wait_for(lambda: processor.accounting.pending == 3)
    pid = os.fork()
    if pid == 0:  # the child: the parent's spans are not its to export
        exporter.hold.set()
        ok = processor.accounting.pending == 0
        _end_spans(provider, 4)
        _wait_for(lambda: exporter.batches)
        os._exit(0 if ok and exporter.batches == [4] else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    exporter.hold.set()
    processor.shutdown()
    assert processor.accounting.exported == 7


def test_bounded_call_keeps_its_thread_and_answers_busy_while_a_call_hangs() -> None:
    call = BoundedCall("test-call")
    first = call.run(threading.current_thread, 5)
    assert first.kind == "ok" and call.run(threading.current_thread, 5).value is first.value
    release = threading.Event()
    assert call.run(lambda: release.wait(WAIT_S), 0.05).kind == "timeout"
    assert call.run(lambda: 1, 5).kind == "busy"
    release.set()
    _wait_for(lambda: call.run(lambda: 1, 5).kind == "ok")
    after = call.run(threading.current_thread, 5)
    assert after.kind == "ok" and after.value is not first.value  # the hung call's thread left
    raised = call.run(lambda: 1 / 0, 5)
    assert raised.kind == "error" and isinstance(raised.error, ZeroDivisionError)


def test_repeated_flushes_reuse_one_call_thread() -> None:
    from janux.tracing.sdk import configure_telemetry

    telemetry = configure_telemetry(exporter=Recording(), metrics=False, set_global=False, env={})
    before = threading.active_count()
    for _ in range(20):
        assert telemetry.force_flush(timeout_ms=5_000)
    assert threading.active_count() <= before + 1
    assert telemetry.shutdown(timeout_ms=5_000)
