"""Telemetry settings for `configure_telemetry`: explicit arguments over OTel environment variables.

The environment follows the OpenTelemetry SDK conventions (`OTEL_SERVICE_NAME`,
`OTEL_EXPORTER_OTLP_*`, `OTEL_BSP_*`, ...) plus two Janux variables for the JSON-lines file
destinations. An explicit argument always wins over its variable. A malformed variable never
breaks the application: it is reported (named) in `TelemetrySettings.warnings`, logged, and its
default used, as the OTel specification asks. A malformed explicit argument is a programming
error and raises `TelemetryConfigError` naming the argument.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal
from urllib.parse import unquote, urlparse

from janux.tracing.sdk.env import (
    BoundedInt,
    EnvReader,
    TelemetryConfigError,
    parse_key_values,
)

_log = logging.getLogger(__name__)

ExporterKind = Literal["otlp", "console", "none", "otlp_json_file"]
"""Where spans (or metrics) go: OTLP over the network, stdout, nowhere, or an OTLP-JSON-lines file."""

Protocol = Literal["grpc", "http/protobuf"]
"""OTLP transport."""

EXPORTER_KINDS: Final[tuple[ExporterKind, ...]] = ("otlp", "console", "none", "otlp_json_file")
"""Accepted values of OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER / the `exporter` argument."""

EXPORTER_ALIASES: Final[Mapping[str, ExporterKind]] = {"file": "otlp_json_file", "jsonl": "otlp_json_file"}
"""Shorter spellings accepted for the JSON-lines file exporter."""

PROTOCOLS: Final[tuple[Protocol, ...]] = ("grpc", "http/protobuf")
"""Accepted OTLP protocols (OTLP/HTTP JSON is not offered: use the file exporter for JSON)."""

DEFAULT_SERVICE_NAME: Final = "unknown_service:python"
"""The OTel specification's service name when none is configured."""

DEFAULT_GRPC_ENDPOINT: Final = "http://localhost:4317"
"""OTLP/gRPC default endpoint (OTel specification)."""

DEFAULT_HTTP_ENDPOINT: Final = "http://localhost:4318"
"""OTLP/HTTP default base endpoint (OTel specification); signal paths are appended to it."""

TRACES_PATH: Final = "/v1/traces"
"""OTLP/HTTP path of the traces signal."""

METRICS_PATH: Final = "/v1/metrics"
"""OTLP/HTTP path of the metrics signal."""

JANUX_TRACES_FILE_ENV: Final = "JANUX_TRACES_FILE"
"""Path of the OTLP-JSON-lines file the `otlp_json_file` trace exporter appends to."""

JANUX_METRICS_FILE_ENV: Final = "JANUX_METRICS_FILE"
"""Path of the OTLP-JSON-lines file for metrics when spans go to a file (unset: no file metrics)."""

DEFAULT_TRACES_FILE: Final = "janux-traces.jsonl"
"""File written by the `otlp_json_file` exporter when no path is configured."""

JANUX_SHUTDOWN_TIMEOUT_ENV: Final = "JANUX_SHUTDOWN_TIMEOUT_MS"
"""Longest `Telemetry.shutdown()` / `force_flush()` (and the exit of a program that calls neither) waits."""

DEFAULT_SHUTDOWN_TIMEOUT_MS: Final = 3000
"""Default of `shutdown_timeout_ms`: an agent program does not hang on exit for a dead collector."""


@dataclass(frozen=True, kw_only=True)
class BatchSettings:
    """Batch span processor limits (OTEL_BSP_*), all positive."""

    max_queue_size: int = 2048
    """Spans held while waiting for export; beyond it new spans are dropped and counted."""
    schedule_delay_ms: int = 5000
    """Longest wait between two exports."""
    max_export_batch_size: int = 512
    """Spans per export call (never more than max_queue_size)."""
    export_timeout_ms: int = 30000
    """Longest wait for the exporter at flush and shutdown (and for each metric export); a batch a
    hanging export still holds when shutdown ends is counted as dropped."""


@dataclass(frozen=True, kw_only=True)
class TelemetrySettings:
    """Everything `configure_telemetry` needs, fully resolved (no further env lookups)."""

    service_name: str = DEFAULT_SERVICE_NAME
    """`service.name` of the resource."""
    resource_attributes: Mapping[str, str] = field(default_factory=dict)
    """Extra resource attributes (OTEL_RESOURCE_ATTRIBUTES), without `service.name`."""
    traces_exporter: ExporterKind = "otlp"
    """Span destination."""
    protocol: Protocol = "http/protobuf"
    """OTLP transport for spans and metrics."""
    traces_endpoint: str = DEFAULT_HTTP_ENDPOINT + TRACES_PATH
    """Full OTLP endpoint for spans (for HTTP: including `/v1/traces`)."""
    metrics_endpoint: str = DEFAULT_HTTP_ENDPOINT + METRICS_PATH
    """Full OTLP endpoint for metrics."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Headers (or gRPC metadata) sent with every OTLP request."""
    otlp_timeout_ms: int = 10000
    """Timeout of one OTLP request, retries included (OTEL_EXPORTER_OTLP_TIMEOUT)."""
    traces_file: str = DEFAULT_TRACES_FILE
    """File of the `otlp_json_file` span exporter."""
    batch: BatchSettings = field(default_factory=BatchSettings)
    """Batch span processor limits."""
    metrics_exporter: ExporterKind = "otlp"
    """Metric destination (`none` turns metrics off)."""
    metrics_file: str | None = None
    """File of the `otlp_json_file` metric exporter; None turns file metrics off."""
    metric_export_interval_ms: int = 60000
    """Interval between two metric exports (OTEL_METRIC_EXPORT_INTERVAL)."""
    metric_export_timeout_ms: int = 30000
    """Longest one metric export may take (OTEL_METRIC_EXPORT_TIMEOUT)."""
    shutdown_timeout_ms: int = DEFAULT_SHUTDOWN_TIMEOUT_MS
    """Longest wait of `shutdown()`, `force_flush()` and of the flush when the program exits
    (JANUX_SHUTDOWN_TIMEOUT_MS); what is still queued then is dropped and counted."""
    warnings: tuple[str, ...] = ()
    """Malformed environment values that were ignored, each naming its variable."""


@dataclass(frozen=True, kw_only=True)
class SettingsOverrides:
    """Explicit arguments of `configure_telemetry`; None means "take it from the environment"."""

    service_name: str | None = None
    exporter: str | None = None
    endpoint: str | None = None
    protocol: str | None = None
    file_path: str | os.PathLike[str] | None = None
    headers: Mapping[str, str] | None = None
    max_queue_size: int | None = None
    schedule_delay_ms: int | None = None
    max_export_batch_size: int | None = None
    export_timeout_ms: int | None = None
    shutdown_timeout_ms: int | None = None
    metrics: bool = True


def resolve_settings(
    overrides: SettingsOverrides | None = None, env: Mapping[str, str] | None = None
) -> TelemetrySettings:
    """Resolve settings from explicit overrides, then `env` (default: os.environ), then defaults."""
    given = overrides or SettingsOverrides()
    reader = EnvReader(os.environ if env is None else env)
    disabled = reader.flag("OTEL_SDK_DISABLED")
    traces_kind = _traces_kind(given, reader, disabled)
    protocol = _protocol(given, reader, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
    service_name, resource = _resource(given, reader)
    settings = TelemetrySettings(
        service_name=service_name,
        resource_attributes=resource,
        traces_exporter=traces_kind,
        protocol=protocol,
        traces_endpoint=_endpoint(given, reader, protocol, "TRACES", TRACES_PATH),
        metrics_endpoint=_endpoint(given, reader, protocol, "METRICS", METRICS_PATH),
        headers=_headers(given, reader),
        otlp_timeout_ms=reader.integer(
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", default=10000
        ),
        traces_file=_traces_file(given, reader),
        batch=_batch(given, reader),
        metrics_exporter=_metrics_kind(given, reader, traces_kind, disabled),
        metrics_file=reader.text(JANUX_METRICS_FILE_ENV),
        metric_export_interval_ms=reader.integer("OTEL_METRIC_EXPORT_INTERVAL", default=60000),
        metric_export_timeout_ms=reader.integer("OTEL_METRIC_EXPORT_TIMEOUT", default=30000),
        shutdown_timeout_ms=BoundedInt.pick(given.shutdown_timeout_ms, "shutdown_timeout_ms", reader,
                                            JANUX_SHUTDOWN_TIMEOUT_ENV, DEFAULT_SHUTDOWN_TIMEOUT_MS),
        warnings=reader.warnings,
    )
    for warning in settings.warnings:
        _log.warning("telemetry configuration: %s", warning)
    return settings


def normalize_exporter_kind(value: str, field_name: str) -> ExporterKind:
    """Map an exporter name (any case, aliases allowed) to its kind; raise naming `field_name`."""
    name = value.strip().lower()
    name = EXPORTER_ALIASES.get(name, name)
    for kind in EXPORTER_KINDS:
        if name == kind:
            return kind
    allowed = ", ".join((*EXPORTER_KINDS, *EXPORTER_ALIASES))
    raise TelemetryConfigError(f"{field_name}: unknown exporter {value!r} (expected one of {allowed})")


def normalize_protocol(value: str, field_name: str) -> Protocol:
    """Map an OTLP protocol name to its value; raise naming `field_name`."""
    name = value.strip().lower()
    for protocol in PROTOCOLS:
        if name == protocol:
            return protocol
    raise TelemetryConfigError(
        f"{field_name}: unsupported OTLP protocol {value!r} (expected one of {', '.join(PROTOCOLS)})"
    )


def _traces_kind(given: SettingsOverrides, reader: EnvReader, disabled: bool) -> ExporterKind:
    if given.exporter is not None:
        return normalize_exporter_kind(given.exporter, "exporter")
    if disabled:
        return "none"
    return _env_kind(reader, "OTEL_TRACES_EXPORTER", default="otlp")


def _metrics_kind(
    given: SettingsOverrides, reader: EnvReader, traces_kind: ExporterKind, disabled: bool
) -> ExporterKind:
    if not given.metrics or disabled:
        return "none"
    # Metrics follow the spans' destination unless their own variable says otherwise.
    return _env_kind(reader, "OTEL_METRICS_EXPORTER", default=traces_kind)


def _env_kind(reader: EnvReader, name: str, *, default: ExporterKind) -> ExporterKind:
    raw = reader.text(name)
    if raw is None:
        return default
    names = [part for part in (p.strip() for p in raw.split(",")) if part]
    if len(names) != 1:
        reader.warn(f"{name}: exactly one exporter is supported, got {raw!r}; using {default!r}")
        return default
    try:
        return normalize_exporter_kind(names[0], name)
    except TelemetryConfigError as error:
        reader.warn(f"{error}; using {default!r}")
        return default


def _protocol(given: SettingsOverrides, reader: EnvReader, signal_var: str) -> Protocol:
    if given.protocol is not None:
        return normalize_protocol(given.protocol, "protocol")
    for name in (signal_var, "OTEL_EXPORTER_OTLP_PROTOCOL"):
        raw = reader.text(name)
        if raw is None:
            continue
        try:
            return normalize_protocol(raw, name)
        except TelemetryConfigError as error:
            reader.warn(f"{error}; using 'http/protobuf'")
            return "http/protobuf"
    return "http/protobuf"


def _resource(given: SettingsOverrides, reader: EnvReader) -> tuple[str, dict[str, str]]:
    attributes = parse_key_values(reader, "OTEL_RESOURCE_ATTRIBUTES")
    from_attributes = attributes.pop("service.name", None)
    if given.service_name is not None:
        if not given.service_name.strip():
            raise TelemetryConfigError("service_name: must not be empty")
        return given.service_name, attributes
    return reader.text("OTEL_SERVICE_NAME") or from_attributes or DEFAULT_SERVICE_NAME, attributes


def _endpoint(given: SettingsOverrides, reader: EnvReader, protocol: Protocol, signal: str, path: str) -> str:
    """The full endpoint of one signal, following the OTel rules for base vs per-signal variables."""
    if given.endpoint is not None:
        return _signal_url(_checked_url(given.endpoint, "endpoint"), protocol, path)
    own = reader.text(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    if own is not None and _valid_url(own):
        return own  # per-signal variables are used as they are
    if own is not None:
        reader.warn(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT: not an http(s) URL: {own!r}; ignored")
    base = reader.text("OTEL_EXPORTER_OTLP_ENDPOINT")
    if base is not None and not _valid_url(base):
        reader.warn(f"OTEL_EXPORTER_OTLP_ENDPOINT: not an http(s) URL: {base!r}; ignored")
        base = None
    if base is None:
        base = DEFAULT_GRPC_ENDPOINT if protocol == "grpc" else DEFAULT_HTTP_ENDPOINT
    return _signal_url(base, protocol, path)


def _signal_url(base: str, protocol: Protocol, path: str) -> str:
    if protocol == "grpc":
        return base
    trimmed = base.rstrip("/")
    # An explicit endpoint may already name a signal path: keep the base and swap the path.
    for known in (TRACES_PATH, METRICS_PATH):
        if trimmed.endswith(known):
            trimmed = trimmed[: -len(known)]
    return trimmed + path


def _valid_url(value: str) -> bool:
    parsed = urlparse(value)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc)


def _checked_url(value: str, field_name: str) -> str:
    if not _valid_url(value):
        raise TelemetryConfigError(f"{field_name}: expected an http:// or https:// URL, got {value!r}")
    return value


def _headers(given: SettingsOverrides, reader: EnvReader) -> dict[str, str]:
    if given.headers is not None:
        return {str(key): str(value) for key, value in given.headers.items()}
    headers = parse_key_values(reader, "OTEL_EXPORTER_OTLP_HEADERS")
    headers.update(parse_key_values(reader, "OTEL_EXPORTER_OTLP_TRACES_HEADERS"))
    return headers


def _traces_file(given: SettingsOverrides, reader: EnvReader) -> str:
    if given.file_path is not None:
        path = os.fspath(given.file_path)
        if not path.strip():
            raise TelemetryConfigError("file_path: must not be empty")
        return path
    return unquote(reader.text(JANUX_TRACES_FILE_ENV) or DEFAULT_TRACES_FILE)


def _batch(given: SettingsOverrides, reader: EnvReader) -> BatchSettings:
    defaults = BatchSettings()
    queue = BoundedInt.pick(
        given.max_queue_size, "max_queue_size", reader, "OTEL_BSP_MAX_QUEUE_SIZE", defaults.max_queue_size
    )
    batch_size = BoundedInt.pick(
        given.max_export_batch_size,
        "max_export_batch_size",
        reader,
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        defaults.max_export_batch_size,
    )
    return BatchSettings(
        max_queue_size=queue,
        schedule_delay_ms=BoundedInt.pick(
            given.schedule_delay_ms,
            "schedule_delay_ms",
            reader,
            "OTEL_BSP_SCHEDULE_DELAY",
            defaults.schedule_delay_ms,
        ),
        # The SDK refuses a batch larger than the queue; clamp instead of failing the app.
        max_export_batch_size=min(batch_size, queue),
        export_timeout_ms=BoundedInt.pick(
            given.export_timeout_ms,
            "export_timeout_ms",
            reader,
            "OTEL_BSP_EXPORT_TIMEOUT",
            defaults.export_timeout_ms,
        ),
    )
