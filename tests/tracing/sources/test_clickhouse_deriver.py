"""The deriver (`derive_pending`, `janux derive`) on chdb, rows as the Collector's exporter writes
them: a re-run writes the same rows, late spans re-derive a trace, a trace still receiving spans
waits and is reported as pending, shards split the traces, and a deriver SIGKILLed at random
points loses nothing and doubles nothing."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from janux.tracing.analysis.trace_facts import analyse
from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse import deriver, schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.deriver import derive_pending, watermark
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import USAGE_DIMENSIONS, TraceFilter
from tests.support.clickhouse_rows import EXPORTER_DDL, insert_statement
from tests.support.demo_traces import demo_traces
from tests.support.foreign.load import all_spans

ALL = TraceFilter()
HOUR_NS = 3_600 * 10**9
_DERIVED = (schema.FACTS, schema.LOOPS, schema.DELEGATIONS, schema.USAGE, schema.FAILURES)


def _spans() -> list[SpanRecord]:
    return [*demo_traces().spans, *all_spans()]


def copies(spans: list[SpanRecord], count: int) -> list[SpanRecord]:
    """`count` copies of `spans`, each copy with its own trace ids."""
    out = []
    for n in range(count):
        for span in spans:
            trace_id = hashlib.md5(f"{n}:{span.trace_id}".encode()).hexdigest()
            out.append(dataclasses.replace(span, trace_id=trace_id))
    return out


def _insert(client: ChdbClient, spans: list[SpanRecord]) -> None:
    client.command(insert_statement(spans))


def _snapshot(client: ChdbClient) -> dict[str, list[Any]]:
    """Every derived table as read (FINAL), in a stable order."""
    return {t: client.query(f"SELECT * FROM {t} FINAL ORDER BY ALL").result_rows for t in _DERIVED}


def _assert_equals_memory(source: ClickHouseSource, spans: list[SpanRecord]) -> None:
    memory = MemoryTraceSource(spans)
    assert source.list_traces(ALL, 100_000) == memory.list_traces(ALL, 100_000)
    assert source.count_traces(ALL) == memory.count_traces(ALL)
    for dimension in USAGE_DIMENSIONS:
        assert source.usage_by(dimension, ALL, 1_000) == memory.usage_by(dimension, ALL, 1_000), dimension
    assert source.agent_map(ALL, HOUR_NS) == memory.agent_map(ALL, HOUR_NS)


def test_a_rerun_writes_the_same_rows(client: ChdbClient) -> None:
    spans = _spans()
    _insert(client, spans)
    first = derive_pending(client, quiet_s=0, max_window_spans=100)  # the backlog read in parts
    assert first.traces == len({s.trace_id for s in spans}) and first.spans == len(spans)
    before = _snapshot(client)
    # forget the watermark: everything is in the window again, already derived, so nothing is written
    client.command(f"TRUNCATE TABLE {schema.STATE}")
    again = derive_pending(client, quiet_s=0)
    assert (again.traces, again.up_to_date) == (0, first.traces)
    # forget the facts too (and the rollup their rows fed): every trace is derived again (in one
    # pass), into the very same rows
    for table in (*_DERIVED, *schema.ROLLUPS):
        client.command(f"TRUNCATE TABLE {table}")
    client.command(f"TRUNCATE TABLE {schema.STATE}")
    assert derive_pending(client, quiet_s=0).traces == first.traces
    assert _snapshot(client) == before
    _assert_equals_memory(ClickHouseSource(client), spans)


def test_late_spans_derive_a_trace_again(client: ChdbClient) -> None:
    spans = _spans()
    by_trace: dict[str, list[SpanRecord]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    biggest = max(by_trace, key=lambda t: len(by_trace[t]))
    late = sorted(by_trace[biggest], key=lambda s: s.start_ns)[: len(by_trace[biggest]) // 2]  # root included
    early = [s for s in spans if s not in late]
    _insert(client, early)
    derive_pending(client, quiet_s=0)
    source = ClickHouseSource(client)
    assert source.list_traces(ALL, 1_000) == MemoryTraceSource(early).list_traces(ALL, 1_000)
    _insert(client, late)
    assert source.pending_traces() == 1
    stats = derive_pending(client, quiet_s=0)
    assert stats.traces == 1 and stats.spans == len(by_trace[biggest])  # that trace, read whole
    assert source.pending_traces() == 0
    _assert_equals_memory(source, spans)
    versions = client.query(
        f"SELECT version FROM {schema.FACTS} FINAL WHERE trace_id = {{t:String}}", {"t": biggest}
    )
    assert versions.result_rows == [[len(by_trace[biggest])]]


class _FailingFactsWrite:
    """The chdb client, except that its `failing`-th insert into the facts table raises."""

    def __init__(self, client: ChdbClient, failing: int) -> None:
        self._client, self._left = client, failing
        self.query, self.command = client.query, client.command

    def insert(self, table: str, data: Sequence[Sequence[Any]], column_names: Sequence[str]) -> None:
        if table == schema.FACTS:
            self._left -= 1
            if self._left == 0:
                raise ConnectionError("the server went away")
        self._client.insert(table, data, column_names)


def test_a_failed_write_fails_the_run_and_keeps_the_watermark(client: ChdbClient) -> None:
    spans = _spans()
    _insert(client, spans)
    # batches of ~400 spans, each written on the writing thread while the next is analysed
    failing = _FailingFactsWrite(client, failing=2)
    try:
        derive_pending(failing, quiet_s=0, batch_spans=400, write_spans=400)
    except ConnectionError:
        pass
    else:
        raise AssertionError("the write's error was lost")
    assert watermark(client, deriver.Shard()) == 0  # nothing committed past rows not written
    stats = derive_pending(client, quiet_s=0)
    traces = len({s.trace_id for s in spans})
    assert stats.traces + stats.up_to_date == traces
    rows = client.query(f"SELECT count(), uniqExact(trace_id) FROM {schema.FACTS} FINAL").result_rows
    assert [int(v) for v in rows[0]] == [traces, traces]
    _assert_equals_memory(ClickHouseSource(client), spans)


class _WaitsForTheNextPart:
    """The chdb client, whose first facts insert waits (up to `NO_HANG_S`) until the deriver has
    begun analysing a trace of the next part: it returns only if writing overlaps analysing."""

    NO_HANG_S = 30.0

    def __init__(self, client: ChdbClient) -> None:
        self._client = client
        self.query, self.command = client.query, client.command
        self.next_part_analysed = threading.Event()
        self.facts_writes = 0

    def insert(self, table: str, data: Sequence[Sequence[Any]], column_names: Sequence[str]) -> None:
        if table == schema.FACTS:
            self.facts_writes += 1
            if self.facts_writes == 1 and not self.next_part_analysed.wait(self.NO_HANG_S):
                raise TimeoutError("the first part's rows were written before the next part was analysed")
        self._client.insert(table, data, column_names)


def test_rows_are_written_while_the_next_part_is_analysed(client: ChdbClient, monkeypatch: Any) -> None:
    spans = _spans()
    _insert(client, spans)
    waiting = _WaitsForTheNextPart(client)
    write_spans, analysed = 200, [0]

    def observed(trace_id: str, trace_spans: Sequence[SpanRecord]) -> Any:
        if analysed[0] >= write_spans:  # the first part (>= write_spans spans) was handed over
            waiting.next_part_analysed.set()
        analysed[0] += len(trace_spans)
        return analyse(trace_id, trace_spans)

    monkeypatch.setattr(deriver, "analyse", observed)
    stats = derive_pending(waiting, quiet_s=0, write_spans=write_spans)
    assert waiting.next_part_analysed.is_set() and waiting.facts_writes > 1
    assert stats.traces == len({s.trace_id for s in spans})
    _assert_equals_memory(ClickHouseSource(client), spans)


def test_a_trace_still_receiving_spans_waits_and_is_reported_pending(client: ChdbClient) -> None:
    spans = _spans()
    traces = len({s.trace_id for s in spans})
    _insert(client, spans)
    source = ClickHouseSource(client)
    assert source.pending_traces() == traces  # no deriver ran yet: every trace is pending, none hidden
    held = derive_pending(client, quiet_s=3_600)
    assert (held.traces, held.held) == (0, traces)
    assert source.count_traces(ALL) == 0 and source.pending_traces() == traces
    # receiving spans for longer than max_open_s: derived anyway (an endless conversation cannot
    # hold the watermark back forever); later spans would derive it again
    assert derive_pending(client, quiet_s=3_600, max_open_s=0).traces == traces
    assert source.pending_traces() == 0
    assert derive_pending(client, quiet_s=0).traces == 0  # up to date
    _assert_equals_memory(source, spans)


def test_shards_split_the_traces(client: ChdbClient) -> None:
    spans = copies(_spans(), 3)
    traces = len({s.trace_id for s in spans})
    _insert(client, spans)
    source = ClickHouseSource(client)
    first = derive_pending(client, quiet_s=0, shard=(0, 3)).traces
    assert source.pending_traces() == traces - first  # the other shards' traces: not derived yet
    derived = [first, *(derive_pending(client, quiet_s=0, shard=(i, 3)).traces for i in (1, 2))]
    assert sum(derived) == traces and all(derived)  # each trace by exactly one shard
    assert source.pending_traces() == 0
    assert [watermark(client, shard) > 0 for shard in _shards(3)] == [True] * 3
    assert [derive_pending(client, quiet_s=0, shard=(i, 3)).traces for i in range(3)] == [0, 0, 0]
    _assert_equals_memory(ClickHouseSource(client), spans)


def test_no_cyclic_collection_runs_while_a_window_is_derived(client: ChdbClient) -> None:
    # A window's spans, facts and rows are many small objects without reference cycles: a
    # collection there only scans them again and again (a quarter of a run's time, measured).
    spans = copies(_spans(), 5)
    _insert(client, spans)
    during: list[str] = []

    def record(phase: str, info: dict[str, int]) -> None:
        frame = sys._getframe(1)
        while frame is not None:
            if phase == "start" and frame.f_code.co_name == "_derive_window":
                during.append(f"generation {info['generation']}")
            frame = frame.f_back  # type: ignore[assignment]

    was_enabled = gc.isenabled()
    gc.enable()
    gc.callbacks.append(record)
    try:
        stats = derive_pending(client, quiet_s=0)
    finally:
        gc.callbacks.remove(record)
        if not was_enabled:
            gc.disable()
    assert stats.spans == len(spans)
    assert during == []
    assert gc.isenabled()  # the collector is back on after the run
    _assert_equals_memory(ClickHouseSource(client), spans)


def _shards(count: int) -> list[Any]:
    from janux.tracing.sources.clickhouse.deriver import Shard

    return [Shard(i, count) for i in range(count)]


def _derive_command(path: Path) -> list[str]:
    return [
        sys.executable, "-m", "janux.cli.main", "-v", "derive", "--once", "--quiet-seconds", "0",
        "--batch-spans", "400", "--chdb", str(path),
    ]  # fmt: skip


def _run_until_killed(path: Path, batches_before_kill: int) -> bool:
    """Start `janux derive --once`, SIGKILL it after it wrote `batches_before_kill` batches (or let it
    finish first); True when it was killed."""
    process = subprocess.Popen(_derive_command(path), stderr=subprocess.PIPE, text=True, cwd=os.getcwd())
    assert process.stderr is not None
    written = 0
    for line in process.stderr:
        if "wrote the facts of" in line:
            written += 1
            if written >= batches_before_kill:
                process.send_signal(signal.SIGKILL)
                break
    process.wait(timeout=300)
    return process.returncode == -signal.SIGKILL


# A no-hang bound that fits six `janux derive` processes, each importing chdb, on a loaded machine.
@pytest.mark.timeout(1200)
def test_a_deriver_killed_at_random_points_loses_nothing_and_doubles_nothing(tmp_path: Path) -> None:
    spans = copies(_spans(), 25)
    path = tmp_path / "chdb"
    client = ChdbClient(str(path))
    try:
        client.command(EXPORTER_DDL)
        _insert(client, spans)
        schema.init(client)
    finally:
        client.close()  # one process at a time opens a chdb directory
    rng = random.Random(18)
    kills = sum(_run_until_killed(path, rng.randint(1, 6)) for _ in range(5))
    assert kills >= 3  # most runs were really cut short
    finished = subprocess.run(_derive_command(path), capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-2_000:]
    client = ChdbClient(str(path))
    try:
        traces = len({s.trace_id for s in spans})
        for table in _DERIVED:
            client.command(f"OPTIMIZE TABLE {table} FINAL")
        rows = client.query(f"SELECT count(), uniqExact(trace_id) FROM {schema.FACTS}").result_rows
        assert [int(v) for v in rows[0]] == [traces, traces]  # one row per trace, none lost
        source = ClickHouseSource(client)
        assert source.pending_traces() == 0
        _assert_equals_memory(source, spans)
    finally:
        client.close()
