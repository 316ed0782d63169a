"""Span kind and status code: OTLP integers or enum names (`SPAN_KIND_CLIENT`, `STATUS_CODE_ERROR`)."""

from __future__ import annotations

from janux.tracing.otlp.errors import DecodeError
from janux.tracing.records import (
    KIND_CLIENT,
    KIND_CONSUMER,
    KIND_INTERNAL,
    KIND_PRODUCER,
    KIND_SERVER,
    KIND_UNSPECIFIED,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
)

KIND_BY_NUMBER: tuple[str, ...] = (
    KIND_UNSPECIFIED,
    KIND_INTERNAL,
    KIND_SERVER,
    KIND_CLIENT,
    KIND_PRODUCER,
    KIND_CONSUMER,
)
"""Normalized span kind by OTLP enum number."""

STATUS_BY_NUMBER: tuple[str, ...] = (STATUS_UNSET, STATUS_OK, STATUS_ERROR)
"""Normalized status code by OTLP enum number."""

KIND_BY_NAME = {name.upper(): name for name in KIND_BY_NUMBER}
"""Normalized span kind by upper-case name without prefix (`CLIENT` -> `Client`)."""
STATUS_BY_NAME = {name.upper(): name for name in STATUS_BY_NUMBER}
"""Normalized status code by upper-case name without prefix (`ERROR` -> `Error`)."""


def _by_number(value: int, table: tuple[str, ...], path: str) -> str:
    if 0 <= value < len(table):
        return table[value]
    raise DecodeError(path, f"unknown enum value {value}")


def _by_name(value: str, prefix: str, table: dict[str, str], path: str) -> str:
    key = value.upper()
    key = key.removeprefix(prefix)
    found = table.get(key)
    if found is None:
        raise DecodeError(path, f"unknown enum name {value[:64]!r}")
    return found


def span_kind(value: object, path: str) -> str:
    """Normalized kind from 3, "3", "SPAN_KIND_CLIENT" or "Client"; absent means Unspecified."""
    if value is None:
        return KIND_UNSPECIFIED
    if isinstance(value, int) and not isinstance(value, bool):
        return _by_number(value, KIND_BY_NUMBER, path)
    if isinstance(value, str):
        if value.isdigit():
            return _by_number(int(value), KIND_BY_NUMBER, path)
        return _by_name(value, "SPAN_KIND_", KIND_BY_NAME, path)
    raise DecodeError(path, f"span kind must be an integer or a name, got {type(value).__name__}")


def status_code(value: object, path: str) -> str:
    """Normalized status from 2, "2", "STATUS_CODE_ERROR" or "Error"; absent means Unset."""
    if value is None:
        return STATUS_UNSET
    if isinstance(value, int) and not isinstance(value, bool):
        return _by_number(value, STATUS_BY_NUMBER, path)
    if isinstance(value, str):
        if value.isdigit():
            return _by_number(int(value), STATUS_BY_NUMBER, path)
        return _by_name(value, "STATUS_CODE_", STATUS_BY_NAME, path)
    raise DecodeError(path, f"status code must be an integer or a name, got {type(value).__name__}")
