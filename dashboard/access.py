"""Who may use the dashboard and what they may change: its token, source editing, upload limits.

Set by `janux ui` / `janux serve` (flags) and handed to the Streamlit process in its environment:
- `JANUX_UI_TOKEN`: a shared token asked for before any page renders (unset: no sign-in; set but
  empty: the dashboard refuses to render, never "auth off");
- `JANUX_ALLOW_SOURCE_EDIT=1`: the sidebar may change the data directory and the ClickHouse
  connection (otherwise they are the server's settings, shown read-only);
- `JANUX_UPLOAD_MAX_DECOMPRESSED_MB`: the most an uploaded set of files may expand to;
- `JANUX_UPLOAD_SESSION_MB`, `JANUX_UPLOAD_TOTAL_MB`: the most uploaded files may hold in memory,
  per session and for all sessions together (enforced by `janux.dashboard.gate`).
A token shorter than `MIN_TOKEN_CHARS` is refused (guessable); `new_token()` makes a good one.
A dashboard bound to anything but loopback without a token is refused by the command line
(`exposure_problem`). No Streamlit import.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from janux.errors import JanuxError

UI_TOKEN_ENV = "JANUX_UI_TOKEN"
"""Environment variable holding the dashboard's sign-in token."""
ALLOW_SOURCE_EDIT_ENV = "JANUX_ALLOW_SOURCE_EDIT"
"""`1`: the sidebar may change the data directory and the ClickHouse connection."""
UPLOAD_MAX_DECOMPRESSED_ENV = "JANUX_UPLOAD_MAX_DECOMPRESSED_MB"
"""The most, in MiB, one set of uploaded files may expand to once decompressed."""
DEFAULT_MAX_UPLOAD_MB = 64
"""Default largest upload as sent (Streamlit's `server.maxUploadSize`), MiB."""
DEFAULT_MAX_UPLOAD_DECOMPRESSED_MB = 256
"""Default largest decompressed size of one upload, MiB."""
UPLOAD_SESSION_ENV = "JANUX_UPLOAD_SESSION_MB"
"""The most, in MiB, one session's uploaded files may hold in memory."""
UPLOAD_TOTAL_ENV = "JANUX_UPLOAD_TOTAL_MB"
"""The most, in MiB, all sessions' uploaded files may hold in memory together."""
DEFAULT_UPLOAD_SESSION_MB = 128
"""Default memory cap of one session's uploads, MiB (two largest uploads)."""
DEFAULT_UPLOAD_TOTAL_MB = 256
"""Default memory cap of all uploads together, MiB."""
MIN_TOKEN_CHARS = 22
"""Shortest dashboard token accepted: the length of 128 random bits in URL-safe base64."""
NEW_TOKEN_BYTES = 32
"""Random bytes in a token made by `new_token` (256 bits)."""


def new_token() -> str:
    """A fresh random dashboard token (`NEW_TOKEN_BYTES` of randomness, URL-safe)."""
    return secrets.token_urlsafe(NEW_TOKEN_BYTES)


def token_problem(token: str) -> str | None:
    """Why `token` may not be used as the dashboard's token (too short: guessable), or None."""
    if len(token) < MIN_TOKEN_CHARS:
        return (
            f"the dashboard token has {len(token)} characters; it needs at least {MIN_TOKEN_CHARS} "
            "(128 random bits) so it cannot be guessed: use `janux ui --new-ui-token-file PATH` "
            "to make one"
        )
    return None


class AccessMisconfigured(JanuxError, ValueError):
    """The access settings are contradictory or empty where a value is required."""


@dataclass(frozen=True, slots=True)
class DashboardAccess:
    """The dashboard's access settings."""

    token: str | None = None
    """Token a visitor must enter before any page renders; None: no sign-in."""
    allow_source_edit: bool = False
    """Whether the sidebar may change the data directory and the ClickHouse connection."""
    max_upload_mb: int = DEFAULT_MAX_UPLOAD_MB
    """Largest upload as sent, MiB (enforced by Streamlit)."""
    max_upload_decompressed_mb: int = DEFAULT_MAX_UPLOAD_DECOMPRESSED_MB
    """Largest decompressed size of one set of uploaded files, MiB."""
    max_upload_session_mb: int = DEFAULT_UPLOAD_SESSION_MB
    """Most memory one session's uploaded files may hold, MiB."""
    max_upload_total_mb: int = DEFAULT_UPLOAD_TOTAL_MB
    """Most memory all sessions' uploaded files may hold together, MiB."""

    def env(self) -> dict[str, str]:
        """These settings as the environment of the dashboard process."""
        env = {
            ALLOW_SOURCE_EDIT_ENV: "1" if self.allow_source_edit else "0",
            UPLOAD_MAX_DECOMPRESSED_ENV: str(self.max_upload_decompressed_mb),
            UPLOAD_SESSION_ENV: str(self.max_upload_session_mb),
            UPLOAD_TOTAL_ENV: str(self.max_upload_total_mb),
        }
        if self.token is not None:
            env[UI_TOKEN_ENV] = self.token
        return env

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DashboardAccess:
        """The settings the dashboard process was started with; raises `AccessMisconfigured`."""
        token = env.get(UI_TOKEN_ENV)
        if token is not None and not token.strip():
            raise AccessMisconfigured(f"{UI_TOKEN_ENV} is set but empty: give a token, or unset it")
        if token is not None and (problem := token_problem(token.strip())) is not None:
            raise AccessMisconfigured(f"{UI_TOKEN_ENV}: {problem}")
        return cls(
            token=token.strip() if token is not None else None,
            allow_source_edit=env.get(ALLOW_SOURCE_EDIT_ENV, "0").strip().lower() in ("1", "true", "yes"),
            max_upload_decompressed_mb=_mib(
                env, UPLOAD_MAX_DECOMPRESSED_ENV, DEFAULT_MAX_UPLOAD_DECOMPRESSED_MB
            ),
            max_upload_session_mb=_mib(env, UPLOAD_SESSION_ENV, DEFAULT_UPLOAD_SESSION_MB),
            max_upload_total_mb=_mib(env, UPLOAD_TOTAL_ENV, DEFAULT_UPLOAD_TOTAL_MB),
        )


def _mib(env: Mapping[str, str], name: str, default: int) -> int:
    value = env.get(name, str(default))
    try:
        return int(value)
    except ValueError:
        raise AccessMisconfigured(f"{name}: not a number of MiB: {value!r}") from None


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses; False for wildcards, other addresses and names."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_problem(host: str, access: DashboardAccess) -> str | None:
    """Why the dashboard must not start on `host` with these settings, or None when it may."""
    if is_loopback(host) or access.token is not None:
        return None
    return (
        f"the dashboard would listen on {host or 'every interface'} without authentication: anyone who "
        f"can reach it could read every trace. Give it a token (--ui-token-file PATH or ${UI_TOKEN_ENV}), "
        "or keep it on 127.0.0.1 (--ui-host for janux serve, --host for janux ui)"
    )
