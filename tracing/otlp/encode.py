"""`SpanRecord`s back into OTLP: `ExportTraceServiceRequest` messages, and their OTLP/JSON form.

The inverse of `proto_decode` / `json_decode` for everything a record holds: resource and scope
(spans that share them share one `ResourceSpans` / `ScopeSpans`), attributes with their types,
events, links, status, kind, trace state and times. Decoding an encoded record gives it back
unchanged. What records do not keep (scope attributes, schema URLs, dropped counts) is not written.

The JSON form is the Collector file exporter's: hex trace and span ids, enums as integers, int64
values as decimal strings, default values left out (the OTLP/JSON encoding of the specification).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from janux.tracing.conventions import SERVICE_NAME
from janux.tracing.otlp.enums import KIND_BY_NUMBER, STATUS_BY_NUMBER
from janux.tracing.otlp.json_values import INT64_MAX, INT64_MIN
from janux.tracing.records import EventRecord, LinkRecord, SpanRecord

_KIND_NUMBER = {name: number for number, name in enumerate(KIND_BY_NUMBER)}
_STATUS_NUMBER = {name: number for number, name in enumerate(STATUS_BY_NUMBER)}
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")
_SURROGATES = re.compile("[\ud800-\udfff]")


def set_any_value(target: AnyValue, value: Any) -> None:
    """Fill `target` with `value` as decoded records hold it: bool, int, float, str, list (array),
    dict (kvlist), None (an empty AnyValue). An int beyond int64 or any other type is written as
    its text: OTLP has no other place for it."""
    if value is None:
        return
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            target.int_value = value
        else:
            target.string_value = str(value)
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, list):
        values = target.array_value.values
        for item in value:
            set_any_value(values.add(), item)
        if not value:
            target.array_value.SetInParent()  # an empty array stays an array, not "no value"
    elif isinstance(value, dict):
        add_attributes(target.kvlist_value.values, value)
        if not value:
            target.kvlist_value.SetInParent()
    else:
        target.string_value = str(value)


def add_attributes(target: Any, attributes: dict[str, Any]) -> None:
    """Append `attributes` to a repeated `KeyValue` field."""
    for key, value in attributes.items():
        kv: KeyValue = target.add()
        kv.key = key
        set_any_value(kv.value, value)
        if value is None:
            kv.value.SetInParent()  # written as `"value": {}`, read back as None


def _span(record: SpanRecord, target: Span) -> None:
    target.trace_id = bytes.fromhex(record.trace_id)
    target.span_id = bytes.fromhex(record.span_id)
    if record.parent_span_id:
        target.parent_span_id = bytes.fromhex(record.parent_span_id)
    if record.trace_state:
        target.trace_state = record.trace_state
    target.name = record.name
    target.kind = _KIND_NUMBER.get(record.kind, 0)  # type: ignore[assignment]
    target.start_time_unix_nano = max(0, record.start_ns)
    target.end_time_unix_nano = max(0, record.end_ns)
    add_attributes(target.attributes, record.attributes)
    for event in record.events:
        added = target.events.add()
        added.time_unix_nano = max(0, event.timestamp_ns)
        added.name = event.name
        add_attributes(added.attributes, event.attributes)
    for link in record.links:
        made = target.links.add()
        made.trace_id = bytes.fromhex(link.trace_id)
        made.span_id = bytes.fromhex(link.span_id)
        if link.trace_state:
            made.trace_state = link.trace_state
        add_attributes(made.attributes, link.attributes)
    code = _STATUS_NUMBER.get(record.status_code, 0)
    if code or record.status_message:
        target.status.code = code  # type: ignore[assignment]
        target.status.message = record.status_message


def _clean(value: Any) -> Any:
    """`value` with every lone surrogate in its texts (keys included) replaced by U+FFFD: protobuf
    strings are UTF-8, which cannot hold them."""
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value)
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {_clean(key): _clean(item) for key, item in value.items()}
    return value


def _cleaned_record(record: SpanRecord) -> SpanRecord:
    """A copy of `record` whose texts are valid UTF-8."""
    events = [EventRecord(e.timestamp_ns, _clean(e.name), _clean(e.attributes)) for e in record.events]
    links = [
        LinkRecord(link.trace_id, link.span_id, _clean(link.trace_state), _clean(link.attributes))
        for link in record.links
    ]
    return replace(
        record, name=_clean(record.name), status_message=_clean(record.status_message),
        attributes=_clean(record.attributes), scope_name=_clean(record.scope_name),
        scope_version=_clean(record.scope_version), trace_state=_clean(record.trace_state),
        events=events, links=links,
    )  # fmt: skip


def _resource_attributes(record: SpanRecord) -> dict[str, Any]:
    """The resource as stored; `service.name` added when only the record's service column has it
    (a source that keeps the column but not the attribute), so a reader finds the same service."""
    attributes = record.resource_attributes
    if record.service_name and SERVICE_NAME not in attributes:
        return {SERVICE_NAME: record.service_name, **attributes}
    return attributes


def encode_request(records: Iterable[SpanRecord]) -> ExportTraceServiceRequest:
    """One request holding `records`, grouped by resource and then by scope, in first-seen order."""
    request = ExportTraceServiceRequest()
    scopes: dict[tuple[str, str, str], ScopeSpans] = {}
    resources: dict[str, Any] = {}
    # Sources share one resource dict among the spans of a resource: its key is made once per dict.
    keys: dict[tuple[int, str], str] = {}
    for record in records:
        seen = (id(record.resource_attributes), record.service_name)
        resource_key = keys.get(seen)
        if resource_key is None:
            resource = _clean(_resource_attributes(record))
            resource_key = keys[seen] = json.dumps(resource, sort_keys=True, default=str)
            if resource_key not in resources:
                resources[resource_key] = request.resource_spans.add()
                add_attributes(resources[resource_key].resource.attributes, resource)
        resource_spans = resources[resource_key]
        scope_key = (resource_key, record.scope_name, record.scope_version)
        scope_spans = scopes.get(scope_key)
        if scope_spans is None:
            scope_spans = resource_spans.scope_spans.add()
            scope_spans.scope.name = _clean(record.scope_name)
            scope_spans.scope.version = _clean(record.scope_version)
            scopes[scope_key] = scope_spans
        try:
            _span(record, scope_spans.spans.add())
        except UnicodeEncodeError:  # a lone surrogate (text that was not Unicode): U+FFFD, as the store does
            del scope_spans.spans[-1]
            _span(_cleaned_record(record), scope_spans.spans.add())
    return request


def _hex_ids(message: dict[str, Any]) -> None:
    """Protobuf's JSON mapping writes bytes in base64; OTLP/JSON writes trace and span ids in hex."""
    for field in _ID_FIELDS:
        value = message.get(field)
        if value:
            message[field] = base64.b64decode(value).hex()


def request_json(request: ExportTraceServiceRequest) -> str:
    """The OTLP/JSON text of `request` on one line, as the Collector's file exporter writes it."""
    document = MessageToDict(request, use_integers_for_enums=True)
    for resource_spans in document.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            for span in scope_spans.get("spans", ()):
                _hex_ids(span)
                for link in span.get("links", ()):
                    _hex_ids(link)
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


