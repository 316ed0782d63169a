"""REUSE_SESSION memory: a subagent's dialogue accumulated per (thread, caller, tool name).

Each memory has a lock; a delegation holds it from its first attempt to its end, so concurrent
calls to the same REUSE_SESSION subagent run one after the other and each sees the previous one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from janux.runtime.model import Message


@dataclass(slots=True, eq=False)
class SessionMemory:
    """The remembered dialogue of one subagent tool, and the lock serializing its delegations."""

    messages: list[Message] = field(default_factory=list)
    """Earlier tasks and answers (user/assistant text), oldest first."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held for the whole of one delegation."""
    loop: asyncio.AbstractEventLoop | None = None
    """Event loop the lock serves (a new loop, e.g. a later `run_sync`, gets a fresh lock)."""


class SessionRegistry:
    """Session memories of one entry agent, keyed by (thread id, caller agent, tool name)."""

    __slots__ = ("_memories",)

    def __init__(self) -> None:
        self._memories: dict[tuple[str, str, str], SessionMemory] = {}

    def memory(self, thread_id: str, caller: str, tool: str) -> SessionMemory:
        """The memory for this key, created empty on first use."""
        key = (thread_id, caller, tool)
        memory = self._memories.get(key)
        if memory is None:
            memory = self._memories[key] = SessionMemory()
        running = asyncio.get_running_loop()
        if memory.loop is not running:
            memory.lock = asyncio.Lock()
            memory.loop = running
        return memory

    def thread_count(self) -> int:
        """How many threads have memories here."""
        return len({key[0] for key in self._memories})

    def forget(self, thread_id: str) -> None:
        """Drop every memory of a thread."""
        for key in [key for key in self._memories if key[0] == thread_id]:
            del self._memories[key]
