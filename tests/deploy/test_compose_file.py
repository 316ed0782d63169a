"""docker-compose.yml: services, pinned images, ports, health checks, dependencies, volumes, secrets."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest

from .files import (
    COLLECTOR,
    COMPOSE,
    ENV_EXAMPLE,
    ROOT,
    environment,
    interpolate,
    load_yaml,
    ports,
    raw_environment,
    scalars,
    url_parts,
)

EXPECTED_SERVICES = {"otel-collector", "clickhouse", "dashboard", "demo", "otel-files-init", "deriver"}
LONG_RUNNING_PROBED = ("clickhouse", "dashboard", "deriver")
"""Services Docker health-checks itself (the collector image has no shell: see its comment)."""

SECRET_KEY = re.compile(r"(password|passwd|secret|token|api[_-]?key|credential)", re.IGNORECASE)
SECRET_PREFIX = re.compile(
    r"(sk-[A-Za-z0-9]{16,}|ghp_[A-Za-z0-9]{20,}|AKIA[A-Z0-9]{12,}|xox[bp]-|Bearer\s+\S+)"
)
ENV_REFERENCE = re.compile(r"\$\{(env:)?[A-Z_][A-Z0-9_]*(:-)?\}")
"""A secret-named value may only be an environment reference with an empty default."""


def looks_like_a_token(value: str) -> bool:
    """A known key prefix, or a long random-looking word (mixed case and digits)."""
    if SECRET_PREFIX.search(value):
        return True
    for word in re.split(r"[^A-Za-z0-9+=_]", value):
        if (
            len(word) >= 24
            and re.search(r"\d", word)
            and re.search(r"[A-Z]", word)
            and re.search(r"[a-z]", word)
        ):
            return True
    return False


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_yaml(COMPOSE)


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    return dict(compose["services"])


def test_the_four_services_and_the_volume_helper(services: dict[str, Any]) -> None:
    assert set(services) == EXPECTED_SERVICES


def test_every_image_is_pinned(services: dict[str, Any]) -> None:
    for name, service in services.items():
        image = service.get("image")
        assert image, f"{name}: no image (a built service must still name its tag)"
        repository, _, tag = image.rpartition(":")
        assert repository and "/" not in tag, f"{name}: image {image!r} has no tag"
        assert tag != "latest" and re.fullmatch(r"[0-9][\w.-]*", tag), f"{name}: {image!r} is not pinned"


def test_built_image_tag_is_the_package_version(services: dict[str, Any]) -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for name in ("dashboard", "demo", "deriver"):
        assert services[name]["image"] == f"janux:{version}"
        assert services[name]["build"]["dockerfile"] == "Dockerfile"
        assert (ROOT / services[name]["build"]["context"] / "Dockerfile").is_file()


def test_ports_are_published_on_loopback_only(services: dict[str, Any]) -> None:
    for name, service in services.items():
        for mapping in ports(service):
            assert mapping.host_ip == "127.0.0.1", f"{name}: {mapping} is published beyond loopback"


def test_collector_takes_otlp_grpc_and_http(services: dict[str, Any]) -> None:
    published = {(m.host_port, m.container_port) for m in ports(services["otel-collector"])}
    assert {(4317, 4317), (4318, 4318)} <= published


def test_dashboard_port_and_clickhouse_http_port(services: dict[str, Any]) -> None:
    assert [m.container_port for m in ports(services["dashboard"])] == [8501]
    assert 8123 in [m.container_port for m in ports(services["clickhouse"])]


@pytest.mark.parametrize("name", LONG_RUNNING_PROBED)
def test_long_running_services_have_health_checks(services: dict[str, Any], name: str) -> None:
    check = services[name]["healthcheck"]
    assert check["test"][0] in ("CMD", "CMD-SHELL") and len(check["test"]) > 1
    for key in ("interval", "timeout", "retries"):
        assert key in check, f"{name}: healthcheck has no {key}"
    assert services[name].get("restart") == "unless-stopped"


def test_dashboard_health_check_probes_streamlit(services: dict[str, Any]) -> None:
    probe = " ".join(services["dashboard"]["healthcheck"]["test"])
    assert "http://127.0.0.1:8501/_stcore/health" in probe


def test_clickhouse_health_check_uses_its_http_ping(services: dict[str, Any]) -> None:
    probe = " ".join(services["clickhouse"]["healthcheck"]["test"])
    assert "127.0.0.1:8123/ping" in probe


def test_demo_waits_for_the_collector_health_extension(services: dict[str, Any]) -> None:
    collector = load_yaml(COLLECTOR)
    extension = collector["extensions"]["health_check"]["endpoint"]
    command = services["demo"]["command"]
    wait_url = command[command.index("--wait-for") + 1]
    _, host, port = url_parts(wait_url)
    assert host == "otel-collector"
    assert str(port) == extension.rsplit(":", 1)[1]
    assert "health_check" in collector["service"]["extensions"]


def test_dependencies_exist_and_wait_for_health(services: dict[str, Any]) -> None:
    allowed = {"service_started", "service_healthy", "service_completed_successfully"}
    for name, service in services.items():
        for target, rule in service.get("depends_on", {}).items():
            assert target in services, f"{name} depends on unknown service {target}"
            assert rule["condition"] in allowed
            if rule["condition"] == "service_healthy":
                assert "healthcheck" in services[target], f"{name} waits for {target}, which has no check"
    assert services["dashboard"]["depends_on"]["clickhouse"]["condition"] == "service_healthy"
    assert services["otel-collector"]["depends_on"]["clickhouse"]["condition"] == "service_healthy"
    assert "otel-collector" in services["demo"]["depends_on"]
    assert services["demo"]["restart"] == "no"


def test_named_volumes_are_declared_and_clickhouse_persists(compose: dict[str, Any]) -> None:
    declared = set(compose["volumes"])
    for name, service in compose["services"].items():
        for entry in service.get("volumes", []):
            source = entry.split(":")[0]
            if not source.startswith((".", "/")):
                assert source in declared, f"{name}: volume {source} is not declared"
            else:
                assert (ROOT / source).exists(), f"{name}: bind source {source} does not exist"
    targets = [entry.split(":")[1] for entry in compose["services"]["clickhouse"]["volumes"]]
    assert "/var/lib/clickhouse" in targets


def test_collector_mounts_the_config_it_is_told_to_read(services: dict[str, Any]) -> None:
    collector = services["otel-collector"]
    config_arg = next(arg for arg in collector["command"] if arg.startswith("--config="))
    target = config_arg.split("=", 1)[1]
    mounts = {entry.split(":")[1]: entry.split(":")[0] for entry in collector["volumes"]}
    assert mounts[target] == "./deploy/otel-collector.yaml"
    assert (ROOT / mounts[target]).is_file()


def test_credentials_come_from_the_environment_and_agree(services: dict[str, Any]) -> None:
    server = raw_environment(services["clickhouse"])
    collector = raw_environment(services["otel-collector"])
    dashboard = raw_environment(services["dashboard"])
    assert server["CLICKHOUSE_USER"] == collector["CLICKHOUSE_USER"] == dashboard["JANUX_CLICKHOUSE_USER"]
    assert (
        server["CLICKHOUSE_PASSWORD"]
        == collector["CLICKHOUSE_PASSWORD"]
        == dashboard["JANUX_CLICKHOUSE_PASSWORD"]
        == "${CLICKHOUSE_PASSWORD:-}"
    )
    assert environment(services["dashboard"])["JANUX_CLICKHOUSE_PASSWORD"] == ""


def test_no_secret_in_the_deployment_files(compose: dict[str, Any]) -> None:
    for source, tree in (("docker-compose.yml", compose), ("otel-collector.yaml", load_yaml(COLLECTOR))):
        for path, value in scalars(tree):
            if not isinstance(value, str):
                continue
            if SECRET_KEY.search(path.rsplit(".", 1)[-1]):
                reference = value == "" or ENV_REFERENCE.fullmatch(value)
                assert reference, f"{source}: {path} is not an env reference"
            assert not looks_like_a_token(value), f"{source}: {path} looks like a credential: {value!r}"


def test_env_example_has_no_password_and_no_env_file_is_committed() -> None:
    example = dict(
        line.split("=", 1)
        for line in ENV_EXAMPLE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    assert example["CLICKHOUSE_PASSWORD"] == ""
    assert not (ROOT / ".env").exists() or ".env" in (ROOT / ".gitignore").read_text()


def test_the_secret_detectors_can_fail() -> None:
    assert not ENV_REFERENCE.fullmatch("${CLICKHOUSE_PASSWORD:-hunter2}")
    assert ENV_REFERENCE.fullmatch("${env:CLICKHOUSE_PASSWORD}")
    assert looks_like_a_token("sk-abcdefghijklmnopqrstu")
    assert looks_like_a_token("x=aB3dE5fG7hJ9kL1mN3pQ5rS7tU9")
    assert not looks_like_a_token("otel/opentelemetry-collector-contrib:0.145.0")


def test_interpolation_helper_resolves_defaults() -> None:
    assert interpolate("${A:-x}") == "x"
    assert interpolate("${A:-x}", {"A": "y"}) == "y"
    assert interpolate("127.0.0.1:${P:-8501}:8501") == "127.0.0.1:8501:8501"


def test_the_dashboard_gets_its_sign_in_token_from_the_environment(services: dict[str, Any]) -> None:
    """It binds every interface of its container: `janux ui` starts only with a token."""
    assert raw_environment(services["dashboard"])["JANUX_UI_TOKEN"] == "${JANUX_UI_TOKEN:-}"
    example = ENV_EXAMPLE.read_text()
    assert "\nJANUX_UI_TOKEN=\n" in example


def test_the_deriver_runs_janux_derive_on_the_dashboards_clickhouse(services: dict[str, Any]) -> None:
    from janux.cli.main import build_parser

    deriver = services["deriver"]
    command = deriver["command"]
    assert command[:2] == ["janux", "derive"]
    args = build_parser().parse_args(command[1:])  # the command line the container runs parses
    assert args.init and not args.once and args.health_file
    probe = " ".join(deriver["healthcheck"]["test"])
    assert args.health_file in probe  # healthy while runs keep touching the file
    dashboard = environment(services["dashboard"])
    wanted = {k: v for k, v in dashboard.items() if k.startswith("JANUX_CLICKHOUSE_")}
    assert wanted and {k: environment(deriver).get(k) for k in wanted} == wanted
    assert deriver["depends_on"]["clickhouse"]["condition"] == "service_healthy"
    assert "otel-collector" in deriver["depends_on"]
