"""Building the raw span and metric exporters named by resolved `TelemetrySettings`.

Every value is passed explicitly, so the OTLP exporters do not go back to the environment for
anything `resolve_settings` already decided (explicit arguments must win over variables).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricExporter
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter

from janux.tracing.sdk.env import TelemetryConfigError
from janux.tracing.sdk.settings import TelemetrySettings


def build_span_exporter(settings: TelemetrySettings) -> SpanExporter | None:
    """The span exporter for `settings.traces_exporter`, or None for `none`."""
    kind = settings.traces_exporter
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter()
    if kind == "otlp_json_file":
        return _file_span_exporter(settings.traces_file, "JANUX_TRACES_FILE / file_path")
    exporter: SpanExporter = _otlp_exporter(settings, "traces")
    return exporter


def build_metric_exporter(settings: TelemetrySettings) -> MetricExporter | None:
    """The metric exporter for `settings.metrics_exporter`, or None when metrics are off.

    A JSON-lines destination gets metrics only when JANUX_METRICS_FILE names their own file, so
    a trace file stays a file of spans that every OTLP-JSON trace reader accepts.
    """
    kind = settings.metrics_exporter
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleMetricExporter()
    if kind == "otlp_json_file":
        if settings.metrics_file is None:
            return None
        return _file_metric_exporter(settings.metrics_file)
    exporter: MetricExporter = _otlp_exporter(settings, "metrics")
    return exporter


def _open_parent(path: str, field_name: str) -> str:
    target = Path(path).expanduser()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise TelemetryConfigError(f"{field_name}: cannot create the folder of {path!r}: {error}") from error
    return os.fspath(target)


def _file_span_exporter(path: str, field_name: str) -> SpanExporter:
    from opentelemetry.exporter.otlp.json.file import FileSpanExporter

    target = _open_parent(path, field_name)
    try:
        return FileSpanExporter(target)
    except OSError as error:
        raise TelemetryConfigError(f"{field_name}: cannot open {path!r} for appending: {error}") from error


def _file_metric_exporter(path: str) -> MetricExporter:
    from opentelemetry.exporter.otlp.json.file import FileMetricExporter

    target = _open_parent(path, "JANUX_METRICS_FILE")
    try:
        return FileMetricExporter(target)
    except OSError as error:
        message = f"JANUX_METRICS_FILE: cannot open {path!r} for appending: {error}"
        raise TelemetryConfigError(message) from error


_OTLP_CLASSES: dict[tuple[str, str], tuple[str, str]] = {
    ("grpc", "traces"): ("opentelemetry.exporter.otlp.proto.grpc.trace_exporter", "OTLPSpanExporter"),
    ("grpc", "metrics"): ("opentelemetry.exporter.otlp.proto.grpc.metric_exporter", "OTLPMetricExporter"),
    ("http/protobuf", "traces"): (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "OTLPSpanExporter",
    ),
    ("http/protobuf", "metrics"): (
        "opentelemetry.exporter.otlp.proto.http.metric_exporter",
        "OTLPMetricExporter",
    ),
}
"""(protocol, signal) -> (module, class) of the OTLP exporter; imported only when chosen."""


def _otlp_exporter(settings: TelemetrySettings, signal: str) -> Any:
    """The OTLP exporter of `signal` (`traces` or `metrics`) for the configured protocol."""
    module, name = _OTLP_CLASSES[(settings.protocol, signal)]
    endpoint = settings.traces_endpoint if signal == "traces" else settings.metrics_endpoint
    options: dict[str, Any] = {
        "endpoint": endpoint,
        "headers": dict(settings.headers),
        "timeout": settings.otlp_timeout_ms / 1000,
    }
    if settings.protocol == "grpc":
        options["insecure"] = endpoint.startswith("http://")  # plaintext unless https:// was asked for
    return getattr(importlib.import_module(module), name)(**options)
