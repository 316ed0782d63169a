"""Find the OTLP `resourceSpans` inside the documents various tools produce.

Accepted shapes (each possibly inside a top-level JSON array of documents):
- OTLP `ExportTraceServiceRequest` / `TracesData`: `{"resourceSpans": [...]}` (also `resource_spans`);
  the Collector file exporter and `opentelemetry-exporter-otlp-json-file` write one per line.
- Tempo v1 trace-by-id: `{"batches": [...]}`; Tempo v2: `{"trace": {"resourceSpans"|"batches": [...]}}`.
- Jaeger v3 `api_v3` responses: `{"result": {"resourceSpans": [...]}}` (one per streamed chunk).
"""

from __future__ import annotations

from typing import Any

from janux.tracing.otlp.errors import DecodeError

_LIST_KEYS = ("resourceSpans", "resource_spans", "batches")
_WRAPPER_KEYS = ("trace", "result")
MAX_WRAPPER_DEPTH = 4
"""How many `trace` / `result` wrappers may nest before a document is refused."""


def resource_span_lists(doc: object, path: str = "") -> list[tuple[str, list[Any]]]:
    """Every list of ResourceSpans in `doc`, each with the JSON path it was found at.

    An empty object is a valid request with no spans. Raises `DecodeError` when `doc` has none of
    the known shapes, naming the field that is wrong.
    """
    found: list[tuple[str, list[Any]]] = []
    _collect(doc, path, found, 0)
    return found


def _collect(doc: object, path: str, found: list[tuple[str, list[Any]]], depth: int) -> None:
    if depth > MAX_WRAPPER_DEPTH:
        raise DecodeError(path, "documents nested too deeply")
    if isinstance(doc, list):
        if depth > 0:
            raise DecodeError(path, "expected an object, got a list")
        for i, item in enumerate(doc):
            _collect(item, f"{path}[{i}]", found, depth + 1)
        return
    if not isinstance(doc, dict):
        raise DecodeError(path, f"expected an OTLP object, got {type(doc).__name__}")
    for key in _LIST_KEYS:
        value = doc.get(key)
        if value is None:
            continue
        where = f"{path}.{key}" if path else key
        if not isinstance(value, list):
            raise DecodeError(where, f"expected a list, got {type(value).__name__}")
        found.append((where, value))
        return
    for key in _WRAPPER_KEYS:
        value = doc.get(key)
        if value is not None:
            _collect(value, f"{path}.{key}" if path else key, found, depth + 1)
            return
    if doc:
        keys = ", ".join(sorted(str(k) for k in doc)[:5])
        raise DecodeError(path, f"no resourceSpans, batches, trace or result field (found: {keys})")
