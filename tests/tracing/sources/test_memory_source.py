"""The in-memory TraceSource: same summaries and filters as the embedded store."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from janux.tracing import conventions as c
from janux.tracing.sources.file_loader import load_trace_bytes, load_trace_file, source_from_files
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from tests.support.contract_traces import TOTAL_COST, contract_trace, plain_trace
from tests.support.otlp_encode import json_lines

CONTRACT = contract_trace()
PLAIN = plain_trace()


def _source() -> MemoryTraceSource:
    return MemoryTraceSource(CONTRACT + PLAIN)


def test_summary_columns() -> None:
    rows = {s.trace_id: s for s in _source().list_traces(TraceFilter())}
    janux = rows[CONTRACT[0].trace_id]
    assert (janux.root_agent, janux.conversation_id, janux.service_name) == (
        "planner",
        "conv-1",
        "janux-demo",
    )
    assert janux.span_count == len(CONTRACT)
    assert (janux.delegations, janux.attempts, janux.failed_handoffs) == (4, 4, 3)
    assert janux.bill_cost == TOTAL_COST and janux.bill_unpriced_tokens == 100
    plain = rows[PLAIN[0].trace_id]
    assert plain.bill_cost is None and plain.bill_unpriced_tokens is None
    assert plain.bill_input_tokens == 1500 + 400 + 300  # inference spans only, not the root's aggregate
    # The other runtime's delegation: its first attempt failed, its second (last) one answered.
    assert (plain.delegations, plain.attempts, plain.failed_handoffs) == (1, 2, 0)


def test_filters_and_paging() -> None:
    source = _source()
    assert source.count_traces(TraceFilter()) == 2
    assert [s.trace_id for s in source.list_traces(TraceFilter(min_cost=1.0))] == [CONTRACT[0].trace_id]
    assert source.count_traces(TraceFilter(service="other-app")) == 1
    assert source.count_traces(TraceFilter(root_agent="planner")) == 2
    assert source.count_traces(TraceFilter(conversation_id="conv-1")) == 2
    assert source.count_traces(TraceFilter(trace_id=CONTRACT[0].trace_id[:5].upper())) == 1
    assert source.count_traces(TraceFilter(status="ok")) == 0
    assert source.count_traces(TraceFilter(start_ns=CONTRACT[0].start_ns + 1)) == 0
    assert len(source.list_traces(TraceFilter(), limit=1, offset=1)) == 1
    assert source.distinct_values("service") == ["janux-demo", "other-app"]


def test_failed_handoff_spans() -> None:
    spans = _source().failed_handoff_spans(TraceFilter())
    statuses = sorted(str(s.attributes.get(c.JANUX_HANDOFF_STATUS, "agent-error")) for s in spans)
    # The plain trace's delegation was retried successfully: not a failed handoff.
    assert statuses == [c.STATUS_CUT, c.STATUS_DENIED, c.STATUS_FALLBACK]
    assert [s.start_ns for s in spans] == sorted((s.start_ns for s in spans), reverse=True)


def test_duplicates_and_rejections_are_counted() -> None:
    source = MemoryTraceSource(CONTRACT, rejected=2, errors=["a", "b"])
    assert source.add([*CONTRACT[:4], dataclasses.replace(CONTRACT[0], span_id="f" * 16)], errors=["c"]) == 1
    stats = source.ingest_stats()
    assert (stats.spans, stats.traces, stats.duplicates, stats.rejected) == (len(CONTRACT) + 1, 1, 4, 2)
    assert stats.recent_errors == ["c", "b", "a"]
    assert len(source.get_trace(CONTRACT[0].trace_id)) == len(CONTRACT) + 1


def test_live_add_refreshes_summaries() -> None:
    source = MemoryTraceSource(CONTRACT[:3])
    first = source.list_traces(TraceFilter())[0].span_count
    source.add(CONTRACT[3:])
    assert (first, source.list_traces(TraceFilter())[0].span_count) == (3, len(CONTRACT))


def test_files_load_through_the_otlp_decoders(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(json_lines(CONTRACT) + b"\n[1, 2]\n" + json_lines(PLAIN))
    result = load_trace_file(path)
    assert len(result.spans) == len(CONTRACT) + len(PLAIN)
    assert result.rejected == 1 and result.errors[0].startswith(f"{path}:3")
    source = source_from_files([path])
    assert source.count_traces(TraceFilter()) == 2 and source.ingest_stats().rejected == 1


def test_unreadable_upload_is_counted_not_raised(tmp_path: Path) -> None:
    result = load_trace_bytes("junk.bin", b"\x00\x01garbage")
    assert result.spans == [] and result.rejected >= 1 and "junk.bin" in result.errors[0]
    missing = load_trace_file(tmp_path / "nope.jsonl")
    assert missing.rejected == 1 and "cannot open" in missing.errors[0]
