"""The write path's statements: multi-row inserts in chunks, duplicates inside one batch, batch sizes
around the chunk boundaries, and the stored JSON text."""

from __future__ import annotations

import json
import math
import sqlite3
import sys
from pathlib import Path

import pytest

from janux.tracing import conventions as c
from janux.tracing.records import SpanRecord
from janux.tracing.sources.protocol import TraceFilter, TraceSummary
from janux.tracing.sources.store import open_store, writer
from janux.tracing.sources.store.bulk import MAX_ROWS_PER_STATEMENT, insert_rows
from janux.tracing.sources.store.ingest import apply_batches
from janux.tracing.sources.store.lock import WriteLock
from janux.tracing.sources.store.rows import batch_rows
from janux.tracing.sources.store.schema import connect, database_path
from tests.support.otlp_build import record
from tests.support.wait import wait_until
from tests.tracing.sources.test_store import janux_turn, other_runtime_turn

T = "0123456789abcdef0123456789abcdef"


def test_insert_rows_chunks_by_the_parameter_limit_and_keeps_the_first_of_two_keys() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, a TEXT, b TEXT)")
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 7)  # two rows of three values per statement
    rows = [(k, f"a{k}", "first") for k in range(13)] + [(4, "a4", "second")]
    assert insert_rows(conn, "INSERT OR IGNORE INTO t (k, a, b)", 3, rows) == 13
    assert conn.execute("SELECT k, a, b FROM t ORDER BY k").fetchall() == rows[:13]
    assert insert_rows(conn, "INSERT OR IGNORE INTO t (k, a, b)", 3, []) == 0


def _turns(count: int) -> list[SpanRecord]:
    spans: list[SpanRecord] = []
    for n in range(count):
        turn = janux_turn if n % 2 else other_runtime_turn
        spans += turn(f"{n + 1:032x}", start=1_000 * (n + 1))
    return spans


def _state(path: Path, batches: list[list[SpanRecord]]) -> tuple[list[TraceSummary], int, int, list[int]]:
    with open_store(path) as store:
        stored = sum(store.write(batch).stored for batch in batches)
        stats = store.ingest_stats()
        usage = [g.input_tokens or 0 for g in store.usage_by("model", TraceFilter())]
        summaries = store.list_traces(TraceFilter(), limit=1000)
        assert stats.spans == stored
        return summaries, stats.spans, stats.duplicates, usage


@pytest.mark.parametrize("size", [1, MAX_ROWS_PER_STATEMENT - 1, MAX_ROWS_PER_STATEMENT + 3, 777])
def test_any_batch_size_with_duplicates_gives_the_summaries_of_one_clean_write(
    tmp_path: Path, size: int
) -> None:
    spans = _turns(160)  # 880 spans
    expected = _state(tmp_path / "one", [spans])
    batches = [spans[i : i + size] for i in range(0, len(spans), size)]
    batches[0] = batches[0] + batches[0][:1]  # a span twice in one batch
    batches.append(spans[size // 2 : size // 2 + size])  # a client retry of stored spans
    summaries, stored, duplicates, usage = _state(tmp_path / "many", batches)
    assert (summaries, stored, usage) == (expected[0], expected[1], expected[3])
    assert duplicates == 1 + len(batches[-1])


def test_a_span_twice_in_one_batch_is_stored_as_its_first_copy(tmp_path: Path) -> None:
    first = record("1" * 16, "", "chat m", {c.GEN_AI_OPERATION_NAME: "other"}, trace_id=T, start=10)
    usage = {c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_USAGE_INPUT_TOKENS: 99}
    second = record("1" * 16, "", "chat m", usage, trace_id=T, start=5, status="Error")
    other = record("2" * 16, "1" * 16, "chat m", {**usage, c.GEN_AI_USAGE_INPUT_TOKENS: 7}, trace_id=T)
    with open_store(tmp_path) as store:
        result = store.write([first, second, other])
        assert (result.stored, result.duplicates) == (2, 1)
        assert [s.attributes for s in store.get_trace(T)] == [first.attributes, other.attributes]
        (summary,) = store.list_traces(TraceFilter())
        assert (summary.start_ns, summary.span_count, summary.error_spans) == (10, 2, 0)
        assert summary.bill_input_tokens == 7  # the inference sum of the spans stored
        assert [g.input_tokens for g in store.usage_by("model", TraceFilter())] == [7]


def test_stored_attribute_text_is_compact_json(tmp_path: Path) -> None:
    attrs = {"s": "zß\u2603\"\\\n", "i": -(2**62), "f": 0.1, "b": False, "n": None, "l": [1, "a", [2.5]],
             "m": {"k": {"x": [True]}}, "inf": math.inf, "-inf": -math.inf, "big": 2**70}  # fmt: skip
    odd = {"bytes": b"\x00\xff", "tuple": (1, 2), "set": frozenset({3}), "obj": Path("p")}
    with open_store(tmp_path) as store:
        store.write([record("1" * 16, attrs={**attrs, **odd}, trace_id=T)])
        (back,) = store.get_trace(T)
    with sqlite3.connect(tmp_path / "traces.sqlite3") as conn:
        (text,) = conn.execute("SELECT SpanAttributes FROM otel_traces").fetchone()
    plain = json.dumps(attrs, ensure_ascii=False, separators=(",", ":"))
    assert text.startswith(plain[:-1] + ",")
    assert back.attributes == {**attrs, "bytes": "00ff", "tuple": [1, 2], "set": [3], "obj": "p"}


def test_the_writer_checkpoints_the_wal_itself_every_few_thousand_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "CHECKPOINT_EVERY_SPANS", 600)
    db = tmp_path / "traces.sqlite3"
    spans = _turns(120)
    with open_store(tmp_path) as store:
        empty = db.stat().st_size
        store.write(spans[:550])  # still only in the log
        assert db.stat().st_size == empty
        store.write(spans[550:])  # past 600 spans: copied into the database file after the commit
        # The checkpoint runs on the writer's thread after the commit and grows the file page by
        # page: wait for the size it reaches, not just for the first page.
        wait_until(lambda: db.stat().st_size > empty + 50 * 4096, timeout_s=60, what="the WAL checkpoint")
        assert store.ingest_stats().spans == len(spans)


def test_a_group_of_batches_is_stored_as_one_with_the_results_of_one_after_the_other(tmp_path: Path) -> None:
    spans = _turns(40)
    expected = _state(tmp_path / "one", [spans])
    extra = record("f" * 16, trace_id=T)
    batches = [spans[:10], spans[10:70], spans[60:150], [*spans[150:], extra], spans[:5]]
    with open_store(tmp_path / "group") as store:
        # While the test holds the inter-process write lock, nothing can commit: every batch is with
        # the writer when the lock is released, and they are committed as one group (a copy inside
        # it, one before).
        lock = WriteLock(store.data_dir)
        with lock.held():
            futures = [store.submit(batch) for batch in batches]
        lock.close()
        results = [(f.result(30).stored, f.result(30).duplicates) for f in futures]
        assert store._writer.commits == 1
        summaries = store.list_traces(TraceFilter(), limit=1000)
        stats = store.ingest_stats()
    assert results == [(10, 0), (60, 0), (80, 10), (len(spans) - 150 + 1, 0), (0, 5)]
    assert [s for s in summaries if s.trace_id != T] == expected[0]
    assert (stats.spans, stats.duplicates) == (len(spans) + 1, 15)


def test_a_group_with_text_to_repair_counts_the_repair_on_its_own_batch(tmp_path: Path) -> None:
    good = _turns(3)
    bad = [record("1" * 16, name="plan\ud800", trace_id=T)]
    with open_store(tmp_path) as store:
        lock = WriteLock(store.data_dir)
        with lock.held():
            futures = [store.submit(good[2:]), store.submit(good), store.submit(bad), store.submit(good[:2])]
        lock.close()
        results = [f.result(30) for f in futures]
        assert store._writer.commits == 1
        counts = [(r.stored, r.duplicates, r.repaired) for r in results]
        assert counts == [(len(good) - 2, 0, 0), (2, len(good) - 2, 0), (1, 0, 1), (0, 2, 0)]
        assert store.get_trace(T)[0].name == "plan\ufffd"


def test_apply_batches_shares_stored_and_skipped_spans_as_if_one_after_the_other(tmp_path: Path) -> None:
    spans = _turns(20)
    expected = _state(tmp_path / "one", [spans])
    open_store(tmp_path / "direct").close()
    conn = connect(database_path(tmp_path / "direct"), writer=True)
    batches = [batch_rows(part) for part in (spans[:30], spans[20:80], spans[80:], spans[:3])]
    conn.execute("BEGIN IMMEDIATE")
    assert apply_batches(conn, batches) == [(30, 0), (50, 10), (len(spans) - 80, 0), (0, 3)]
    conn.execute("COMMIT")
    conn.close()
    with open_store(tmp_path / "direct") as store:
        assert store.list_traces(TraceFilter(), limit=1000) == expected[0]


def test_a_writing_process_switches_threads_often_enough_for_the_writer(tmp_path: Path) -> None:
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        with open_store(tmp_path) as store:
            store.write(_turns(1))
            assert sys.getswitchinterval() == pytest.approx(writer.SWITCH_INTERVAL_S)
        sys.setswitchinterval(writer.SWITCH_INTERVAL_S / 10)  # never raised
        with open_store(tmp_path) as store:
            store.write(_turns(2))
            assert sys.getswitchinterval() == pytest.approx(writer.SWITCH_INTERVAL_S / 10)
    finally:
        sys.setswitchinterval(before)


def test_a_staged_batch_keeps_the_records_of_traces_without_janux_accounting_only() -> None:
    """Only a trace read whole after the batch needs its records (`derive.py`): Janux's own
    traces are read from their rows, so their records are not held until the commit."""
    janux, other = janux_turn(), other_runtime_turn()
    staged = batch_rows([*janux, *other])
    assert len(staged.rows) == len(janux) + len(other)
    assert staged.spans == other
