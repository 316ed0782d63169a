"""Reversible tool-name encoding for providers that only accept ``^[a-zA-Z0-9_-]{1,64}$``.

The runtime names tools `delegate.researcher` and `handoff.billing`; OpenAI-compatible providers
forbid the dot. This module maps every runtime name to a wire name and back without collisions.
"""

from __future__ import annotations

import hashlib
import string

from janux.runtime.model import ModelError

_ERR_BAD_REQUEST = "bad_request"

# Providers accept tool names matching ^[a-zA-Z0-9_-]{1,64}$. A name that already fits and holds no
# "__" goes out unchanged. Any other name is escaped: each char outside [a-zA-Z0-9-] becomes
# "__<hex code point>__", and so does each "_" next to another "_" or an escaped char, so that in
# escaped form "__" only ever opens or closes an escape. Plain names never contain "__" and escaped
# names always do, so the two never collide; escaping is injective because decoding is deterministic.
# An escaped form longer than 64 chars keeps a prefix of whole tokens plus "__h" and a hash of the
# name; "h" is not a hex digit, so such a name is never a valid escaped form either.

MAX_TOOL_NAME_LENGTH = 64
"""Longest tool name OpenAI-compatible providers accept."""
_WORD = frozenset(string.ascii_letters + string.digits + "-")
_HEX = frozenset("0123456789abcdef")
_HASH_MARK = "__h"
_HASH_CHARS = 16


def _is_plain(name: str) -> bool:
    return (
        0 < len(name) <= MAX_TOOL_NAME_LENGTH
        and "__" not in name
        and all(c in _WORD or c == "_" for c in name)
    )


def _escape_tokens(name: str) -> list[str]:
    tokens: list[str] = []
    for i, char in enumerate(name):
        neighbours = name[max(i - 1, 0) : i] + name[i + 1 : i + 2]
        if char in _WORD or (char == "_" and all(n in _WORD for n in neighbours)):
            tokens.append(char)
        else:
            tokens.append(f"__{ord(char):x}__")
    return tokens


def encode_tool_name(name: str) -> str:
    """The wire form of tool `name`: unchanged when a provider accepts it, else escaped reversibly."""
    if not name:
        raise ValueError("tool name: must not be empty")
    if _is_plain(name):
        return name
    tokens = _escape_tokens(name)
    escaped = "".join(tokens)
    if len(escaped) <= MAX_TOOL_NAME_LENGTH:
        return escaped
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    room = MAX_TOOL_NAME_LENGTH - len(_HASH_MARK) - _HASH_CHARS
    head = ""
    for token in tokens:
        if len(head) + len(token) > room:
            break
        head += token
    return head + _HASH_MARK + digest


def decode_tool_name(wire: str) -> str | None:
    """The tool name whose wire form is `wire`, or `None` when `wire` is no canonical wire form.

    Hashed forms (names too long to escape) cannot be decoded alone; `ToolNameCodec` remembers them.
    """
    if _is_plain(wire):
        return wire
    out: list[str] = []
    i = 0
    while i < len(wire):
        if wire.startswith("__", i):
            end = wire.find("__", i + 2)
            digits = wire[i + 2 : end]
            if end < 0 or not digits or not set(digits) <= _HEX or int(digits, 16) > 0x10FFFF:
                return None
            out.append(chr(int(digits, 16)))
            i = end + 2
        elif wire[i] in _WORD or wire[i] == "_":
            out.append(wire[i])
            i += 1
        else:
            return None
    name = "".join(out)
    # Only the canonical form decodes, so decode(encode(n)) == n and nothing else maps to n.
    return name if name and encode_tool_name(name) == wire else None


class ToolNameCodec:
    """Encodes the tool names of one request and decodes the names the model answers with."""

    def __init__(self) -> None:
        self._to_wire: dict[str, str] = {}
        self._from_wire: dict[str, str] = {}

    def encode(self, name: str) -> str:
        """Wire form of `name`; raises `ModelError` if two names of the request would share one."""
        wire = self._to_wire.get(name)
        if wire is not None:
            return wire
        try:
            wire = encode_tool_name(name)
        except ValueError as exc:
            raise ModelError(str(exc), error_type=_ERR_BAD_REQUEST) from exc
        other = self._from_wire.setdefault(wire, name)
        if other != name:
            raise ModelError(
                f"tool names {other!r} and {name!r} share the wire name {wire!r}", error_type=_ERR_BAD_REQUEST
            )
        self._to_wire[name] = wire
        return wire

    def decode(self, wire: str) -> str:
        """The runtime's name for `wire`; an unknown, undecodable name is returned as it came."""
        known = self._from_wire.get(wire)
        if known is not None:
            return known
        return decode_tool_name(wire) or wire
