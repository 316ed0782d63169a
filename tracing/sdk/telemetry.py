"""Telemetry setup at the edge: one call that installs a TracerProvider (and a MeterProvider).

    from janux.tracing.sdk import configure_telemetry

    telemetry = configure_telemetry(service_name="my-agents")          # OTLP/HTTP to localhost:4318
    telemetry = configure_telemetry(exporter="otlp_json_file", file_path="traces.jsonl")
    telemetry = configure_telemetry(endpoint="http://collector:4317", protocol="grpc")
    ...
    telemetry.shutdown()        # bounded (3 s by default): never hangs on a hung exporter

Anything not passed comes from the OpenTelemetry environment variables (see docs/configuration.md).
The runtime itself only ever uses the OpenTelemetry API; this module is the one place that
touches the SDK. Exporter trouble never reaches the agent run: see `janux.tracing.sdk.processor`.
"""

from __future__ import annotations

import atexit
import logging
import os
from collections.abc import Mapping
from types import TracebackType

from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import (
    SERVICE_NAME,
    TELEMETRY_SDK_LANGUAGE,
    TELEMETRY_SDK_NAME,
    TELEMETRY_SDK_VERSION,
    Resource,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.sdk.version import __version__ as sdk_version

from janux.tracing.sdk.bounded_call import BoundedCall
from janux.tracing.sdk.env import TelemetryConfigError
from janux.tracing.sdk.exporters import build_metric_exporter, build_span_exporter
from janux.tracing.sdk.processor import (
    BoundedSpanProcessor,
    GuardedMetricExporter,
    quiet_exporter_repeats,
)
from janux.tracing.sdk.settings import (
    SettingsOverrides,
    TelemetrySettings,
    resolve_settings,
)

__all__ = ["Telemetry", "TelemetryConfigError", "TelemetrySettings", "configure_telemetry"]

_log = logging.getLogger(__name__)

class Telemetry:
    """The providers `configure_telemetry` built, with counters and a bounded shutdown."""

    def __init__(
        self,
        *,
        settings: TelemetrySettings,
        tracer_provider: TracerProvider,
        processor: BoundedSpanProcessor | None,
        meter_provider: MeterProvider | None,
        installed_globally: bool,
    ) -> None:
        """Built by `configure_telemetry`; not meant to be constructed directly."""
        self.settings = settings
        """The resolved settings (what was actually configured)."""
        self.tracer_provider = tracer_provider
        """The SDK tracer provider; pass it to code that takes a provider instead of the global one."""
        self.meter_provider = meter_provider
        """The SDK meter provider, or None when metrics are off."""
        self.installed_globally = installed_globally
        """True when the providers became the OpenTelemetry globals."""
        self._processor = processor
        self._closed = False
        # One for every flush: its call thread is kept between calls (see BoundedCall).
        self._flush_call = BoundedCall("janux-telemetry-flush")
        # The SDK's own exit hooks (off, see configure_telemetry) would wait up to the export
        # timeout per provider; this one waits at most shutdown_timeout_ms in all.
        atexit.register(self._shutdown_at_exit)

    @property
    def dropped_spans(self) -> int:
        """Spans lost so far: queue full, failed/raising/hung export, or left at shutdown."""
        return self._processor.accounting.dropped if self._processor else 0

    @property
    def span_exporter(self) -> SpanExporter | None:
        """The configured exporter (without its guard), or None for `none`."""
        return self._processor.exporter.inner if self._processor else None

    @property
    def exported_spans(self) -> int:
        """Spans the exporter acknowledged so far."""
        return self._processor.accounting.exported if self._processor else 0

    def force_flush(self, timeout_ms: int | None = None) -> bool:
        """Export everything queued now; False when it did not all get out within the bound
        (default: `settings.shutdown_timeout_ms`)."""
        budget = self._bound(timeout_ms)
        outcome = self._flush_call.run(lambda: self._flush_all(budget), budget / 1000)
        return outcome.kind == "ok" and bool(outcome.value)

    def shutdown(self, timeout_ms: int | None = None) -> bool:
        """Flush and close both providers, waiting at most `timeout_ms` (default:
        `settings.shutdown_timeout_ms`, 3 s unless configured).

        Returns True only when everything finished within the bound and no span was ever dropped;
        `dropped_spans` says how many were, and one log line says it with the reasons.
        Calling it twice is harmless. It also runs, bounded the same way, when the program exits.
        """
        if self._closed:
            return False
        self._closed = True
        atexit.unregister(self._shutdown_at_exit)
        budget = self._bound(timeout_ms)
        call = BoundedCall("janux-telemetry-shutdown")
        outcome = call.run(lambda: self._shutdown_all(budget), budget / 1000)
        finished = outcome.kind == "ok"
        if not finished and self._processor is not None:
            self._processor.accounting.write_off_pending()
        self._report_drops(finished, budget)
        return finished and self.dropped_spans == 0

    def _shutdown_at_exit(self) -> None:
        self.shutdown()

    def _report_drops(self, finished: bool, budget_ms: int) -> None:
        """One warning line with every dropped span and why (nothing when none was dropped)."""
        if self._processor is None or (finished and not self.dropped_spans):
            return
        books = self._processor.accounting
        cut = "" if finished else f"shutdown gave up after {budget_ms} ms; "
        _log.warning(
            "telemetry: %s%d span(s) dropped in all: %d refused with the queue full, "
            "%d in failed or timed-out exports, %d still queued or exporting at shutdown",
            cut,
            books.dropped,
            books.dropped_queue_full,
            books.dropped_export,
            books.dropped_shutdown,
        )

    def __enter__(self) -> Telemetry:
        """Use as a context manager that shuts down on exit."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Shut down (bounded)."""
        self.shutdown()

    def _bound(self, timeout_ms: int | None) -> int:
        if timeout_ms is not None:
            return max(1, timeout_ms)
        return self.settings.shutdown_timeout_ms

    def _flush_all(self, budget_ms: int) -> bool:
        flushed = self.tracer_provider.force_flush(budget_ms)
        if self.meter_provider is not None:
            flushed = self.meter_provider.force_flush(budget_ms) and flushed
        return flushed

    def _shutdown_all(self, budget_ms: int) -> None:
        self.tracer_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown(timeout_millis=budget_ms)


def configure_telemetry(
    *,
    service_name: str | None = None,
    exporter: str | SpanExporter | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    file_path: str | os.PathLike[str] | None = None,
    headers: Mapping[str, str] | None = None,
    max_queue_size: int | None = None,
    schedule_delay_ms: int | None = None,
    max_export_batch_size: int | None = None,
    export_timeout_ms: int | None = None,
    shutdown_timeout_ms: int | None = None,
    metrics: bool = True,
    metric_exporter: MetricExporter | None = None,
    resource_attributes: Mapping[str, str] | None = None,
    set_global: bool = True,
    env: Mapping[str, str] | None = None,
) -> Telemetry:
    """Build a TracerProvider with a bounded batch processor (and a MeterProvider), install them.

    - `exporter`: `otlp`, `console`, `none`, `otlp_json_file` (alias `file`), or a SpanExporter
      instance of your own (wrapped with the same failure isolation).
    - `endpoint`/`protocol`/`headers`: OTLP destination; for `http/protobuf` the signal path
      (`/v1/traces`, `/v1/metrics`) is appended to the base URL.
    - `file_path`: the JSON-lines file of `otlp_json_file` (appended to; folders are created).
    - `max_queue_size`, `schedule_delay_ms`, `max_export_batch_size`, `export_timeout_ms`: batch
      limits; `export_timeout_ms` also bounds every single export call.
    - `shutdown_timeout_ms`: the longest `shutdown()` and `force_flush()` wait, also when the
      program exits without calling `shutdown()` (default 3000, JANUX_SHUTDOWN_TIMEOUT_MS).
    - `metrics`: also build a MeterProvider to the same destination; `metric_exporter` overrides it.
    - `set_global`: install the providers as the OpenTelemetry globals (the default); with False
      the caller passes `telemetry.tracer_provider` where it is needed.
    - `env`: the environment to read (default: os.environ); explicit arguments always win.

    Raises `TelemetryConfigError` (naming the argument) for an invalid explicit argument; a
    malformed environment variable is logged and its default used.
    """
    custom = exporter if isinstance(exporter, SpanExporter) else None
    quiet_exporter_repeats()  # the guard logs each failure once; the exporters would log every batch
    overrides = SettingsOverrides(
        service_name=service_name,
        exporter=exporter if isinstance(exporter, str) else None,
        endpoint=endpoint,
        protocol=protocol,
        file_path=file_path,
        headers=headers,
        max_queue_size=max_queue_size,
        schedule_delay_ms=schedule_delay_ms,
        max_export_batch_size=max_export_batch_size,
        export_timeout_ms=export_timeout_ms,
        shutdown_timeout_ms=shutdown_timeout_ms,
        metrics=metrics and (custom is None or metric_exporter is not None),
    )
    settings = resolve_settings(overrides, env)
    resource = _resource(settings, resource_attributes)
    span_exporter = custom if custom is not None else build_span_exporter(settings)
    # shutdown_on_exit=False: Telemetry's own exit hook shuts down both providers within one bound.
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    processor = None
    if span_exporter is not None:
        processor = BoundedSpanProcessor(span_exporter, settings.batch)
        tracer_provider.add_span_processor(processor)
    meter_provider = _meter_provider(settings, resource, metric_exporter)
    installed = _install(tracer_provider, meter_provider) if set_global else False
    return Telemetry(
        settings=settings,
        tracer_provider=tracer_provider,
        processor=processor,
        meter_provider=meter_provider,
        installed_globally=installed,
    )


def _resource(settings: TelemetrySettings, extra: Mapping[str, str] | None) -> Resource:
    """The resource, built from settings only (Resource.create would re-read os.environ)."""
    attributes: dict[str, str] = {
        TELEMETRY_SDK_LANGUAGE: "python",
        TELEMETRY_SDK_NAME: "opentelemetry",
        TELEMETRY_SDK_VERSION: sdk_version,
    }
    attributes.update(settings.resource_attributes)
    attributes.update(extra or {})
    attributes[SERVICE_NAME] = settings.service_name
    return Resource(attributes)


def _meter_provider(
    settings: TelemetrySettings, resource: Resource, custom: MetricExporter | None
) -> MeterProvider | None:
    if settings.metrics_exporter == "none":
        return None
    exporter = custom if custom is not None else build_metric_exporter(settings)
    if exporter is None:
        return None
    reader = PeriodicExportingMetricReader(
        GuardedMetricExporter(exporter, settings.metric_export_timeout_ms),
        export_interval_millis=settings.metric_export_interval_ms,
        export_timeout_millis=settings.metric_export_timeout_ms,
    )
    return MeterProvider(resource=resource, metric_readers=[reader], shutdown_on_exit=False)


def _install(tracer_provider: TracerProvider, meter_provider: MeterProvider | None) -> bool:
    """Make the providers global; OpenTelemetry allows that once per process, so say if it failed."""
    trace.set_tracer_provider(tracer_provider)
    installed = trace.get_tracer_provider() is tracer_provider
    if meter_provider is not None:
        otel_metrics.set_meter_provider(meter_provider)
        installed = installed and otel_metrics.get_meter_provider() is meter_provider
    if not installed:
        _log.warning(
            "telemetry: a global provider was already installed; this one is not global. "
            "Pass telemetry.tracer_provider explicitly (or configure telemetry once per process)."
        )
    return installed
