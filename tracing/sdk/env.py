"""Reading OpenTelemetry environment variables without ever failing the application.

A malformed value is recorded as a warning that names the variable, and the default is used
(the OpenTelemetry specification's rule for configuration errors). Explicit arguments are
checked strictly instead: a bad one raises `TelemetryConfigError` naming the argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote

from janux.errors import JanuxError

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off", ""})


class TelemetryConfigError(JanuxError, ValueError):
    """An explicit telemetry setting is invalid; the message names the argument or variable."""


class EnvReader:
    """Typed access to an environment mapping that collects warnings instead of raising."""

    def __init__(self, env: Mapping[str, str]) -> None:
        """Read from `env` (a snapshot of os.environ or a test mapping)."""
        self._env = env
        self._warnings: list[str] = []

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every malformed value seen so far, each naming its variable."""
        return tuple(self._warnings)

    def warn(self, message: str) -> None:
        """Record one configuration warning."""
        self._warnings.append(message)

    def text(self, name: str) -> str | None:
        """The stripped value of `name`, or None when unset or blank."""
        raw = self._env.get(name)
        if raw is None or not raw.strip():
            return None
        return raw.strip()

    def flag(self, name: str) -> bool:
        """A boolean variable (`true`/`false`, case-insensitive); unset or malformed is False."""
        raw = self._env.get(name)
        if raw is None:
            return False
        value = raw.strip().lower()
        if value in _TRUE:
            return True
        if value not in _FALSE:
            self.warn(f"{name}: expected true or false, got {raw!r}; using false")
        return False

    def integer(self, *names: str, default: int) -> int:
        """The first set variable of `names` as a positive integer; malformed values are skipped."""
        for name in names:
            raw = self.text(name)
            if raw is None:
                continue
            try:
                value = int(raw)
            except ValueError:
                self.warn(f"{name}: expected a positive integer, got {raw!r}; ignored")
                continue
            if value <= 0:
                self.warn(f"{name}: expected a positive integer, got {raw!r}; ignored")
                continue
            return value
        return default


class BoundedInt:
    """Resolution of one positive integer setting: explicit argument, then variable, then default."""

    @staticmethod
    def pick(explicit: int | None, arg_name: str, reader: EnvReader, env_name: str, default: int) -> int:
        """The explicit value (checked strictly), else the variable (checked leniently), else default."""
        if explicit is not None:
            if isinstance(explicit, bool) or not isinstance(explicit, int) or explicit <= 0:
                raise TelemetryConfigError(f"{arg_name}: expected a positive integer, got {explicit!r}")
            return explicit
        return reader.integer(env_name, default=default)


def parse_key_values(reader: EnvReader, name: str) -> dict[str, str]:
    """Parse `k1=v1,k2=v2` (W3C-baggage style, values percent-decoded) from variable `name`.

    Used for OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS. A malformed entry is
    skipped with a warning; the well-formed entries around it are kept.
    """
    raw = reader.text(name)
    if raw is None:
        return {}
    result: dict[str, str] = {}
    for index, entry in enumerate(raw.split(",")):
        if not entry.strip():
            continue
        key, sep, value = entry.partition("=")
        key = unquote(key.strip())
        if not sep or not key:
            reader.warn(f"{name}: entry {index + 1} {entry.strip()!r} is not key=value; skipped")
            continue
        result[key] = unquote(value.strip())
    return result
