"""Plain records of decoded spans: the one shape every reader produces and every consumer reads.

A `SpanRecord` mirrors one row of the OpenTelemetry Collector ClickHouse exporter's
`otel_traces` table, so the embedded store, the ClickHouse source, the file importers and the
in-memory exporter all hand the dashboard the same thing. Attribute values keep their OTLP type
where the source has it (embedded store, files) and are strings where it does not (ClickHouse
maps are `Map(String, String)`); use the `attr_*` helpers to read them either way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

AttributeValue = str | bool | int | float | list[Any] | None
"""An attribute value as decoded: OTLP scalar, array (list) or kvlist (dict, kept JSON-encoded)."""

Attributes = dict[str, Any]
"""Attribute map of a span, event, link or resource."""

STATUS_UNSET = "Unset"
"""Normalized status code of a span whose status was never set."""
STATUS_OK = "Ok"
"""Normalized status code of a span explicitly marked OK."""
STATUS_ERROR = "Error"
"""Normalized status code of a failed span."""

KIND_INTERNAL = "Internal"
"""Normalized span kind spellings, as the ClickHouse exporter writes them today."""
KIND_SERVER = "Server"
KIND_CLIENT = "Client"
KIND_PRODUCER = "Producer"
KIND_CONSUMER = "Consumer"
KIND_UNSPECIFIED = "Unspecified"


@dataclass(slots=True)
class EventRecord:
    """One span event (e.g. HANDOFF_START)."""

    timestamp_ns: int
    """Event time, Unix nanoseconds."""
    name: str
    """Event name."""
    attributes: Attributes = field(default_factory=dict)
    """Event attributes."""


@dataclass(slots=True)
class LinkRecord:
    """One span link."""

    trace_id: str
    """Linked trace id, 32 lowercase hex characters."""
    span_id: str
    """Linked span id, 16 lowercase hex characters."""
    trace_state: str = ""
    """W3C trace state of the link."""
    attributes: Attributes = field(default_factory=dict)
    """Link attributes."""


@dataclass(slots=True)
class SpanRecord:
    """One span, shaped like a row of the Collector's `otel_traces` table."""

    trace_id: str
    """32 lowercase hex characters."""
    span_id: str
    """16 lowercase hex characters."""
    parent_span_id: str
    """16 lowercase hex characters, or "" for a root span."""
    name: str
    """Span name (`invoke_agent researcher`)."""
    start_ns: int
    """Start time, Unix nanoseconds (the table's `Timestamp`)."""
    duration_ns: int
    """End minus start, nanoseconds; negative input is kept as given and flagged by readers."""
    kind: str = KIND_INTERNAL
    """Normalized span kind (`Internal`, `Client`, ...)."""
    status_code: str = STATUS_UNSET
    """Normalized status: `Unset`, `Ok` or `Error`."""
    status_message: str = ""
    """Status description."""
    service_name: str = ""
    """`service.name` of the resource."""
    attributes: Attributes = field(default_factory=dict)
    """Span attributes (the table's `SpanAttributes`)."""
    resource_attributes: Attributes = field(default_factory=dict)
    """Resource attributes."""
    scope_name: str = ""
    """Instrumentation scope name."""
    scope_version: str = ""
    """Instrumentation scope version."""
    trace_state: str = ""
    """W3C trace state."""
    events: list[EventRecord] = field(default_factory=list)
    """Span events, in time order as received."""
    links: list[LinkRecord] = field(default_factory=list)
    """Span links."""

    @property
    def status(self) -> str:
        """`open` while the span has no end, `error` when it ended with status ERROR, else `ok`: the
        one rule every page and source uses for a loop's, attempt's or tool's state."""
        if self.duration_ns < 0:
            return "open"
        return "error" if self.status_code == STATUS_ERROR else "ok"

    @property
    def end_ns(self) -> int:
        """End time, Unix nanoseconds."""
        return self.start_ns + self.duration_ns


def attr_str(attributes: Attributes, key: str) -> str | None:
    """Attribute `key` as a string, or None when absent."""
    value = attributes.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def attr_int(attributes: Attributes, key: str) -> int | None:
    """Attribute `key` as an int (accepts ints, floats and numeric strings), or None."""
    value = attributes.get(key)
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(float(value))
    except (TypeError, ValueError, OverflowError):  # OverflowError: inf from a hostile sender
        return None


def attr_float(attributes: Attributes, key: str) -> float | None:
    """Attribute `key` as a float (accepts numbers and numeric strings), or None."""
    value = attributes.get(key)
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def attr_list(attributes: Attributes, key: str) -> list[Any] | None:
    """Attribute `key` as a list (accepts lists and JSON-array strings), or None."""
    value = attributes.get(key)
    if value is None:
        return None
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return [value]
        return decoded if isinstance(decoded, list) else [decoded]
    return [value]
