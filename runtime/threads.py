"""Thread stores: where the dialogue of each thread (and which agent holds it) lives between turns.

A thread keeps only user and assistant text plus the name of the agent that holds it; tool results
and tool-call scaffolding never outlive the turn that made them. `InMemoryThreadStore` is the
default; `SqliteThreadStore` keeps threads in one SQLite file so a thread survives a restart.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from janux.errors import JanuxError
from janux.runtime.messages import message_json
from janux.runtime.model import Message, Role, ToolCall

_ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})


class ThreadStoreError(JanuxError):
    """A thread store could not be opened, read or written (the message names the file or thread)."""


@dataclass(slots=True)
class ThreadState:
    """The stored state of one thread."""

    agent: str | None
    """Which agent holds the thread (after a transfer: the specialist); `None` = the entry agent."""
    messages: list[Message] = field(default_factory=list)
    """User and assistant text only, oldest first."""


@runtime_checkable
class ThreadStore(Protocol):
    """Pluggable storage of thread state, keyed by thread id."""

    async def load(self, thread_id: str) -> ThreadState | None:
        """Return the stored state of `thread_id`, or `None` when the thread is new."""
        ...

    async def save(self, thread_id: str, state: ThreadState) -> None:
        """Replace the stored state of `thread_id` with `state`."""
        ...


def copy_message(message: Message) -> Message:
    """A copy of `message` that shares no mutable part with it (tool calls are frozen)."""
    return Message(
        role=message.role,
        content=message.content,
        tool_calls=list(message.tool_calls),
        tool_call_id=message.tool_call_id,
        name=message.name,
    )


def copy_state(state: ThreadState) -> ThreadState:
    """A copy of `state` whose messages can be mutated without touching the original."""
    return ThreadState(agent=state.agent, messages=[copy_message(m) for m in state.messages])


def keeps_unnamed_threads(store: ThreadStore) -> bool:
    """Whether `store` keeps the thread of a turn run without a `thread_id` (a store opts out with a
    false `keeps_unnamed_threads` attribute; the default in-memory store does)."""
    return bool(getattr(store, "keeps_unnamed_threads", True))


DEFAULT_MAX_THREADS = 10_000
"""How many threads `InMemoryThreadStore` keeps unless told otherwise."""


class InMemoryThreadStore:
    """Threads in a dict of this process; the default store.

    It keeps only threads that have an id (a turn run without `thread_id` is released when it ends:
    nobody can name it again), and at most `max_threads` of them: saving one more drops the least
    recently used (loaded or saved). Loads and saves copy the state, so a caller mutating what it
    loaded (or keeps mutating what it saved) never changes what is stored.
    """

    keeps_unnamed_threads = False
    """A turn without a `thread_id` is not kept (see `janux.runtime.threads.keeps_unnamed_threads`)."""

    def __init__(self, max_threads: int | None = DEFAULT_MAX_THREADS) -> None:
        """`max_threads`: the cap (least recently used threads go first); `None` = no cap."""
        if max_threads is not None and (isinstance(max_threads, bool) or max_threads < 1):
            raise ValueError(f"max_threads: expected at least 1 or None, got {max_threads!r}")
        self.max_threads = max_threads
        """Most threads kept."""
        self._threads: OrderedDict[str, ThreadState] = OrderedDict()

    async def load(self, thread_id: str) -> ThreadState | None:
        """Return a copy of the stored state of `thread_id` (now the most recently used), or `None`."""
        state = self._threads.get(thread_id)
        if state is None:
            return None
        self._threads.move_to_end(thread_id)
        return copy_state(state)

    async def save(self, thread_id: str, state: ThreadState) -> None:
        """Store a copy of `state` under `thread_id`, dropping the least recently used beyond the cap."""
        self._threads[thread_id] = copy_state(state)
        self._threads.move_to_end(thread_id)
        if self.max_threads is not None:
            while len(self._threads) > self.max_threads:
                self._threads.popitem(last=False)

    def thread_ids(self) -> list[str]:
        """Ids of the stored threads, least recently used first."""
        return list(self._threads)


# --- JSON encoding of messages (the SQLite column format) -------------------------------------------


def message_to_json(message: Message) -> dict[str, Any]:
    """Encode one message as a JSON object; fields at their defaults are left out.

    The content-capture form (`janux.runtime.messages.message_json`) plus the author's `name`, which a
    thread needs to remember which agent wrote each answer.
    """
    out = message_json(message)
    if message.name is not None:
        out["name"] = message.name
    return out


def _messages_text(state: ThreadState) -> str:
    """The `messages` column of a thread."""
    return json.dumps([message_to_json(m) for m in state.messages], ensure_ascii=False)


def _str_field(obj: dict[str, Any], key: str, where: str, *, optional: bool = False) -> str | None:
    value = obj.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}.{key}: expected a string, got {type(value).__name__}")
    return value


def _tool_call_from_json(raw: Any, where: str) -> ToolCall:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object")
    return ToolCall(
        id=_str_field(raw, "id", where) or "",
        name=_str_field(raw, "name", where) or "",
        arguments=_str_field(raw, "arguments", where) or "",
    )


def message_from_json(raw: Any, where: str = "message") -> Message:
    """Decode one message; a `ValueError` names the offending field."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object, got {type(raw).__name__}")
    role = raw.get("role")
    if role not in _ROLES:
        raise ValueError(f"{where}.role: expected one of {sorted(_ROLES)}, got {role!r}")
    calls_raw = raw.get("tool_calls", [])
    if not isinstance(calls_raw, list):
        raise ValueError(f"{where}.tool_calls: expected a list")
    role_typed: Role = role
    return Message(
        role=role_typed,
        content=_str_field(raw, "content", where) or "",
        tool_calls=[_tool_call_from_json(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls_raw)],
        tool_call_id=_str_field(raw, "tool_call_id", where, optional=True),
        name=_str_field(raw, "name", where, optional=True),
    )


def messages_from_json(text: str, where: str) -> list[Message]:
    """Decode a JSON array of messages; a `ValueError` names the offending field."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc})") from exc
    if not isinstance(raw, list):
        raise ValueError(f"{where}: expected a JSON array")
    return [message_from_json(m, f"{where}[{i}]") for i, m in enumerate(raw)]


# --- SQLite ----------------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS janux_threads (
    thread_id  TEXT PRIMARY KEY,
    agent      TEXT,
    messages   TEXT NOT NULL,
    updated_at REAL NOT NULL
)
"""
_UPSERT = """
INSERT INTO janux_threads (thread_id, agent, messages, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT(thread_id) DO UPDATE SET
    agent = excluded.agent, messages = excluded.messages, updated_at = excluded.updated_at
"""
_BUSY_TIMEOUT_MS = 10_000
"""How long a write waits for another process holding the database lock."""


class SqliteThreadStore:
    """Threads in one SQLite file (WAL mode), so a thread survives a process restart.

    Blocking SQLite calls run in worker threads (`asyncio.to_thread`) so the event loop never waits
    on disk. One connection serves the store, guarded by a lock: SQLite serializes writers anyway,
    and the lock keeps concurrent tasks from interleaving statements on the shared connection.
    """

    def __init__(self, path: str | Path) -> None:
        """Open (or create) the database at `path` and create the schema.

        Raises `ThreadStoreError` naming the file when it is not a valid SQLite database.
        """
        self.path = Path(path)
        """The database file."""
        self._lock = threading.Lock()
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        except sqlite3.Error as exc:
            raise ThreadStoreError(f"cannot open thread database {self.path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            with conn:
                conn.execute(_SCHEMA)
        except sqlite3.Error as exc:
            conn.close()
            raise ThreadStoreError(f"{self.path} is not a valid thread database: {exc}") from exc
        return conn

    def close(self) -> None:
        """Close the connection; later calls fail."""
        with self._lock:
            self._conn.close()

    async def aclose(self) -> None:
        """Close the connection off the event loop."""
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> SqliteThreadStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __enter__(self) -> SqliteThreadStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def load(self, thread_id: str) -> ThreadState | None:
        """Return the stored state of `thread_id`, or `None` when the thread is new."""
        return await asyncio.to_thread(self.load_sync, thread_id)

    async def save(self, thread_id: str, state: ThreadState) -> None:
        """Replace the stored state of `thread_id` (one transaction)."""
        payload = _messages_text(state)
        await asyncio.to_thread(self._write, thread_id, state.agent, payload)

    def load_sync(self, thread_id: str) -> ThreadState | None:
        """Blocking form of `load`, for callers outside an event loop."""
        try:
            with self._lock:
                row = self._conn.execute(
                    "SELECT agent, messages FROM janux_threads WHERE thread_id = ?", (thread_id,)
                ).fetchone()
        except sqlite3.Error as exc:
            raise ThreadStoreError(f"{self.path}: cannot load thread {thread_id!r}: {exc}") from exc
        if row is None:
            return None
        agent, text = row
        try:
            messages = messages_from_json(text, "messages")
        except ValueError as exc:
            raise ThreadStoreError(f"{self.path}: thread {thread_id!r} is corrupt: {exc}") from exc
        return ThreadState(agent=agent, messages=messages)

    def save_sync(self, thread_id: str, state: ThreadState) -> None:
        """Blocking form of `save`, for callers outside an event loop."""
        payload = _messages_text(state)
        self._write(thread_id, state.agent, payload)

    def _write(self, thread_id: str, agent: str | None, payload: str) -> None:
        try:
            with self._lock, self._conn:
                self._conn.execute(_UPSERT, (thread_id, agent, payload, time.time()))
        except sqlite3.Error as exc:
            raise ThreadStoreError(f"{self.path}: cannot save thread {thread_id!r}: {exc}") from exc

    def thread_ids(self) -> list[str]:
        """Ids of the stored threads, most recently saved first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT thread_id FROM janux_threads ORDER BY updated_at DESC, thread_id"
            ).fetchall()
        return [r[0] for r in rows]
