"""Tool names of subagents and handoffs, and glob filters over tool names."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence

DELEGATE_PREFIX = "delegate."
"""Default tool-name prefix of a subagent."""
HANDOFF_PREFIX = "handoff."
"""Tool-name prefix of a transfer target."""

_OUTSIDE = re.compile(r"[^a-z0-9_-]")
_UNDERSCORES = re.compile(r"_+")


def normalize_agent_name(name: str) -> str:
    """An agent name as a tool-name suffix.

    Lowercase; characters outside `[a-z0-9_-]` become `_`; runs of `_` collapse; leading and
    trailing `_` are trimmed; `agent_` is prefixed when the result starts with a digit (or is empty).
    """
    text = _UNDERSCORES.sub("_", _OUTSIDE.sub("_", name.lower())).strip("_")
    if not text or text[0].isdigit():
        text = f"agent_{text}" if text else "agent"
    return text


def delegate_tool_name(agent_name: str) -> str:
    """Default tool name of a subagent: `delegate.<normalized name>`."""
    return DELEGATE_PREFIX + normalize_agent_name(agent_name)


def handoff_tool_name(agent_name: str) -> str:
    """Tool name of a transfer target: `handoff.<normalized name>`."""
    return HANDOFF_PREFIX + normalize_agent_name(agent_name)


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    """Whether `name` matches one of the glob `patterns` (case-sensitive, `*` and `?`)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def allowed_by(name: str, include: Sequence[str] | None, exclude: Sequence[str] | None) -> bool:
    """One filter: kept when included (no include list = all) and not excluded."""
    if include is not None and not matches_any(name, include):
        return False
    return not (exclude and matches_any(name, exclude))
