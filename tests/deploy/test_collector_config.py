"""deploy/otel-collector.yaml: pipelines are well-formed and agree with the compose services."""

from __future__ import annotations

from typing import Any

import pytest

from .files import COLLECTOR, COMPOSE, environment, load_yaml, url_parts

SECTIONS = ("receivers", "processors", "exporters")


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return load_yaml(COLLECTOR)


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return dict(load_yaml(COMPOSE)["services"])


def test_every_pipeline_names_defined_components(config: dict[str, Any]) -> None:
    pipelines = config["service"]["pipelines"]
    assert pipelines, "no pipeline"
    for name, pipeline in pipelines.items():
        assert name.split("/")[0] in ("traces", "metrics", "logs")
        assert pipeline.get("receivers") and pipeline.get("exporters"), f"{name}: receivers and exporters"
        for section in SECTIONS:
            for component in pipeline.get(section, []):
                assert component in config.get(section, {}), f"{name}: {section} {component} is not defined"


def test_every_defined_component_is_used(config: dict[str, Any]) -> None:
    pipelines = config["service"]["pipelines"].values()
    for section in SECTIONS:
        used = {component for pipeline in pipelines for component in pipeline.get(section, [])}
        assert set(config.get(section, {})) == used, f"unused {section}: {set(config[section]) - used}"
    for extension in config["service"]["extensions"]:
        assert extension in config["extensions"]


def test_memory_limiter_runs_first(config: dict[str, Any]) -> None:
    for name, pipeline in config["service"]["pipelines"].items():
        assert pipeline["processors"][0] == "memory_limiter", name


def test_otlp_receiver_listens_where_compose_publishes(
    config: dict[str, Any], services: dict[str, Any]
) -> None:
    protocols = config["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"] == "0.0.0.0:4317"
    assert protocols["http"]["endpoint"] == "0.0.0.0:4318"
    published = {p.split(":")[-1] for p in services["otel-collector"]["ports"]}
    assert {"4317", "4318"} <= published


def test_traces_go_to_clickhouse_and_to_json_lines(config: dict[str, Any]) -> None:
    exporters = config["service"]["pipelines"]["traces"]["exporters"]
    assert "clickhouse" in exporters
    assert any(name.split("/")[0] == "file" for name in exporters)


def test_dashboard_reads_what_the_clickhouse_exporter_writes(
    config: dict[str, Any], services: dict[str, Any]
) -> None:
    exporter = config["exporters"]["clickhouse"]
    scheme, host, port = url_parts(exporter["endpoint"])
    dashboard = environment(services["dashboard"])
    server = environment(services["clickhouse"])
    assert dashboard["JANUX_SOURCE"] == "clickhouse"
    assert scheme == "http"  # the dashboard's client speaks HTTP too, so both use one port
    assert host == dashboard["JANUX_CLICKHOUSE_HOST"] and host in services
    assert port == int(dashboard["JANUX_CLICKHOUSE_PORT"])
    assert exporter["database"] == dashboard["JANUX_CLICKHOUSE_DATABASE"] == server["CLICKHOUSE_DB"]
    assert exporter["traces_table_name"] == dashboard["JANUX_CLICKHOUSE_TABLE"] == "otel_traces"
    assert exporter["create_schema"] is True
    assert port in {int(p.split(":")[-1]) for p in services["clickhouse"]["ports"]}


def test_clickhouse_credentials_are_environment_references(
    config: dict[str, Any], services: dict[str, Any]
) -> None:
    exporter = config["exporters"]["clickhouse"]
    assert exporter["username"] == "${env:CLICKHOUSE_USER}"
    assert exporter["password"] == "${env:CLICKHOUSE_PASSWORD}"
    collector_env = services["otel-collector"]["environment"]
    assert {"CLICKHOUSE_USER", "CLICKHOUSE_PASSWORD"} <= set(collector_env)


def test_file_exporters_write_to_the_shared_volume(config: dict[str, Any], services: dict[str, Any]) -> None:
    collector = services["otel-collector"]
    collector_mounts = {entry.split(":")[1]: entry.split(":")[0] for entry in collector["volumes"]}
    init = services["otel-files-init"]
    init_mounts = {entry.split(":")[1]: entry.split(":")[0] for entry in init["volumes"]}
    for name, exporter in config["exporters"].items():
        if name.split("/")[0] != "file":
            continue
        folder = exporter["path"].rsplit("/", 1)[0]
        assert folder in collector_mounts, f"{name}: {folder} is not a mounted volume"
        assert init_mounts.get(folder) == collector_mounts[folder], f"{name}: volume not handed to uid 10001"
    assert init["command"][:3] == ["chown", "-R", "10001:10001"]
    assert (
        services["otel-collector"]["depends_on"]["otel-files-init"]["condition"]
        == "service_completed_successfully"
    )


def test_the_dashboards_own_config_reader_points_at_the_exporters_table(
    config: dict[str, Any], services: dict[str, Any]
) -> None:
    """Read the dashboard service's environment with the dashboard's real parser, not by key names."""
    from janux.tracing.sources.source_config import config_from_env

    source = config_from_env(environment(services["dashboard"]), argv=[])
    exporter = config["exporters"]["clickhouse"]
    _, host, port = url_parts(exporter["endpoint"])
    assert source.kind == "clickhouse"
    settings = source.clickhouse
    assert (settings.host, settings.port, settings.database, settings.table) == (
        host,
        port,
        exporter["database"],
        exporter["traces_table_name"],
    )
    assert settings.user == environment(services["otel-collector"])["CLICKHOUSE_USER"]
