"""OTLP decoding: protobuf and JSON trace payloads (and their wrappers) into `SpanRecord`s.

Entry points:
- `decode_proto_request(body)` / `decode_proto_message(msg)`: OTLP protobuf
  (`ExportTraceServiceRequest` / `TracesData`, same wire format).
- `decode_json_bytes(body)` / `decode_json_document(doc)`: OTLP/JSON, including the Tempo
  (`batches`, `trace`) and Jaeger v3 (`result`) wrappers.

Each returns a `DecodeResult` (good spans, a count of rejected spans and their messages): a bad
span is refused and counted, its good siblings are kept. A payload whose structure is unusable
raises `DecodeError`, whose message names the field.
"""

from __future__ import annotations

from janux.tracing.otlp.errors import DecodeError, DecodeResult
from janux.tracing.otlp.json_decode import decode_json_bytes, decode_json_document
from janux.tracing.otlp.proto_decode import decode_proto_message, decode_proto_request

__all__ = [
    "DecodeError",
    "DecodeResult",
    "decode_json_bytes",
    "decode_json_document",
    "decode_proto_message",
    "decode_proto_request",
]
