"""Conversion between `SpanRecord` and the store's rows: the write path's hot loop and its inverse.

JSON is used for attribute maps, events and links so values keep their types. The encoder is
built once; a resource's attributes are encoded once per batch (decoders share one dict among
the spans of a resource); empty lists and maps skip the encoder.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tracing.conventions import (
    BILL_KEYS,
    FAILING_STATUSES,
    GEN_AI_AGENT_NAME,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_TYPE,
    JANUX_BILL_COST,
    JANUX_BILL_INPUT_TOKENS,
    JANUX_BILL_OUTPUT_TOKENS,
    JANUX_BILL_UNPRICED_TOKENS,
    JANUX_HANDOFF_STATUS,
    OP_EXECUTE_TOOL,
    TOOL_TYPE_DELEGATE,
)
from tracing.records import EventRecord, LinkRecord, SpanRecord, attr_str
from tracing.store.schema import FLAG_DELEGATION, FLAG_FAILING
from tracing.store.usage import safe_float, safe_int, span_usage


def _fallback(value: object) -> Any:
    """Encode what JSON cannot (bytes, sets, odd objects) as text instead of failing a batch."""
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_fallback).encode


def _text(value: object) -> str:
    """A string attribute as is, anything else as "" (the derived columns are text)."""
    return value if isinstance(value, str) else ""


@dataclass(slots=True)
class StagedBatch:
    """A batch converted for the write path (see `schema.BATCH_COLUMNS` / `ROOT_COLUMNS`)."""

    rows: list[tuple[Any, ...]]
    """One row per span."""
    roots: list[tuple[Any, ...]]
    """One row per root span (agent, conversation, bill)."""

    def __len__(self) -> int:
        return len(self.rows)


def batch_rows(spans: Iterable[SpanRecord]) -> StagedBatch:
    """Staging rows for `spans`: the hot loop of ingestion, kept flat on purpose."""
    resource_json: dict[int, str] = {}
    rows: list[tuple[Any, ...]] = []
    roots: list[tuple[Any, ...]] = []
    append = rows.append
    for span in spans:
        attrs = span.attributes
        resource = span.resource_attributes
        res_json = resource_json.get(id(resource))
        if res_json is None:
            res_json = _encode(resource) if resource else "{}"
            resource_json[id(resource)] = res_json
        op = _text(attrs.get(GEN_AI_OPERATION_NAME))
        handoff_status = _text(attrs.get(JANUX_HANDOFF_STATUS))
        flags = 0
        if op == OP_EXECUTE_TOOL:
            if attrs.get(GEN_AI_TOOL_TYPE) == TOOL_TYPE_DELEGATE:
                flags |= FLAG_DELEGATION
            if handoff_status in FAILING_STATUSES:
                flags |= FLAG_FAILING
        usage = span_usage(op, attrs, span.status_code) if op else None
        append(
            (
                span.start_ns, span.trace_id, span.span_id, span.parent_span_id, span.trace_state,
                span.name, span.kind, span.service_name, res_json, span.scope_name, span.scope_version,
                _encode(attrs) if attrs else "{}", span.duration_ns, span.status_code,
                span.status_message, _events_json(span.events) if span.events else "[]",
                _links_json(span.links) if span.links else "[]", op, handoff_status, flags,
                *(usage if usage is not None else _NO_USAGE),
            )
        )  # fmt: skip
        if not span.parent_span_id:
            roots.append((span.trace_id, span.start_ns, span.name, span.service_name, *_root_fields(attrs)))
    return StagedBatch(rows, roots)


_NO_USAGE = (None,) * 7
"""The usage columns of a span that adds to no `usage_by` dimension."""


def _root_fields(attrs: dict[str, Any]) -> tuple[Any, ...]:
    """Agent, conversation and the whole-turn bill of a root span."""
    has_bill = any(attrs.get(key) is not None for key in BILL_KEYS)
    return (
        attr_str(attrs, GEN_AI_AGENT_NAME),
        attr_str(attrs, GEN_AI_CONVERSATION_ID),
        1 if has_bill else 0,
        safe_float(attrs, JANUX_BILL_COST),
        safe_int(attrs, JANUX_BILL_INPUT_TOKENS),
        safe_int(attrs, JANUX_BILL_OUTPUT_TOKENS),
        safe_int(attrs, JANUX_BILL_UNPRICED_TOKENS),
    )


def _events_json(events: list[EventRecord]) -> str:
    return _encode(
        [{"Timestamp": e.timestamp_ns, "Name": e.name, "Attributes": e.attributes} for e in events]
    )


def _links_json(links: list[LinkRecord]) -> str:
    return _encode(
        [
            {
                "TraceId": k.trace_id,
                "SpanId": k.span_id,
                "TraceState": k.trace_state,
                "Attributes": k.attributes,
            }
            for k in links
        ]
    )


SELECT_SPAN_COLUMNS = (
    "Timestamp, TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName, "
    "ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, Duration, StatusCode, StatusMessage, "
    "Events, Links"
)
"""The stored columns `span_from_row` expects, in order."""


class RowReader:
    """Turns stored rows back into records, decoding each distinct resource JSON once."""

    def __init__(self) -> None:
        self._resources: dict[str, dict[str, Any]] = {}

    def span(self, row: tuple[Any, ...]) -> SpanRecord:
        """One `SELECT_SPAN_COLUMNS` row as a record; unreadable JSON becomes an empty value."""
        res_text = row[8]
        resource = self._resources.get(res_text)
        if resource is None:
            resource = _load_dict(res_text)
            self._resources[res_text] = resource
        events_text = row[15]
        links_text = row[16]
        return SpanRecord(
            trace_id=row[1],
            span_id=row[2],
            parent_span_id=row[3],
            name=row[5],
            start_ns=row[0],
            duration_ns=row[12],
            kind=row[6],
            status_code=row[13],
            status_message=row[14],
            service_name=row[7],
            attributes=_load_dict(row[11]),
            resource_attributes=resource,
            scope_name=row[9],
            scope_version=row[10],
            trace_state=row[4],
            events=_events(events_text) if events_text != "[]" else [],
            links=_links(links_text) if links_text != "[]" else [],
        )


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _load_dict(text: str) -> dict[str, Any]:
    if text == "{}":
        return {}
    value = _load(text)
    return value if isinstance(value, dict) else {}


def _events(text: str) -> list[EventRecord]:
    value = _load(text)
    if not isinstance(value, list):
        return []
    return [
        EventRecord(int(e.get("Timestamp") or 0), str(e.get("Name") or ""), e.get("Attributes") or {})
        for e in value
        if isinstance(e, dict)
    ]


def _links(text: str) -> list[LinkRecord]:
    value = _load(text)
    if not isinstance(value, list):
        return []
    return [
        LinkRecord(
            str(k.get("TraceId") or ""),
            str(k.get("SpanId") or ""),
            str(k.get("TraceState") or ""),
            k.get("Attributes") or {},
        )
        for k in value
        if isinstance(k, dict)
    ]
