"""Trace and span ids: hex (OTLP/JSON) or base64 (protobuf JSON mapping, Tempo, Jaeger) to lowercase hex."""

from __future__ import annotations

import base64
import binascii

from janux.tracing.otlp.errors import DecodeError

TRACE_ID_BYTES = 16
"""A trace id is 16 bytes."""
SPAN_ID_BYTES = 8
"""A span id is 8 bytes."""

_BASE64_ALTCHARS = str.maketrans("-_", "+/")


def _from_base64(text: str, size: int) -> bytes | None:
    """`text` as base64 (standard or URL-safe, padding optional) when it decodes to `size` bytes."""
    cleaned = text.translate(_BASE64_ALTCHARS)
    cleaned += "=" * (-len(cleaned) % 4)
    try:
        raw = base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == size else None


def _from_hex(text: str, size: int) -> bytes | None:
    """`text` as hex when it is exactly `size` bytes of hex digits."""
    if len(text) != 2 * size:
        return None
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        return None
    # bytes.fromhex skips whitespace, so a shorter result means the text was not pure hex.
    return raw if len(raw) == size else None


def json_id(value: object, size: int, path: str, *, optional: bool = False) -> str:
    """A JSON id field as lowercase hex; "" for an absent optional id (or an all-zero parent)."""
    if value is None or value == "":
        if optional:
            return ""
        raise DecodeError(path, "missing id")
    if not isinstance(value, str):
        raise DecodeError(path, f"id must be a string, got {type(value).__name__}")
    raw = _from_hex(value, size) or _from_base64(value, size)
    if raw is None:
        raise DecodeError(path, f"invalid hex/base64 id of {size} bytes: {value[:64]!r}")
    return _checked_hex(raw, path, optional)


def bytes_id(raw: bytes, size: int, path: str, *, optional: bool = False) -> str:
    """A protobuf bytes id as lowercase hex; "" for an empty optional id (or an all-zero parent)."""
    if not raw:
        if optional:
            return ""
        raise DecodeError(path, "missing id")
    if len(raw) != size:
        raise DecodeError(path, f"id must be {size} bytes, got {len(raw)}")
    return _checked_hex(raw, path, optional)


def _checked_hex(raw: bytes, path: str, optional: bool) -> str:
    """Hex of a decoded id; all zeros is "no id" (an error unless optional)."""
    if not any(raw):
        if optional:
            return ""
        raise DecodeError(path, "all-zero id is invalid")
    return raw.hex()
