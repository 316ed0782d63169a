"""normalized_tree: exporter-independent values, bad input handled, and the SDK conversion."""

from __future__ import annotations

import json
from dataclasses import replace

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from janux.demo.scenarios import run_scenarios
from janux.tracing import conventions as c
from janux.tracing.analysis.normalize import normalized_tree
from janux.tracing.records import EventRecord, SpanRecord
from janux.tracing.sdk.convert import span_record_from_readable, span_records_from_readable


def _as_clickhouse_row(span: SpanRecord) -> SpanRecord:
    """Attributes as ClickHouse's Map(String, String) gives them back: every value a string."""

    def stringify(attributes: dict[str, object]) -> dict[str, object]:
        return {
            k: v if isinstance(v, str) else json.dumps(v) if isinstance(v, list) else str(v)
            for k, v in attributes.items()
        }

    return replace(
        span,
        attributes=stringify(span.attributes),
        events=[EventRecord(e.timestamp_ns, e.name, stringify(e.attributes)) for e in span.events],
    )


async def test_typed_and_all_string_rows_normalize_to_the_same_tree() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    await run_scenarios(
        ["nested_delegation", "retry_then_success", "cut_max_tokens"],
        tracer_provider=provider,
        latency_scale=0,
    )
    records = span_records_from_readable(exporter.get_finished_spans())
    typed = normalized_tree(records)
    assert len(typed) == 3
    assert normalized_tree([_as_clickhouse_row(span) for span in records]) == typed
    assert normalized_tree(list(reversed(records))) == typed


def _span(span_id: str, parent: str, start: int, name: str | None = None) -> SpanRecord:
    return SpanRecord(
        trace_id="t" * 32,
        span_id=span_id,
        parent_span_id=parent,
        name=name or span_id,
        start_ns=start,
        duration_ns=1,
    )


def test_orphans_duplicates_and_cycles_never_raise() -> None:
    spans = [
        _span("root", "", 0),
        _span("child", "root", 2),
        _span("child", "root", 9, name="duplicate ignored"),
        _span("orphan", "missing", 1),
        _span("loop_a", "loop_b", 5),
        _span("loop_b", "loop_a", 6),
        _span("self", "self", 7),
    ]
    tree = normalized_tree(spans)
    names = [node["name"] for node in tree]
    # The span index's order: real roots, then orphans and links cut to break a cycle, by start.
    assert names == ["root", "orphan", "loop_a", "self"]
    assert [kid["name"] for kid in tree[0]["children"]] == ["child"]
    assert [kid["name"] for kid in tree[2]["children"]] == ["loop_b"]


def test_a_very_deep_chain_does_not_exhaust_the_stack() -> None:
    spans = [_span(f"s{i}", f"s{i - 1}" if i else "", i) for i in range(5000)]
    node = normalized_tree(spans)[0]
    depth = 0
    while node["children"]:
        node = node["children"][0]
        depth += 1
    assert depth == 4999


def test_span_record_from_readable_keeps_kind_status_types_events_and_resource() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "svc"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("janux", "1.2")
    with (
        tracer.start_as_current_span("parent"),
        tracer.start_as_current_span("child", kind=SpanKind.CLIENT) as child,
    ):
        child.set_attribute(c.GEN_AI_RESPONSE_FINISH_REASONS, ("stop",))
        child.set_attribute(c.JANUX_ROUND_COST, 0.5)
        child.add_event("HANDOFF_START", {c.JANUX_HANDOFF_DEPTH: 1})
        child.set_status(Status(StatusCode.ERROR, "bad"))
    finished = {span.name: span for span in exporter.get_finished_spans()}
    record = span_record_from_readable(finished["child"])
    parent = span_record_from_readable(finished["parent"])
    assert record.kind == "Client" and record.status_code == "Error" and record.status_message == "bad"
    assert record.attributes[c.GEN_AI_RESPONSE_FINISH_REASONS] == ["stop"]
    assert record.attributes[c.JANUX_ROUND_COST] == 0.5
    assert record.events[0].name == "HANDOFF_START" and record.events[0].attributes == {
        c.JANUX_HANDOFF_DEPTH: 1
    }
    assert record.parent_span_id == parent.span_id and parent.parent_span_id == ""
    assert len(record.trace_id) == 32 and len(record.span_id) == 16
    assert record.service_name == "svc" and record.scope_name == "janux" and record.scope_version == "1.2"
    assert record.duration_ns >= 0 and parent.kind == "Internal" and parent.status_code == "Unset"
    assert span_record_from_readable(finished["child"], service_name="other").service_name == "other"
