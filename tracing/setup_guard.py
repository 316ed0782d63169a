"""Failure isolation between an agent run and its telemetry exporter.

Three guarantees, whatever the exporter does (refuse connections, hang, raise):
- the run never waits: ended spans go into a bounded queue, export happens on a worker thread;
- every export call is bounded in time: it runs on a daemon thread that is abandoned after the
  timeout, and while an abandoned call is still hanging later batches are dropped at once
  instead of piling up threads;
- every lost span is counted: refused because the queue was full, lost in a failed, raising or
  timed-out export, or still queued when shutdown gave up. Each kind of failure is logged once.

The SDK's BatchSpanProcessor drops silently when its queue is full, so `BoundedSpanProcessor`
admits spans itself: it never hands the SDK processor more than its queue can hold.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from opentelemetry.context import Context
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from tracing.setup_config import BatchSettings

_log = logging.getLogger(__name__)

T = TypeVar("T")

OutcomeKind = Literal["ok", "failure", "error", "timeout", "busy"]
"""How one bounded call ended: returned success, returned failure, raised, timed out, or was
refused because an earlier call is still hanging."""


class LogOnce:
    """Logs each distinct problem once, however many batches it hits."""

    def __init__(self, logger: logging.Logger) -> None:
        """Log through `logger`."""
        self._logger = logger
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def warning(self, key: str, message: str, *args: object) -> None:
        """Log `message` at WARNING the first time `key` is seen; later calls are silent."""
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
        self._logger.warning(message, *args)


EXPORTER_LOGGERS: tuple[str, ...] = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.json.file._internal",
)
"""Loggers of the OpenTelemetry exporters that log every failed batch (or retry) on their own."""


class RepeatFilter(logging.Filter):
    """Passes the first record of each (logger, level, message template); counts and drops repeats.

    The OTLP exporters log an error per failed batch, so a collector that is down would fill the
    application's log. The guard already logs each kind of failure once and counts every dropped
    span, so the exporters' repeats carry no news.
    """

    def __init__(self) -> None:
        """An empty filter."""
        super().__init__()
        self._seen: set[tuple[str, int, str]] = set()
        self._lock = threading.Lock()
        self.suppressed = 0
        """Repeated records dropped so far."""

    def filter(self, record: logging.LogRecord) -> bool:
        """True for the first record of its kind, False (and counted) for a repeat."""
        key = (record.name, record.levelno, str(record.msg))
        with self._lock:
            if key in self._seen:
                self.suppressed += 1
                return False
            self._seen.add(key)
        return True


def quiet_exporter_repeats() -> RepeatFilter:
    """Put a fresh `RepeatFilter` on the exporters' loggers, replacing an earlier one, and return it.

    Called by each `configure_telemetry`, so each setup logs each kind of exporter problem once.
    """
    fresh = RepeatFilter()
    for name in EXPORTER_LOGGERS:
        logger = logging.getLogger(name)
        for old in [f for f in logger.filters if isinstance(f, RepeatFilter)]:
            logger.removeFilter(old)
        logger.addFilter(fresh)
    return fresh


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """Result of one `BoundedCall.run`."""

    kind: OutcomeKind
    value: T | None = None
    error: BaseException | None = None


class BoundedCall:
    """Runs a blocking call on a daemon thread and stops waiting for it after a timeout.

    A daemon thread is used (not an executor) so a call that never returns cannot keep the
    interpreter from exiting. The caller's context is copied so the SDK's "suppress
    instrumentation" flag reaches the exporter's own HTTP/gRPC calls.
    """

    def __init__(self, name: str) -> None:
        """`name` labels the worker threads (visible in thread dumps)."""
        self._name = name
        self._hanging: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, func: Callable[[], T], timeout_s: float) -> Outcome[T]:
        """Call `func`, waiting at most `timeout_s`; never raises."""
        with self._lock:
            if self._hanging is not None and self._hanging.is_alive():
                return Outcome("busy")
            self._hanging = None
        box: dict[str, Any] = {}
        done = threading.Event()

        def target() -> None:
            try:
                box["value"] = func()
            except BaseException as error:  # a broken exporter must not kill the worker
                box["error"] = error
            finally:
                done.set()

        context = contextvars.copy_context()
        thread = threading.Thread(target=context.run, args=(target,), name=self._name, daemon=True)
        thread.start()
        if not done.wait(timeout_s):
            with self._lock:
                self._hanging = thread
            return Outcome("timeout")
        if "error" in box:
            return Outcome("error", error=box["error"])
        return Outcome("ok", value=box.get("value"))


class SpanAccounting:
    """Counts of spans admitted, handed to the exporter, exported and dropped (thread-safe)."""

    def __init__(self, capacity: int) -> None:
        """`capacity` is the most spans that may wait for export at once."""
        self._capacity = capacity
        self._lock = threading.Lock()
        self.admitted = 0
        """Spans accepted into the queue."""
        self.handed_off = 0
        """Spans taken from the queue by an export call (or written off at shutdown)."""
        self.exported = 0
        """Spans the exporter acknowledged."""
        self.dropped_queue_full = 0
        """Spans refused because the queue was full."""
        self.dropped_export = 0
        """Spans in batches that failed, raised, timed out or met a still-hanging export."""
        self.dropped_shutdown = 0
        """Spans ended after shutdown, or still queued when shutdown gave up."""

    @property
    def capacity(self) -> int:
        """The most spans that may wait for export at once."""
        return self._capacity

    @property
    def dropped(self) -> int:
        """Every span that will never reach the exporter's destination."""
        with self._lock:
            return self.dropped_queue_full + self.dropped_export + self.dropped_shutdown

    @property
    def pending(self) -> int:
        """Spans admitted but not yet taken by an export call."""
        with self._lock:
            return self.admitted - self.handed_off

    def try_admit(self) -> bool:
        """Admit one span if the queue has room; count it as dropped otherwise."""
        with self._lock:
            if self.admitted - self.handed_off >= self._capacity:
                self.dropped_queue_full += 1
                return False
            self.admitted += 1
            return True

    def record_batch(self, count: int, exported: bool) -> None:
        """One export call took `count` spans and succeeded or not."""
        with self._lock:
            self.handed_off += count
            if exported:
                self.exported += count
            else:
                self.dropped_export += count

    def record_after_shutdown(self) -> None:
        """A span ended after shutdown."""
        with self._lock:
            self.dropped_shutdown += 1

    def write_off_pending(self) -> int:
        """Count every still-queued span as dropped (shutdown is over); return how many."""
        with self._lock:
            left = self.admitted - self.handed_off
            self.handed_off += left
            self.dropped_shutdown += left
            return left


class GuardedSpanExporter(SpanExporter):
    """Wraps a span exporter: bounded time, no exception escapes, every outcome counted."""

    def __init__(self, inner: SpanExporter, accounting: SpanAccounting, timeout_ms: int) -> None:
        """Guard `inner`; an export slower than `timeout_ms` is abandoned and its batch dropped."""
        self._inner = inner
        self._accounting = accounting
        self._timeout_s = timeout_ms / 1000
        self._call = BoundedCall("janux-span-export")
        self._once = LogOnce(_log)

    @property
    def inner(self) -> SpanExporter:
        """The wrapped exporter."""
        return self._inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export one batch through the inner exporter; never raises, never blocks past the timeout."""
        outcome = self._call.run(lambda: self._inner.export(spans), self._timeout_s)
        ok = outcome.kind == "ok" and outcome.value == SpanExportResult.SUCCESS
        self._accounting.record_batch(len(spans), ok)
        if not ok:
            _report(self._once, "span", type(self._inner).__name__, outcome, self._timeout_s)
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        """Shut the inner exporter down, waiting at most the export timeout."""
        outcome = self._call.run(self._inner.shutdown, self._timeout_s)
        if outcome.kind != "ok":
            _report(self._once, "span shutdown", type(self._inner).__name__, outcome, self._timeout_s)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the inner exporter, waiting at most the smaller of both timeouts."""
        timeout_s = min(self._timeout_s, timeout_millis / 1000)
        outcome = self._call.run(lambda: self._inner.force_flush(timeout_millis), timeout_s)
        return outcome.kind == "ok" and bool(outcome.value)


class GuardedMetricExporter(MetricExporter):
    """Wraps a metric exporter with the same isolation as `GuardedSpanExporter` (no counting)."""

    def __init__(self, inner: MetricExporter, timeout_ms: int) -> None:
        """Guard `inner`, keeping its preferred temporality and aggregation."""
        super().__init__(
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self._inner = inner
        self._timeout_s = timeout_ms / 1000
        self._call = BoundedCall("janux-metric-export")
        self._once = LogOnce(_log)
        self.failed_exports = 0
        """Metric exports that failed, raised, timed out or were skipped behind a hanging one."""

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Export through the inner exporter; never raises, never blocks past the timeout."""
        timeout_s = min(self._timeout_s, timeout_millis / 1000)
        outcome = self._call.run(lambda: self._inner.export(metrics_data, timeout_millis), timeout_s)
        if outcome.kind == "ok" and outcome.value == MetricExportResult.SUCCESS:
            return MetricExportResult.SUCCESS
        self.failed_exports += 1
        _report(self._once, "metric", type(self._inner).__name__, outcome, timeout_s)
        return MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Flush the inner exporter within the timeout."""
        timeout_s = min(self._timeout_s, timeout_millis / 1000)
        outcome = self._call.run(lambda: self._inner.force_flush(timeout_millis), timeout_s)
        return outcome.kind == "ok" and bool(outcome.value)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Shut the inner exporter down within the timeout."""
        timeout_s = min(self._timeout_s, timeout_millis / 1000)
        outcome = self._call.run(lambda: self._inner.shutdown(timeout_millis=timeout_millis), timeout_s)
        if outcome.kind != "ok":
            _report(self._once, "metric shutdown", type(self._inner).__name__, outcome, timeout_s)


class BoundedSpanProcessor(SpanProcessor):
    """A BatchSpanProcessor that admits spans itself, so none is ever dropped without being counted."""

    def __init__(self, exporter: SpanExporter, batch: BatchSettings) -> None:
        """Batch spans to `exporter` (wrapped in a `GuardedSpanExporter`) under `batch` limits."""
        self.accounting = SpanAccounting(batch.max_queue_size)
        """Counts of admitted, exported and dropped spans."""
        self.exporter = GuardedSpanExporter(exporter, self.accounting, batch.export_timeout_ms)
        """The guarded exporter the batch processor calls."""
        self._batch = BatchSpanProcessor(
            self.exporter,
            max_queue_size=batch.max_queue_size,
            schedule_delay_millis=batch.schedule_delay_ms,
            max_export_batch_size=batch.max_export_batch_size,
            export_timeout_millis=batch.export_timeout_ms,
        )
        self._once = LogOnce(_log)
        self._closed = False
        self._shutdown_lock = threading.Lock()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue an ended, sampled span, or count it as dropped when the queue is full."""
        if not (span.context and span.context.trace_flags.sampled):
            return
        if self._closed:
            self.accounting.record_after_shutdown()
            self._once.warning("closed", "telemetry: span ended after shutdown; dropped and counted")
            return
        if not self.accounting.try_admit():
            self._once.warning(
                "full",
                "telemetry: span queue full (%d spans), the exporter is not keeping up; "
                "dropping new spans and counting them (see Telemetry.dropped_spans)",
                self.accounting.capacity,
            )
            return
        self._batch.on_end(span)

    def shutdown(self) -> None:
        """Export what is queued (bounded by the export timeout), then count what is left as dropped."""
        with self._shutdown_lock:
            if self._closed:
                return
            self._closed = True
        self._batch.shutdown()  # type: ignore[no-untyped-call]
        left = self.accounting.write_off_pending()
        if left:
            _log.warning("telemetry: %d queued spans could not be exported before shutdown", left)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export everything queued now; False when some of it could not be exported."""
        if self._closed:
            return False
        before = self.accounting.dropped
        flushed = self._batch.force_flush(timeout_millis)
        return flushed and self.accounting.dropped == before and self.accounting.pending == 0


def _report(once: LogOnce, what: str, exporter: str, outcome: Outcome[Any], timeout_s: float) -> None:
    """Log one failed export, once per (what, kind of failure)."""
    if outcome.kind == "error":
        error = outcome.error
        name = type(error).__name__
        once.warning(
            f"{what}:error:{name}",
            "telemetry: %s exporter %s raised %s: %s; data dropped and counted (logged once)",
            what,
            exporter,
            name,
            error,
        )
    elif outcome.kind == "timeout":
        once.warning(
            f"{what}:timeout",
            "telemetry: %s exporter %s did not answer within %.1f s; data dropped and counted (logged once)",
            what,
            exporter,
            timeout_s,
        )
    elif outcome.kind == "busy":
        once.warning(
            f"{what}:busy",
            "telemetry: %s exporter %s is still hanging; later batches are "
            "dropped and counted until it returns (logged once)",
            what,
            exporter,
        )
    else:
        once.warning(
            f"{what}:failure",
            "telemetry: %s exporter %s reported a failed export; data dropped and counted (logged once)",
            what,
            exporter,
        )
