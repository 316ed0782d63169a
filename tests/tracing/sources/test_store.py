"""The embedded store: round trip, dedup, trace summaries, filters, paging, retention."""

from __future__ import annotations

import math
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from janux.tracing import conventions as c
from janux.tracing.records import EventRecord, LinkRecord, SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter, TraceSummary
from janux.tracing.sources.store import TraceStore, open_store
from tests.support.otlp_build import record

T2 = "0af7651916cd43dd8448eb211c80319c"


def janux_turn(trace_id: str = "5b8efff798038103d269b633813fc60c", start: int = 1_000) -> list[SpanRecord]:
    """A root turn with one failed delegation (2 ERROR attempts) and two chat rounds."""
    root = record(
        "1" * 16,
        "",
        "invoke_agent planner",
        {
            c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
            c.GEN_AI_AGENT_NAME: "planner",
            c.GEN_AI_CONVERSATION_ID: "conv-1",
            c.JANUX_BILL_INPUT_TOKENS: 100,
            c.JANUX_BILL_OUTPUT_TOKENS: 20,
            c.JANUX_BILL_COST: 0.25,
            c.JANUX_BILL_UNPRICED_TOKENS: 0,
        },
        trace_id=trace_id,
        start=start,
        duration=1000,
    )
    tool = record(
        "2" * 16,
        root.span_id,
        "execute_tool delegate.researcher",
        {
            c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
            c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_DELEGATE,
            c.JANUX_HANDOFF_STATUS: c.STATUS_FAILED,
        },
        trace_id=trace_id,
        start=start + 10,
        status="Error",
    )
    attempts = [
        record(
            f"{3 + i:016x}",
            tool.span_id,
            "invoke_agent researcher",
            {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.JANUX_AGENT_DEPTH: 1},
            trace_id=trace_id,
            start=start + 20 + i,
            status="Error",
        )
        for i in range(2)
    ]
    chats = [
        record(
            f"{9 + i:016x}",
            root.span_id,
            "chat m",
            {
                c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
                c.GEN_AI_USAGE_INPUT_TOKENS: 40,
                c.GEN_AI_USAGE_OUTPUT_TOKENS: 5,
            },
            trace_id=trace_id,
            start=start + 50,
        )
        for i in range(2)
    ]
    return [root, tool, *attempts, *chats]  # fmt: skip


def other_runtime_turn(trace_id: str = T2, start: int = 5_000) -> list[SpanRecord]:
    """A plain GenAI trace: root agent -> tool -> ERROR agent, and chat usage only on chat spans."""
    root = record(
        "a" * 16,
        "",
        "invoke_agent triage",
        {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: "triage"},
        trace_id=trace_id,
        start=start,
        service="other",
    )
    tool = record(
        "b" * 16,
        root.span_id,
        "execute_tool transfer",
        {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL},
        trace_id=trace_id,
        start=start + 1,
        service="other",
    )
    child = record(
        "c" * 16,
        tool.span_id,
        "invoke_agent billing",
        {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT},
        trace_id=trace_id,
        start=start + 2,
        status="Error",
        service="other",
    )
    chat = record(
        "d" * 16,
        root.span_id,
        "chat m",
        {
            c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
            c.GEN_AI_USAGE_INPUT_TOKENS: 7,
            c.GEN_AI_USAGE_OUTPUT_TOKENS: 3,
            c.JANUX_TURN_INPUT_TOKENS: 999,
        },
        trace_id=trace_id,
        start=start + 3,
        service="other",
    )
    agent_usage = record(
        "e" * 16,
        root.span_id,
        "invoke_agent sub",
        {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_USAGE_INPUT_TOKENS: 1000},
        trace_id=trace_id,
        start=start + 4,
        service="other",
    )
    return [root, tool, child, chat, agent_usage]  # fmt: skip


def test_round_trip_keeps_types_events_and_links(store: TraceStore) -> None:
    span = record(
        "1" * 16, "", "root",
        {"s": "x", "i": 2**62, "f": 0.5, "b": True, "l": [1, "a"], "m": {"k": [1]}, "nan": math.inf},
        events=[EventRecord(5, "HANDOFF_START", {"janux.handoff.attempts": 2})],
    )  # fmt: skip
    span.links = [LinkRecord(T2, "2" * 16, "k=v", {"n": 1})]
    span.scope_name, span.scope_version, span.trace_state, span.kind = "lib", "1", "ts", "Client"
    assert store.write([span]).stored == 1
    (back,) = store.get_trace(span.trace_id)
    assert back == span


def test_duplicates_stored_once_and_counted(store: TraceStore) -> None:
    spans = janux_turn()
    first = store.write(spans[:3])
    again = store.write([*spans, spans[0]])
    assert (first.stored, first.duplicates) == (3, 0)
    assert (again.stored, again.duplicates) == (3, 4)
    assert len(store.get_trace(spans[0].trace_id)) == 6
    stats = store.ingest_stats()
    assert (stats.spans, stats.traces, stats.duplicates) == (6, 1, 4)
    assert store.list_traces(TraceFilter())[0].span_count == 6


def test_janux_summary(store: TraceStore) -> None:
    store.write(janux_turn())
    (summary,) = store.list_traces(TraceFilter())
    assert summary == TraceSummary(
        trace_id="5b8efff798038103d269b633813fc60c", start_ns=1000, duration_ns=1000, service_name="svc",
        root_name="invoke_agent planner", root_agent="planner", conversation_id="conv-1", span_count=6,
        delegations=1, attempts=2, failed_handoffs=1, error_spans=3, bill_cost=0.25, bill_input_tokens=100,
        bill_output_tokens=20, bill_unpriced_tokens=0, inference_spans=2, usage_read_spans=2,
        bill_reconciled=False,  # it bills 100 tokens, yet no loop records its own janux.turn.*
    )  # fmt: skip


def test_other_runtime_summary_sums_usage_at_the_finest_level(store: TraceStore) -> None:
    store.write(other_runtime_turn())
    (summary,) = store.list_traces(TraceFilter())
    # The agent below the tool span and the agent nested directly in the root are both delegations
    # (`janux.tracing.analysis.readers.structure`); the one below the tool failed.
    assert (summary.attempts, summary.failed_handoffs, summary.delegations) == (2, 1, 2)
    assert (summary.inference_spans, summary.usage_read_spans, summary.partly_unread) == (1, 1, False)
    # The chat's 7 in (never the `janux.turn.*` it carries) plus the 1,000 the agent `sub` reports on
    # its own span: nothing below it carries usage, so that is its own (`readers.agent_usage`).
    assert (summary.bill_input_tokens, summary.bill_output_tokens, summary.bill_cost) == (1007, 3, None)
    assert summary.bill_unpriced_tokens is None and summary.service_name == "other"
    assert summary.bill_reconciled is None  # no bill: nothing to reconcile


def _summaries_after(tmp: Path, batches: list[list[SpanRecord]]) -> list[TraceSummary]:
    with open_store(tmp) as store:
        for batch in batches:
            store.write(batch)
        return store.list_traces(TraceFilter())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), cuts=st.lists(st.integers(1, 10), max_size=4), repeat=st.booleans())
def test_summary_independent_of_order_batching_and_retries(
    tmp_path_factory: object, seed: int, cuts: list[int], repeat: bool
) -> None:
    spans = janux_turn() + other_runtime_turn()
    expected = _summaries_after(tmp_path_factory.mktemp("one"), [spans])  # type: ignore[attr-defined]
    shuffled = spans[:]
    random.Random(seed).shuffle(shuffled)
    batches, start = [], 0
    for cut in sorted(set(cuts)):
        batches.append(shuffled[start:cut])
        start = cut
    batches.append(shuffled[start:])
    if repeat:
        batches.append(shuffled[: len(shuffled) // 2])
    assert _summaries_after(tmp_path_factory.mktemp("many"), batches) == expected  # type: ignore[attr-defined]


def test_root_arriving_late_fills_root_columns_and_earliest_service_before(store: TraceStore) -> None:
    turn = janux_turn()
    store.write(turn[1:])
    (before,) = store.list_traces(TraceFilter())
    assert before.root_name == "" and before.root_agent is None and before.bill_cost is None
    assert before.bill_input_tokens == 80
    store.write(turn[:1])
    (after,) = store.list_traces(TraceFilter())
    assert after.root_name == "invoke_agent planner" and after.bill_input_tokens == 100


def test_filters_and_paging(store: TraceStore) -> None:
    for i in range(5):
        store.write(janux_turn(f"{i + 1:032x}", start=1000 * (i + 1)))
    store.write(other_runtime_turn(start=100_000))
    everything = TraceFilter()
    assert store.count_traces(everything) == 6
    newest = store.list_traces(everything, limit=2)
    assert [s.trace_id for s in newest] == [T2, f"{5:032x}"]
    assert [s.trace_id for s in store.list_traces(everything, limit=2, offset=2)] == [
        f"{4:032x}",
        f"{3:032x}",
    ]
    assert store.count_traces(TraceFilter(start_ns=2000, end_ns=4000)) == 2
    assert store.count_traces(TraceFilter(service="other")) == 1
    assert store.count_traces(TraceFilter(root_agent="planner")) == 5
    assert store.count_traces(TraceFilter(conversation_id="conv-1")) == 5
    assert store.count_traces(TraceFilter(status="error")) == 6
    assert store.count_traces(TraceFilter(status="ok")) == 0
    assert store.count_traces(TraceFilter(has_failed_handoffs=True)) == 6
    assert store.count_traces(TraceFilter(min_cost=0.2)) == 5
    assert store.count_traces(TraceFilter(min_cost=0.3)) == 0
    assert store.count_traces(TraceFilter(trace_id="0AF765")) == 1
    assert store.count_traces(TraceFilter(trace_id="not-hex")) == 0


def test_get_traces_and_failed_handoffs(store: TraceStore) -> None:
    store.write(janux_turn() + other_runtime_turn())
    traces = store.get_traces([T2, "F" * 32])
    assert len(traces[T2]) == 5 and traces["f" * 32] == []
    assert [s.start_ns for s in traces[T2]] == sorted(s.start_ns for s in traces[T2])
    failed = store.failed_handoff_spans(TraceFilter())
    # The other runtime's failed delegation is its tool span, as its facts say (every source alike).
    assert [s.name for s in failed] == ["execute_tool transfer", "execute_tool delegate.researcher"]
    memory = MemoryTraceSource(janux_turn() + other_runtime_turn()).failed_handoff_spans(TraceFilter())
    assert [(s.trace_id, s.span_id) for s in failed] == [(s.trace_id, s.span_id) for s in memory]
    assert (
        store.failed_handoff_spans(TraceFilter(service="svc"))[0].attributes[c.JANUX_HANDOFF_STATUS]
        == "failed"
    )


def test_distinct_values(store: TraceStore) -> None:
    store.write(janux_turn() + other_runtime_turn())
    assert store.distinct_values("service") == ["other", "svc"]
    assert store.distinct_values("root_agent") == ["planner", "triage"]
    assert store.distinct_values("conversation") == ["conv-1"]


def test_rejections_are_counted_with_recent_messages(store: TraceStore) -> None:
    store.write([], rejected=3, errors=["spans[0].traceId: bad", "spans[1].spanId: bad"])
    stats = store.ingest_stats()
    assert stats.rejected == 3 and stats.recent_errors == ["spans[1].spanId: bad", "spans[0].traceId: bad"]


def test_prune_deletes_traces_that_ended_before_the_cutoff(store: TraceStore) -> None:
    day = 86_400 * 10**9
    store.write(janux_turn("1" * 32, start=1 * day))
    store.write(janux_turn("2" * 32, start=10 * day))
    result = store.prune(older_than_days=5, now_ns=12 * day)
    assert (result.traces, result.spans) == (1, 6)
    assert [s.trace_id for s in store.list_traces(TraceFilter())] == ["2" * 32]
    assert store.get_trace("1" * 32) == [] and store.ingest_stats().spans == 6


def test_store_reopens_with_data(tmp_path: Path) -> None:
    with open_store(tmp_path) as first:
        first.write(janux_turn())
    with open_store(tmp_path) as second:
        assert second.count_traces(TraceFilter()) == 1


def test_default_data_dir_honours_env(tmp_path: Path, monkeypatch: object) -> None:
    from janux.tracing.sources.store import default_data_dir

    monkeypatch.setenv("JANUX_DATA_DIR", str(tmp_path / "x"))  # type: ignore[attr-defined]
    assert default_data_dir() == tmp_path / "x"
    monkeypatch.delenv("JANUX_DATA_DIR")  # type: ignore[attr-defined]
    assert default_data_dir() == Path.home() / ".janux" / "data"
