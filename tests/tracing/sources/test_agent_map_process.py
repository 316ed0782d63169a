"""A store opened with `map_process=True` reads big agent maps in a helper process: the same maps."""

from __future__ import annotations

import io
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from janux.tracing.analysis.agentmap.fleet_stats import AgentMap
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from janux.tracing.sources.store import store as store_module
from janux.tracing.sources.store.map_process_server import serve
from tests.support.agent_map_expect import actual, expected
from tests.support.contract_traces import contract_trace, plain_trace
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import all_spans
from tests.support.wait import wait_until
from tests.tracing.sources.test_agent_map import by_trace


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def every_store_hands_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any number of traces to read is enough for the helper (the suite's stores are small)."""
    monkeypatch.setattr(store_module, "MAP_PROCESS_MIN_TRACES", 1)


@pytest.mark.usefixtures("every_store_hands_over")
def test_the_helper_reads_the_same_map_and_follows_growth(tmp_path: Path) -> None:
    contract = contract_trace()
    first = [s for s in contract if not s.parent_span_id] + [*demo_traces().spans, *all_spans()]
    late = [s for s in contract if s.parent_span_id] + plain_trace()
    with open_store(tmp_path) as writer, open_store(tmp_path, map_process=True) as reader:
        writer.write(first)
        assert actual(reader.agent_map(TraceFilter())) == expected(by_trace(first).values())
        pid = reader.map_helper_pid
        assert pid is not None and pid != os.getpid()
        assert reader._map_cache.known == 0  # nothing read in this process
        writer.write(late)
        everything = [*first, *late]
        by_bucket = reader.agent_map(TraceFilter(), 60 * 10**9)
        assert actual(by_bucket) == expected(by_trace(everything).values())
        assert by_bucket.timeline and reader.map_helper_pid == pid
        narrowed = reader.agent_map(TraceFilter(root_agent="planner"))
    # The traces whose root agent is the planner, as the in-memory source names them (a foreign
    # trace's root span may be a workflow span that names the planner elsewhere, or none).
    listed = MemoryTraceSource(everything).list_traces(TraceFilter(root_agent="planner"), limit=10_000)
    planner = [by_trace(everything)[s.trace_id] for s in listed]
    assert actual(narrowed) == expected(planner)
    assert _gone(pid)  # closing the store stopped its helper


def test_a_store_with_few_traces_to_read_reads_its_maps_itself(tmp_path: Path) -> None:
    spans = list(demo_traces().spans)
    with open_store(tmp_path, map_process=True) as store:
        store.write(spans)
        assert actual(store.agent_map(TraceFilter())) == expected(by_trace(spans).values())
        assert store.map_helper_pid is None
        assert store._map_cache.known == len(by_trace(spans))


@pytest.mark.usefixtures("every_store_hands_over")
def test_a_helper_that_dies_leaves_the_maps_to_the_store(tmp_path: Path) -> None:
    spans = [*demo_traces().spans, *contract_trace()]
    with open_store(tmp_path, map_process=True) as store:
        store.write(spans)
        want = expected(by_trace(spans).values())
        assert actual(store.agent_map(TraceFilter())) == want
        pid = store.map_helper_pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: _gone(pid) or _zombie(pid), what="the helper to die")
        assert actual(store.agent_map(TraceFilter())) == want  # read here, no error
        assert store.map_helper_pid is None


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


def test_the_helper_answers_a_failed_read_and_keeps_serving(tmp_path: Path) -> None:
    spans = list(demo_traces().spans)
    with open_store(tmp_path) as store:
        store.write(spans)
    requests = io.BytesIO()
    pickle.dump(("not a filter", None), requests)
    pickle.dump((TraceFilter(), None), requests)
    requests.seek(0)
    answers = io.BytesIO()
    serve(tmp_path, requests, answers)
    answers.seek(0)
    failed, why = pickle.load(answers)
    ok, agent_map = pickle.load(answers)
    assert not failed and "AttributeError" in why
    assert ok and isinstance(agent_map, AgentMap)
    assert actual(agent_map) == expected(by_trace(spans).values())


@pytest.mark.usefixtures("every_store_hands_over")
def test_a_read_that_fails_in_the_helper_fails_here_and_keeps_the_helper(tmp_path: Path) -> None:
    spans = list(demo_traces().spans)
    with open_store(tmp_path, map_process=True) as store:
        store.write(spans)
        store.agent_map(TraceFilter())
        pid = store.map_helper_pid
        assert pid is not None
        unbindable = TraceFilter(service=("not", "a", "name"))  # type: ignore[arg-type]
        with pytest.raises(sqlite3.ProgrammingError):  # the caller sees the read's own error
            store.agent_map(unbindable)
        assert store.map_helper_pid == pid
        assert actual(store.agent_map(TraceFilter())) == expected(by_trace(spans).values())


_ENDS_WITHOUT_CLOSING = """
import sys, threading, time
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from janux.tracing.sources.store import store as store_module
store_module.MAP_PROCESS_MIN_TRACES = 1
store = open_store(sys.argv[1], map_process=True)
print("opened", flush=True)
sys.stdin.readline()  # the test now holds the store's write lock: the helper cannot open the store
threading.Thread(target=store.agent_map, args=(TraceFilter(),), daemon=True).start()
while store.map_helper_pid is None:
    time.sleep(0.01)
print(store.map_helper_pid, flush=True)
"""


def test_a_process_that_ends_without_closing_its_store_ends_its_helper(tmp_path: Path) -> None:
    """Its helper is ended with it, even while busy (here: waiting for the store's write lock,
    which the helper takes to open the store)."""
    from janux.tracing.sources.store.lock import WriteLock

    with open_store(tmp_path) as store:
        store.write(list(demo_traces().spans))
    script = subprocess.Popen(
        [sys.executable, "-c", _ENDS_WITHOUT_CLOSING, str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert script.stdin is not None and script.stdout is not None
    lock = WriteLock(tmp_path)
    try:
        assert script.stdout.readline().strip() == "opened"
        with lock.held():
            script.stdin.write("go\n")
            script.stdin.flush()
            pid = int(script.stdout.readline())
            assert script.wait(120) == 0
            wait_until(lambda: _gone(pid) or _zombie(pid), what=f"the helper {pid} to end with its process")
    finally:
        lock.close()
        if script.poll() is None:
            script.kill()
            script.wait()
