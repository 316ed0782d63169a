"""Loading the deployment files, with Compose-style `${VAR:-default}` interpolation."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
COMPOSE = ROOT / "docker-compose.yml"
COLLECTOR = ROOT / "deploy" / "otel-collector.yaml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
ENV_EXAMPLE = ROOT / "deploy" / "compose.env.example"

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def load_yaml(path: Path) -> dict[str, Any]:
    """Parse one YAML file (merge keys resolved) into a mapping."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path.name}: top level must be a mapping"
    return data


def interpolate(value: str, env: Mapping[str, str] | None = None) -> str:
    """Compose interpolation of `${VAR}` / `${VAR:-default}` against `env` (empty by default)."""
    values = env or {}
    return _VARIABLE.sub(lambda m: values.get(m.group(1)) or (m.group(2) or ""), value)


def scalars(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every scalar of a YAML tree with its dotted path."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from scalars(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from scalars(value, f"{path}[{index}]")
    else:
        yield path, node


@dataclass(frozen=True)
class PortMapping:
    """One `ports:` entry of a service."""

    host_ip: str
    host_port: int
    container_port: int


def ports(service: Mapping[str, Any]) -> list[PortMapping]:
    """A service's published ports, interpolated with defaults."""
    result = []
    for entry in service.get("ports", []):
        text = interpolate(str(entry)).split("/")[0]
        parts = text.split(":")
        assert len(parts) == 3, f"port {entry!r} must name host ip, host port and container port"
        result.append(PortMapping(parts[0], int(parts[1]), int(parts[2])))
    return result


def environment(service: Mapping[str, Any]) -> dict[str, str]:
    """A service's environment with defaults interpolated (an empty .env)."""
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {key: interpolate(str(value)) for key, value in env.items()}


def raw_environment(service: Mapping[str, Any]) -> dict[str, str]:
    """A service's environment as written (references not resolved)."""
    env = service.get("environment", {})
    return {key: str(value) for key, value in env.items()}


def url_parts(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL that must name a port."""
    parsed = urlparse(url)
    assert parsed.hostname and parsed.port, f"{url!r} must name a host and a port"
    return parsed.scheme, parsed.hostname, parsed.port


@dataclass(frozen=True)
class Dockerfile:
    """The instructions of a Dockerfile that the checks need."""

    base_images: list[str]
    user: str | None
    exposed: list[int]
    cmd: list[str]
    copied: list[str]
    runs: list[str]


def parse_dockerfile(path: Path = DOCKERFILE) -> Dockerfile:
    """Read the Dockerfile's instructions (continuation lines joined, comments dropped)."""
    lines: list[str] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    bases: list[str] = []
    exposed: list[int] = []
    cmd: list[str] = []
    copied: list[str] = []
    runs: list[str] = []
    user: str | None = None
    for line in lines:
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            bases.append(rest.split()[0])
        elif keyword == "USER":
            user = rest.strip()
        elif keyword == "EXPOSE":
            exposed.extend(int(port.split("/")[0]) for port in rest.split())
        elif keyword == "CMD":
            assert rest.startswith("["), "CMD must use the exec (JSON array) form"
            cmd = json.loads(rest)
        elif keyword == "COPY":
            copied.extend(shlex.split(rest)[:-1])
        elif keyword == "RUN":
            runs.append(rest)
    return Dockerfile(bases, user, exposed, cmd, copied, runs)
