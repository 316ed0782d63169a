"""Bad values never fail a write: huge values are cut and recorded, invalid text is replaced, and a
batch that still cannot be stored fails alone, not with the batches committed next to it."""

from __future__ import annotations

import httpx
import pytest

from janux.tracing import conventions as c
from janux.tracing.receiver import start_receiver
from janux.tracing.records import EventRecord
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import TraceStore
from janux.tracing.sources.store.lock import WriteLock
from janux.tracing.sources.store.span_caps import MAX_FIELD_CHARS, MAX_VALUE_CHARS, TRUNCATED_ATTRIBUTE
from tests.support.otlp_build import pb_request, pb_span, record

T = "0af7651916cd43dd8448eb211c80319c"
BIG = MAX_VALUE_CHARS + 10


def _stored(store: TraceStore, span_id: str) -> dict[str, object]:
    (span,) = [s for s in store.get_trace(T) if s.span_id == span_id]
    return span.attributes


def test_huge_string_value_is_cut_recorded_and_counted(store: TraceStore) -> None:
    huge = record("1" * 16, "", "root", {c.GEN_AI_INPUT_MESSAGES: "x" * BIG, "small": 1}, trace_id=T)
    normal = record("2" * 16, "1" * 16, "child", {"k": "v"}, trace_id=T)
    assert store.write([huge, normal]).stored == 2
    attrs = _stored(store, "1" * 16)
    assert attrs[c.GEN_AI_INPUT_MESSAGES] == "x" * MAX_VALUE_CHARS and attrs["small"] == 1
    assert attrs[TRUNCATED_ATTRIBUTE] == [
        f"{c.GEN_AI_INPUT_MESSAGES}: {BIG:,} chars cut to {MAX_VALUE_CHARS:,}"
    ]
    assert TRUNCATED_ATTRIBUTE not in _stored(store, "2" * 16)
    stats = store.ingest_stats()
    assert stats.truncated == 1 and stats.spans == 2
    assert stats.recent_errors[0].startswith(f"span {T}/{'1' * 16}: {c.GEN_AI_INPUT_MESSAGES}: ")


def test_arrays_names_events_and_too_many_attributes(store: TraceStore) -> None:
    many = {f"k{i:02}": "v" * 100_000 for i in range(20)}  # each fits, together 2 MB
    events = [EventRecord(i, "ev", {"blob": "e" * 1_000}) for i in range(2_000)]
    span = record("1" * 16, "", "n" * BIG, {**many, "arr": ["a" * 1_000] * 200}, trace_id=T, events=events)
    store.write([span])
    (stored,) = store.get_trace(T)
    notes = stored.attributes[TRUNCATED_ATTRIBUTE]
    assert isinstance(notes, list)
    assert f"name: {BIG:,} chars cut to {MAX_VALUE_CHARS:,}" in notes
    assert any(n.startswith("attributes: ") and f"over {MAX_FIELD_CHARS:,} chars dropped" in n for n in notes)
    assert any(n.startswith("events: ") and "event(s) over" in n for n in notes)
    assert len(stored.name) == MAX_VALUE_CHARS and 0 < len(stored.events) < 2_000
    assert sum(len(str(v)) for v in stored.attributes.values()) <= MAX_FIELD_CHARS + 10_000
    assert store.ingest_stats().truncated == 1


def test_huge_resource_attribute_is_noted_on_every_span(store: TraceStore) -> None:
    resource = {c.SERVICE_NAME: "svc", "host.blob": "r" * BIG}
    spans = [record(f"{i:016x}", "", "s", trace_id=T) for i in (1, 2)]
    for span in spans:
        span.resource_attributes = resource
    store.write(spans)
    for stored in store.get_trace(T):
        assert len(stored.resource_attributes["host.blob"]) == MAX_VALUE_CHARS
        assert stored.attributes[TRUNCATED_ATTRIBUTE] == [
            f"resource.host.blob: {BIG:,} chars cut to {MAX_VALUE_CHARS:,}"
        ]
    assert store.ingest_stats().truncated == 2


def test_huge_attribute_over_otlp_http_is_stored_cut(store: TraceStore) -> None:
    running = start_receiver(store, "127.0.0.1", 0, None, max_body_bytes=8 * 1024 * 1024)
    try:
        body = pb_request(
            [pb_span(T, "00000000000000a1", attrs={"blob": "b" * 3_000_000})]
        ).SerializeToString()
        url = f"http://127.0.0.1:{running.http_port}/v1/traces"
        response = httpx.post(url, content=body, headers={"content-type": "application/x-protobuf"})
    finally:
        running.stop()
    assert response.status_code == 200
    assert len(str(_stored(store, "00000000000000a1")["blob"])) == MAX_VALUE_CHARS
    assert store.ingest_stats().truncated == 1


def test_text_that_is_not_unicode_is_replaced_and_counted(store: TraceStore) -> None:
    root = record(
        "1" * 16,
        "",
        "plan\ud800",
        {c.GEN_AI_AGENT_NAME: "a\udfff", c.GEN_AI_CONVERSATION_ID: "c\ud800"},
        trace_id=T,
    )
    assert store.write([root, record("2" * 16, "1" * 16, "fine", trace_id=T)]).stored == 2
    (summary,) = store.list_traces(TraceFilter())
    assert (summary.root_name, summary.root_agent, summary.conversation_id) == (
        "plan\ufffd",
        "a\ufffd",
        "c\ufffd",
    )
    stats = store.ingest_stats()
    assert stats.repaired == 1 and "not valid Unicode replaced" in stats.recent_errors[0]


def test_a_batch_that_cannot_be_stored_fails_alone(store: TraceStore) -> None:
    # Holding the inter-process write lock makes the writer queue the next batches into one group.
    lock = WriteLock(store.data_dir)
    with lock.held():
        first = store.submit([record("1" * 16, trace_id=T)])
        bad = store.submit([record("2" * 16, trace_id=T, start=2**63)])  # too large for SQLite
        good = store.submit([record("3" * 16, trace_id=T)])
    lock.close()
    assert first.result(30).stored == 1 and good.result(30).stored == 1
    with pytest.raises(OverflowError):
        bad.result(30)
    assert [s.span_id for s in store.get_trace(T)] == ["1" * 16, "3" * 16]
