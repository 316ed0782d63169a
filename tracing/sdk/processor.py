"""Failure isolation between an agent run and its telemetry exporter.

Three guarantees, whatever the exporter does (refuse connections, hang, raise):
- the run never waits: ended spans go into a bounded queue, export happens on a worker thread;
- nothing waits for a hanging exporter but the export thread: the queue fills and new spans are
  refused (and counted), while flush, shutdown and the metric exporter's calls run on call
  threads that are abandoned after the timeout;
- every lost span is counted: refused because the queue was full, lost in a failed, raising or
  timed-out export, or still queued when shutdown gave up. Each kind of failure is logged once.

The SDK's BatchSpanProcessor drops silently when its queue is full, so `BoundedSpanProcessor`
keeps its own queue (`janux.tracing.sdk.batch`): on the agent's thread it costs no more than the SDK's
(a deque append, a wake-up per full batch), and every refusal is counted on a slow path.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from janux.tracing.sdk.batch import BatchWorker, SpanAccounting
from janux.tracing.sdk.bounded_call import BoundedCall, Outcome
from janux.tracing.sdk.settings import BatchSettings

_log = logging.getLogger(__name__)


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


class GuardedSpanExporter(SpanExporter):
    """Wraps a span exporter: no exception escapes, every outcome counted, shutdown and flush bounded.

    `export` runs on the processor's export thread (`janux.tracing.sdk.batch.BatchWorker`), which
    alone may wait for a slow exporter; `shutdown` and `force_flush` run on a call thread and are
    abandoned after the export timeout.
    """

    def __init__(self, inner: SpanExporter, accounting: SpanAccounting, timeout_ms: int) -> None:
        """Guard `inner`; shutdown and flush wait at most `timeout_ms`."""
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
        """Export one batch through the inner exporter, on the calling thread; never raises."""
        try:
            outcome: Outcome[SpanExportResult] = Outcome("ok", value=self._inner.export(spans))
        except Exception as error:  # a broken exporter must not kill the export thread
            outcome = Outcome("error", error=error)
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
    """A batch span processor that never blocks the agent and never drops a span without counting it.

    `on_end` runs on the agent's thread for every span: a sampled check, a length check, a deque
    append, and a wake-up of the export thread when a full batch is queued. No lock, no logging
    work: refusals (queue full, after shutdown) take the slow path. See `janux.tracing.sdk.batch`.
    """

    def __init__(self, exporter: SpanExporter, batch: BatchSettings) -> None:
        """Batch spans to `exporter` (wrapped in a `GuardedSpanExporter`) under `batch` limits."""
        self.accounting = SpanAccounting(batch.max_queue_size)
        """Counts of admitted, exported and dropped spans."""
        self.exporter = GuardedSpanExporter(exporter, self.accounting, batch.export_timeout_ms)
        """The guarded exporter the export thread calls."""
        self._queue = self.accounting.queue
        self._capacity = batch.max_queue_size
        self._batch_size = batch.max_export_batch_size
        self._worker = BatchWorker(self.accounting, self.exporter.export, batch)
        self._once = LogOnce(_log)
        self._closed = False
        self._shutdown_lock = threading.Lock()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue an ended, sampled span, or count it as dropped (queue full, or after shutdown)."""
        context = span.context
        if not (context and context.trace_flags.sampled):
            return
        queue = self._queue
        if len(queue) >= self._capacity or self._closed:
            self._refuse()
            return
        queue.append(span)
        if len(queue) >= self._batch_size:
            wake = self._worker.wake
            if not wake.is_set():
                wake.set()

    def _refuse(self) -> None:
        """The slow path of `on_end`: count the span and say why, once."""
        if self._closed:
            self.accounting.record_after_shutdown()
            self._once.warning("closed", "telemetry: span ended after shutdown; dropped and counted")
            return
        self.accounting.refuse_full()
        self._once.warning(
            "full",
            "telemetry: span queue full (%d spans), the exporter is not keeping up; "
            "dropping new spans and counting them (see Telemetry.dropped_spans)",
            self.accounting.capacity,
        )

    def shutdown(self) -> None:
        """Export what is queued (bounded by the export timeout), then count what is left as dropped."""
        with self._shutdown_lock:
            if self._closed:
                return
            self._closed = True
        self._worker.stop()
        self.exporter.shutdown()
        left = self.accounting.write_off_pending()
        if left:  # counted in dropped_shutdown; Telemetry.shutdown reports every drop in one line
            _log.debug("telemetry: %d queued spans could not be exported before shutdown", left)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export everything queued now; False when some of it could not be exported."""
        if self._closed:
            return False
        before = self.accounting.dropped
        flushed = self._worker.flush(timeout_millis / 1000)
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
