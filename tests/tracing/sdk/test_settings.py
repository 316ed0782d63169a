"""Resolution of telemetry settings: each OTel variable, its errors, and explicit overrides."""

from __future__ import annotations

import pytest

from janux.tracing.sdk.env import TelemetryConfigError
from janux.tracing.sdk.settings import (
    DEFAULT_SERVICE_NAME,
    SettingsOverrides,
    TelemetrySettings,
    resolve_settings,
)


def resolve(env: dict[str, str], **overrides: object) -> TelemetrySettings:
    return resolve_settings(SettingsOverrides(**overrides), env)  # type: ignore[arg-type]


def test_defaults_follow_the_otel_specification() -> None:
    settings = resolve({})
    assert settings.service_name == DEFAULT_SERVICE_NAME
    assert settings.traces_exporter == "otlp"
    assert settings.protocol == "http/protobuf"
    assert settings.traces_endpoint == "http://localhost:4318/v1/traces"
    assert settings.metrics_endpoint == "http://localhost:4318/v1/metrics"
    assert settings.batch.max_queue_size == 2048
    assert settings.batch.schedule_delay_ms == 5000
    assert settings.batch.max_export_batch_size == 512
    assert settings.batch.export_timeout_ms == 30000
    assert settings.otlp_timeout_ms == 10000
    assert settings.metrics_exporter == "otlp"
    assert settings.warnings == ()


def test_service_name_and_resource_attributes() -> None:
    settings = resolve(
        {"OTEL_SERVICE_NAME": "billing", "OTEL_RESOURCE_ATTRIBUTES": "team=ops, region=eu%2Cwest,k=a%3Db"}
    )
    assert settings.service_name == "billing"
    assert settings.resource_attributes == {"team": "ops", "region": "eu,west", "k": "a=b"}


def test_service_name_from_resource_attributes_when_no_service_variable() -> None:
    settings = resolve({"OTEL_RESOURCE_ATTRIBUTES": "service.name=from-attrs,team=ops"})
    assert settings.service_name == "from-attrs"
    assert "service.name" not in settings.resource_attributes


def test_explicit_service_name_wins() -> None:
    settings = resolve({"OTEL_SERVICE_NAME": "env"}, service_name="arg")
    assert settings.service_name == "arg"


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("otlp", "otlp"),
        ("console", "console"),
        ("none", "none"),
        ("otlp_json_file", "otlp_json_file"),
        ("file", "otlp_json_file"),
        ("OTLP", "otlp"),
    ],
)
def test_traces_exporter_variable(value: str, kind: str) -> None:
    assert resolve({"OTEL_TRACES_EXPORTER": value}).traces_exporter == kind


def test_unknown_traces_exporter_warns_names_the_variable_and_uses_default() -> None:
    settings = resolve({"OTEL_TRACES_EXPORTER": "zipkin"})
    assert settings.traces_exporter == "otlp"
    assert any("OTEL_TRACES_EXPORTER" in warning and "zipkin" in warning for warning in settings.warnings)


def test_several_traces_exporters_are_refused_with_a_warning() -> None:
    settings = resolve({"OTEL_TRACES_EXPORTER": "otlp,console"})
    assert settings.traces_exporter == "otlp"
    assert any("exactly one" in warning for warning in settings.warnings)


def test_explicit_exporter_wins_and_bad_explicit_exporter_raises() -> None:
    assert resolve({"OTEL_TRACES_EXPORTER": "console"}, exporter="none").traces_exporter == "none"
    with pytest.raises(TelemetryConfigError, match="exporter"):
        resolve({}, exporter="zipkin")


def test_sdk_disabled_turns_everything_off() -> None:
    settings = resolve({"OTEL_SDK_DISABLED": "true"})
    assert settings.traces_exporter == "none"
    assert settings.metrics_exporter == "none"


def test_grpc_protocol_uses_the_base_endpoint_as_is() -> None:
    settings = resolve({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert settings.protocol == "grpc"
    assert settings.traces_endpoint == "http://localhost:4317"
    settings = resolve(
        {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}
    )
    assert settings.traces_endpoint == "http://c:4317"
    assert settings.metrics_endpoint == "http://c:4317"


def test_signal_protocol_variable_wins_over_the_general_one() -> None:
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}
    assert resolve(env).protocol == "http/protobuf"


def test_unsupported_protocol_warns_and_falls_back() -> None:
    settings = resolve({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
    assert settings.protocol == "http/protobuf"
    assert any("OTEL_EXPORTER_OTLP_PROTOCOL" in warning for warning in settings.warnings)
    with pytest.raises(TelemetryConfigError, match="protocol"):
        resolve({}, protocol="http/json")


def test_http_base_endpoint_gets_signal_paths_appended() -> None:
    settings = resolve({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"})
    assert settings.traces_endpoint == "http://collector:4318/v1/traces"
    assert settings.metrics_endpoint == "http://collector:4318/v1/metrics"


def test_signal_endpoint_is_used_exactly_as_given() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:4318",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:9999/custom",
    }
    settings = resolve(env)
    assert settings.traces_endpoint == "http://traces:9999/custom"
    assert settings.metrics_endpoint == "http://base:4318/v1/metrics"


def test_explicit_endpoint_overrides_both_variables_and_may_name_the_signal_path() -> None:
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:1/x"}
    settings = resolve(env, endpoint="http://arg:4318/v1/traces")
    assert settings.traces_endpoint == "http://arg:4318/v1/traces"
    assert settings.metrics_endpoint == "http://arg:4318/v1/metrics"


def test_malformed_endpoints() -> None:
    settings = resolve({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"})
    assert settings.traces_endpoint == "http://localhost:4318/v1/traces"
    assert any("OTEL_EXPORTER_OTLP_ENDPOINT" in warning for warning in settings.warnings)
    with pytest.raises(TelemetryConfigError, match="endpoint"):
        resolve({}, endpoint="collector:4318")


def test_headers_variables_merge_and_decode() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20abc,x-team=ops",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-team=traces,broken-entry",
    }
    settings = resolve(env)
    assert settings.headers == {"authorization": "Bearer abc", "x-team": "traces"}
    assert any(
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS" in warning and "broken-entry" in warning
        for warning in settings.warnings
    )
    assert resolve(env, headers={"a": "b"}).headers == {"a": "b"}


def test_otlp_timeout_variables() -> None:
    assert resolve({"OTEL_EXPORTER_OTLP_TIMEOUT": "2500"}).otlp_timeout_ms == 2500
    env = {"OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "700"}
    assert resolve(env).otlp_timeout_ms == 700


@pytest.mark.parametrize(
    ("variable", "attribute", "value"),
    [
        ("OTEL_BSP_MAX_QUEUE_SIZE", "max_queue_size", 4096),
        ("OTEL_BSP_SCHEDULE_DELAY", "schedule_delay_ms", 250),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "max_export_batch_size", 64),
        ("OTEL_BSP_EXPORT_TIMEOUT", "export_timeout_ms", 1500),
    ],
)
def test_batch_variables_and_explicit_overrides(variable: str, attribute: str, value: int) -> None:
    settings = resolve({variable: str(value)})
    assert getattr(settings.batch, attribute) == value
    overridden = resolve({variable: str(value)}, **{attribute: 7})
    assert getattr(overridden.batch, attribute) == 7


@pytest.mark.parametrize("bad", ["abc", "-5", "0", "1.5"])
def test_bad_batch_variable_warns_and_keeps_default(bad: str) -> None:
    settings = resolve({"OTEL_BSP_MAX_QUEUE_SIZE": bad})
    assert settings.batch.max_queue_size == 2048
    assert any("OTEL_BSP_MAX_QUEUE_SIZE" in warning for warning in settings.warnings)


@pytest.mark.parametrize("bad", [0, -1, True])
def test_bad_explicit_batch_argument_raises_naming_it(bad: int) -> None:
    with pytest.raises(TelemetryConfigError, match="max_queue_size"):
        resolve({}, max_queue_size=bad)


def test_batch_size_never_exceeds_queue() -> None:
    settings = resolve({}, max_queue_size=10)
    assert settings.batch.max_export_batch_size == 10


def test_trace_file_variable_and_argument() -> None:
    assert resolve({"JANUX_TRACES_FILE": "/tmp/a.jsonl"}).traces_file == "/tmp/a.jsonl"
    assert resolve({"JANUX_TRACES_FILE": "/tmp/a.jsonl"}, file_path="b.jsonl").traces_file == "b.jsonl"


def test_metrics_follow_traces_unless_their_variable_says_otherwise() -> None:
    assert resolve({"OTEL_TRACES_EXPORTER": "console"}).metrics_exporter == "console"
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "none"}
    assert resolve(env).metrics_exporter == "none"
    assert resolve({}, metrics=False).metrics_exporter == "none"
    assert resolve({"JANUX_METRICS_FILE": "m.jsonl"}).metrics_file == "m.jsonl"
    settings = resolve({"OTEL_METRIC_EXPORT_INTERVAL": "1000", "OTEL_METRIC_EXPORT_TIMEOUT": "900"})
    assert (settings.metric_export_interval_ms, settings.metric_export_timeout_ms) == (1000, 900)


def test_bad_boolean_variable_is_named() -> None:
    settings = resolve({"OTEL_SDK_DISABLED": "maybe"})
    assert settings.traces_exporter == "otlp"
    assert any("OTEL_SDK_DISABLED" in warning for warning in settings.warnings)
