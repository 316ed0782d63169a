"""Size limits of one stored span: huge values are cut, recorded on the span and counted, never fatal.

A span's name, status message, attribute values (span, resource, event and link attributes) and
event names longer than `MAX_VALUE_CHARS` are cut to it; an attribute map, event list or link list
whose encoded size passes `MAX_FIELD_CHARS` keeps what fits and drops the rest. Every cut is
listed on the stored span under `TRUNCATED_ATTRIBUTE`, and the store counts such spans
(`IngestStats.truncated`), so nothing disappears silently.

Only the write path's slow path runs this: `rows.batch_rows` calls `cap_span` when one of the
span's encoded parts is longer than `MAX_VALUE_CHARS`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Final

from janux.tracing.records import EventRecord, LinkRecord, SpanRecord

MAX_VALUE_CHARS: Final = 128 * 1024
"""Longest string kept in one value (attribute value, span or event name, status message)."""
MAX_FIELD_CHARS: Final = 1024 * 1024
"""Largest encoded attribute map, event list or link list kept for one span."""
MAX_KEY_CHARS: Final = 1024
"""Longest attribute key kept."""
MAX_NOTES_ON_SPAN: Final = 20
"""How many cut descriptions the span's `TRUNCATED_ATTRIBUTE` lists (the rest are counted)."""
TRUNCATED_ATTRIBUTE: Final = "janux.store.truncated"
"""Span attribute set by the store: what it cut from the span, one description per cut."""

_SHOWN_KEY = 120


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(_json(value))


def _cut_text(text: str, where: str, notes: list[str]) -> str:
    if len(text) <= MAX_VALUE_CHARS:
        return text
    notes.append(f"{where}: {len(text):,} chars cut to {MAX_VALUE_CHARS:,}")
    return text[:MAX_VALUE_CHARS]


def _cut_value(value: Any, where: str, notes: list[str]) -> Any:
    """A string cut to the limit; an array or map too large becomes its JSON text, cut."""
    if isinstance(value, str):
        return _cut_text(value, where, notes)
    if isinstance(value, (list, dict)):
        encoded = _json(value)
        if len(encoded) > MAX_VALUE_CHARS:
            notes.append(f"{where}: {len(encoded):,} chars of JSON cut to {MAX_VALUE_CHARS:,} (kept as text)")
            return encoded[:MAX_VALUE_CHARS]
    return value


def cap_attributes(attributes: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """`attributes` with long keys and values cut and, past `MAX_FIELD_CHARS`, the rest dropped."""
    out: dict[str, Any] = {}
    used = 0
    for index, (key, value) in enumerate(attributes.items()):
        name = key[:MAX_KEY_CHARS]
        if len(key) > MAX_KEY_CHARS:
            notes.append(f"{where}{name[:_SHOWN_KEY]}...: key of {len(key):,} chars cut to {MAX_KEY_CHARS:,}")
        kept = _cut_value(value, f"{where}{name[:_SHOWN_KEY]}", notes)
        used += len(name) + _size(kept)
        if used > MAX_FIELD_CHARS:
            dropped = len(attributes) - index
            notes.append(
                f"{where or 'attributes'}: {dropped:,} attribute(s) over {MAX_FIELD_CHARS:,} chars dropped"
            )
            break
        out[name] = kept
    return out


def _cap_events(events: list[EventRecord], notes: list[str]) -> list[EventRecord]:
    out: list[EventRecord] = []
    used = 0
    for index, event in enumerate(events):
        where = f"events[{index}]"
        kept = EventRecord(
            event.timestamp_ns,
            _cut_text(event.name, f"{where}.name", notes),
            cap_attributes(event.attributes, f"{where}.", notes),
        )
        used += len(kept.name) + _size(kept.attributes) + 20
        if used > MAX_FIELD_CHARS:
            notes.append(f"events: {len(events) - index:,} event(s) over {MAX_FIELD_CHARS:,} chars dropped")
            break
        out.append(kept)
    return out


def _cap_links(links: list[LinkRecord], notes: list[str]) -> list[LinkRecord]:
    out: list[LinkRecord] = []
    used = 0
    for index, link in enumerate(links):
        kept = replace(link, attributes=cap_attributes(link.attributes, f"links[{index}].", notes))
        used += 60 + len(kept.trace_state) + _size(kept.attributes)
        if used > MAX_FIELD_CHARS:
            notes.append(f"links: {len(links) - index:,} link(s) over {MAX_FIELD_CHARS:,} chars dropped")
            break
        out.append(kept)
    return out


def cap_span(
    span: SpanRecord, resource: dict[str, Any], resource_notes: list[str]
) -> tuple[SpanRecord, list[str]]:
    """The span within the limits and what was cut (`resource`: its resource attributes, already
    capped, with `resource_notes` saying what was cut there); the span as is when nothing was."""
    notes = list(resource_notes)
    attributes = cap_attributes(span.attributes, "", notes)
    capped = replace(
        span,
        name=_cut_text(span.name, "name", notes),
        status_message=_cut_text(span.status_message, "status.message", notes),
        trace_state=_cut_text(span.trace_state, "trace_state", notes),
        service_name=_cut_text(span.service_name, "service.name", notes),
        scope_name=_cut_text(span.scope_name, "scope.name", notes),
        scope_version=_cut_text(span.scope_version, "scope.version", notes),
        resource_attributes=resource,
        events=_cap_events(span.events, notes) if span.events else span.events,
        links=_cap_links(span.links, notes) if span.links else span.links,
    )
    if not notes:
        return span, notes
    listed = notes[:MAX_NOTES_ON_SPAN]
    if len(notes) > MAX_NOTES_ON_SPAN:
        listed.append(f"... and {len(notes) - MAX_NOTES_ON_SPAN} more cut(s)")
    attributes[TRUNCATED_ATTRIBUTE] = listed
    capped.attributes = attributes
    return capped, notes
