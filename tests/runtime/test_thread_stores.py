"""Thread stores: round trips, copies, restart survival, corrupt files and concurrent saves."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from janux.runtime.model import Message, ToolCall
from janux.runtime.threads import (
    InMemoryThreadStore,
    SqliteThreadStore,
    ThreadState,
    ThreadStore,
    ThreadStoreError,
)
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT


def sample_state() -> ThreadState:
    """A thread with every message field set somewhere, and non-ASCII text."""
    return ThreadState(
        agent="billing",
        messages=[
            Message(role="user", content="Refund order #12 — please ✓"),
            Message(role="assistant", content="Transferring you.", name="front_desk"),
            Message(
                role="assistant",
                content="",
                tool_calls=[ToolCall(id="c1", name="delegate.researcher", arguments='{"task": "x"}')],
            ),
            Message(role="tool", content="{}", tool_call_id="c1", name="delegate.researcher"),
            Message(role="assistant", content="Done: refunded.", name="billing"),
        ],
    )


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ThreadStore]:
    """Each store implementation, fresh."""
    if request.param == "memory":
        yield InMemoryThreadStore()
        return
    sqlite_store = SqliteThreadStore(tmp_path / "threads.db")
    yield sqlite_store
    await sqlite_store.aclose()


async def test_both_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    with SqliteThreadStore(tmp_path / "p.db") as sqlite_store:
        assert isinstance(sqlite_store, ThreadStore)
    assert isinstance(InMemoryThreadStore(), ThreadStore)


async def test_unknown_thread_loads_as_none(store: ThreadStore) -> None:
    assert await store.load("nobody") is None


async def test_round_trip_keeps_every_field(store: ThreadStore) -> None:
    await store.save("t1", sample_state())
    assert await store.load("t1") == sample_state()


async def test_save_replaces_and_threads_are_independent(store: ThreadStore) -> None:
    await store.save("t1", sample_state())
    await store.save("t2", ThreadState(agent=None, messages=[Message(role="user", content="hello")]))
    await store.save("t1", ThreadState(agent=None, messages=[]))
    assert await store.load("t1") == ThreadState(agent=None, messages=[])
    loaded = await store.load("t2")
    assert loaded is not None and loaded.messages == [Message(role="user", content="hello")]


async def test_callers_cannot_mutate_stored_state(store: ThreadStore) -> None:
    state = sample_state()
    await store.save("t1", state)
    state.messages.append(Message(role="user", content="added after save"))
    state.messages[0].content = "edited after save"
    state.messages[2].tool_calls.clear()
    state.agent = "someone else"
    loaded = await store.load("t1")
    assert loaded == sample_state()
    assert loaded is not None
    loaded.messages.clear()
    assert await store.load("t1") == sample_state()


def run_python(code: str) -> str:
    """Run `code` in a fresh interpreter (a real process restart) and return its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_thread_survives_a_process_restart(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    run_python(
        f"""
        import asyncio
        from janux.runtime.model import Message
        from janux.runtime.threads import SqliteThreadStore, ThreadState
        async def main():
            async with SqliteThreadStore({str(db)!r}) as store:
                await store.save("t1", ThreadState(agent="billing", messages=[
                    Message(role="user", content="refund please"),
                    Message(role="assistant", content="refunded", name="billing")]))
        asyncio.run(main())
        """
    )
    # This process never saw the write; a second fresh process appends a turn.
    async with SqliteThreadStore(db) as store:
        loaded = await store.load("t1")
    assert loaded == ThreadState(
        agent="billing",
        messages=[
            Message(role="user", content="refund please"),
            Message(role="assistant", content="refunded", name="billing"),
        ],
    )
    out = run_python(
        f"""
        import asyncio
        from janux.runtime.threads import SqliteThreadStore
        async def main():
            async with SqliteThreadStore({str(db)!r}) as store:
                state = await store.load("t1")
                print(state.agent, len(state.messages), state.messages[-1].content)
        asyncio.run(main())
        """
    )
    assert out.split() == ["billing", "2", "refunded"]


async def test_database_is_in_wal_mode(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    async with SqliteThreadStore(db) as store:
        await store.save("t", ThreadState(agent=None, messages=[]))
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_a_file_that_is_not_a_database_fails_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_bytes(b"this is plain text, not SQLite at all\n" * 200)
    with pytest.raises(ThreadStoreError) as caught:
        SqliteThreadStore(bad)
    assert str(bad) in str(caught.value)
    assert "not a valid" in str(caught.value)


def test_an_unopenable_path_fails_naming_the_file(tmp_path: Path) -> None:
    missing_dir = tmp_path / "no" / "such" / "dir" / "threads.db"
    with pytest.raises(ThreadStoreError) as caught:
        SqliteThreadStore(missing_dir)
    assert str(missing_dir) in str(caught.value)


async def test_a_corrupt_row_fails_naming_thread_and_field(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    async with SqliteThreadStore(db) as store:
        await store.save("good", sample_state())
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO janux_threads VALUES ('bad', NULL, ?, 0)", ('[{"role": "wizard", "content": ""}]',)
        )
        conn.execute("INSERT INTO janux_threads VALUES ('junk', NULL, 'not json', 0)")
    conn.close()
    async with SqliteThreadStore(db) as store:
        with pytest.raises(ThreadStoreError, match=r"'bad'.*messages\[0\]\.role"):
            await store.load("bad")
        with pytest.raises(ThreadStoreError, match=r"'junk'.*not valid JSON"):
            await store.load("junk")
        assert await store.load("good") == sample_state()


def numbered_state(thread: int, turn: int) -> ThreadState:
    """The state thread `thread` has after `turn` turns."""
    messages = [Message(role="user", content=f"thread {thread} turn {i}") for i in range(turn + 1)]
    return ThreadState(agent=f"agent{thread % 3}", messages=messages)


async def test_concurrent_saves_to_different_threads(store: ThreadStore) -> None:
    async def writer(thread: int) -> None:
        for turn in range(5):
            await store.save(f"t{thread}", numbered_state(thread, turn))
            assert await store.load(f"t{thread}") == numbered_state(thread, turn)

    await asyncio.gather(*(writer(n) for n in range(40)))
    for n in range(40):
        assert await store.load(f"t{n}") == numbered_state(n, 4)


async def test_two_stores_on_one_file_share_threads(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    async with SqliteThreadStore(db) as first, SqliteThreadStore(db) as second:

        async def writer(store: SqliteThreadStore, base: int) -> None:
            for n in range(base, base + 20):
                await store.save(f"t{n}", numbered_state(n, 1))

        await asyncio.gather(writer(first, 0), writer(second, 20))
        for n in range(40):
            assert await first.load(f"t{n}") == numbered_state(n, 1)
        assert sorted(second.thread_ids()) == sorted(f"t{n}" for n in range(40))


def test_concurrent_writer_processes(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    SqliteThreadStore(db).close()  # create the schema once, like a deployed service would
    code = textwrap.dedent(
        """
        import asyncio, sys
        from janux.runtime.model import Message
        from janux.runtime.threads import SqliteThreadStore, ThreadState
        async def main(base):
            async with SqliteThreadStore(sys.argv[1]) as store:
                await asyncio.gather(*(store.save(f"p{n}", ThreadState(agent=None,
                    messages=[Message(role="user", content=str(n))])) for n in range(base, base + 30)))
        asyncio.run(main(int(sys.argv[2])))
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(db), str(base)], cwd=ROOT, stderr=subprocess.PIPE)
        for base in (0, 30)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    with SqliteThreadStore(db) as store:
        assert sorted(store.thread_ids()) == sorted(f"p{n}" for n in range(60))
        state = store.load_sync("p42")
        assert state is not None and state.messages[0].content == "42"


# -- issue 20, item 6: the default store keeps named threads only, and at most a bounded number ----


async def test_runs_without_a_thread_id_leave_nothing_in_the_default_store() -> None:
    from janux.runtime import Agent, SessionMode, Subagent
    from janux.runtime.testing import ScriptedModel, call_tools, delegate, reply

    runs = 200
    steps = []
    for _ in range(runs):
        steps += [call_tools(delegate("helper", "remember this")), reply("ok")]
    helper = Agent("helper", model=ScriptedModel([reply("noted")] * runs))
    agent = Agent(
        "p",
        model=ScriptedModel(steps),
        subagents=[Subagent(agent=helper, max_turns=1, session=SessionMode.REUSE_SESSION)],
    )
    for _ in range(runs):
        await agent.run("hi")
    store = agent.threads
    assert isinstance(store, InMemoryThreadStore) and store.thread_ids() == []
    assert agent.sessions.thread_count() == 0  # their REUSE_SESSION memories are released too


async def test_a_named_thread_is_kept_by_the_default_store() -> None:
    from janux.runtime import Agent
    from janux.runtime.testing import ScriptedModel, reply

    agent = Agent("p", model=ScriptedModel([reply("one"), reply("two")]))
    await agent.run("hi", thread_id="t1")
    await agent.run("hi")
    assert isinstance(agent.threads, InMemoryThreadStore) and agent.threads.thread_ids() == ["t1"]


async def test_the_in_memory_store_drops_the_least_recently_used_thread_beyond_its_cap() -> None:
    store = InMemoryThreadStore(max_threads=2)
    await store.save("a", ThreadState(agent=None))
    await store.save("b", ThreadState(agent=None))
    assert await store.load("a") is not None  # a is now more recently used than b
    await store.save("c", ThreadState(agent=None))
    assert store.thread_ids() == ["a", "c"] and await store.load("b") is None
    assert InMemoryThreadStore().max_threads == 10_000  # the documented default


@pytest.mark.parametrize("cap", [0, -1, True])
def test_a_bad_cap_is_refused_naming_the_field(cap: int) -> None:
    with pytest.raises(ValueError, match="max_threads"):
        InMemoryThreadStore(max_threads=cap)
