"""Dockerfile and .dockerignore: pinned base, non-root, the port and command compose relies on."""

from __future__ import annotations

import tomllib

from .files import COMPOSE, DOCKERIGNORE, ROOT, load_yaml, parse_dockerfile, ports


def test_base_image_is_pinned_python_311_slim() -> None:
    dockerfile = parse_dockerfile()
    assert dockerfile.base_images == ["python:3.11-slim"]


def test_runs_as_a_non_root_user() -> None:
    dockerfile = parse_dockerfile()
    assert dockerfile.user not in (None, "root", "0", "0:0")
    assert any("useradd" in run and dockerfile.user in run for run in dockerfile.runs)


def test_expose_and_cmd_match_the_dashboard_service() -> None:
    dockerfile = parse_dockerfile()
    dashboard = load_yaml(COMPOSE)["services"]["dashboard"]
    container_ports = [mapping.container_port for mapping in ports(dashboard)]
    assert dockerfile.exposed == container_ports == [8501]
    cmd = dockerfile.cmd
    assert cmd[:2] == ["janux", "ui"]
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0"
    assert int(cmd[cmd.index("--port") + 1]) == 8501
    assert "command" not in dashboard  # the image's CMD is what runs


def test_installs_the_distribution_with_the_clickhouse_extra() -> None:
    dockerfile = parse_dockerfile()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [name.rstrip("*") for name in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    copied = {source.rstrip("/") for source in dockerfile.copied}
    assert {"pyproject.toml", project["project"]["readme"], *packages} <= copied
    assert "clickhouse" in project["project"]["optional-dependencies"]
    assert any('pip install ".[clickhouse]"' in run for run in dockerfile.runs)


def test_dockerignore_keeps_the_context_small_but_complete() -> None:
    ignored = {
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".env"} <= ignored
    dockerfile = parse_dockerfile()
    for source in dockerfile.copied:
        assert source.rstrip("/") not in ignored, f"{source} is copied but ignored"


def test_cmd_is_a_valid_janux_command() -> None:
    from janux.cli.main import build_parser

    cmd = parse_dockerfile().cmd
    args = build_parser().parse_args(cmd[1:])
    assert args.command == "ui" and args.host == "0.0.0.0" and args.port == 8501
