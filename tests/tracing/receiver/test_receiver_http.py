"""OTLP/HTTP over real sockets: every answer code, both encodings, and a real OTel SDK exporter."""

from __future__ import annotations

import gzip
import json
import socket

import httpx
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from janux.tracing.receiver import RunningReceiver
from janux.tracing.receiver.connections import raw_authorization_values
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import TraceStore, open_store
from tests.support.otlp_build import numbered_spans, pb_request, pb_span

PROTO = {"content-type": "application/x-protobuf"}
JSON_CT = {"content-type": "application/json"}
T = "0af7651916cd43dd8448eb211c80319c"


def url(receiver: RunningReceiver) -> str:
    return f"http://127.0.0.1:{receiver.http_port}/v1/traces"


def status_of(response: httpx.Response) -> Status:
    assert response.headers["content-type"].startswith("application/x-protobuf")
    return Status.FromString(response.content)


def test_protobuf_export_is_stored_before_the_answer(receiver: RunningReceiver, store: TraceStore) -> None:
    body = pb_request(numbered_spans(30)).SerializeToString()
    response = httpx.post(url(receiver), content=body, headers=PROTO)
    assert response.status_code == 200
    assert not ExportTraceServiceResponse.FromString(response.content).HasField("partial_success")
    with open_store(store.data_dir) as other_reader:
        assert other_reader.ingest_stats().spans == 30 and other_reader.count_traces(TraceFilter()) == 3


def test_json_export_answers_in_json(receiver: RunningReceiver, store: TraceStore) -> None:
    span = {"traceId": T, "spanId": "00000000000000a1", "name": "j", "startTimeUnixNano": "1"}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    response = httpx.post(
        url(receiver), content=json.dumps(doc), headers={"content-type": "application/json; charset=utf-8"}
    )
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    assert response.json() == {}
    assert store.get_trace(T)[0].name == "j"


def test_gzip_body_accepted(receiver: RunningReceiver, store: TraceStore) -> None:
    body = gzip.compress(pb_request(numbered_spans(5)).SerializeToString())
    response = httpx.post(url(receiver), content=body, headers={**PROTO, "content-encoding": "gzip"})
    assert response.status_code == 200 and store.ingest_stats().spans == 5


def test_401_without_or_with_wrong_token(token_receiver: RunningReceiver, store: TraceStore) -> None:
    body = pb_request(numbered_spans(2)).SerializeToString()
    for headers in ({}, {"authorization": "Bearer nope"}, {"authorization": "s3cret"}):
        response = httpx.post(url(token_receiver), content=body, headers={**PROTO, **headers})
        assert response.status_code == 401 and status_of(response).code == 16
    ok = httpx.post(url(token_receiver), content=body, headers={**PROTO, "authorization": "Bearer s3cret"})
    assert ok.status_code == 200 and store.ingest_stats().spans == 2


def test_413_for_declared_streamed_and_decompressed_size(
    receiver: RunningReceiver, store: TraceStore
) -> None:
    big = b"\x0a" + b"x" * (2 * 1024 * 1024)
    declared = httpx.post(url(receiver), content=big, headers=PROTO)
    assert declared.status_code == 413 and status_of(declared).code == 8

    def chunks():  # no Content-Length: the limit is enforced while streaming
        for _ in range(40):
            yield b"y" * 65536

    streamed = httpx.post(url(receiver), content=chunks(), headers=PROTO)
    assert streamed.status_code == 413
    bomb = gzip.compress(b"\x00" * (4 * 1024 * 1024))
    inflated = httpx.post(url(receiver), content=bomb, headers={**PROTO, "content-encoding": "gzip"})
    assert inflated.status_code == 413 and "decompressed" in status_of(inflated).message
    assert store.ingest_stats().spans == 0


def test_415_for_content_type_and_encoding(receiver: RunningReceiver) -> None:
    body = pb_request(numbered_spans(1)).SerializeToString()
    # Neither protobuf nor JSON: the answer is JSON, readable by whoever sent it with curl.
    wrong_type = httpx.post(url(receiver), content=body, headers={"content-type": "text/plain"})
    assert wrong_type.status_code == 415 and "text/plain" in wrong_type.json()["message"]
    missing = httpx.post(url(receiver), content=body)
    assert missing.status_code == 415 and missing.json()["code"] == 3
    wrong_encoding = httpx.post(url(receiver), content=body, headers={**PROTO, "content-encoding": "br"})
    assert wrong_encoding.status_code == 415 and "br" in status_of(wrong_encoding).message


@pytest.mark.parametrize(
    ("body", "headers", "message"),
    [
        (b"\xff\xff\xff", PROTO, "invalid protobuf"),
        (b"{oops", JSON_CT, "invalid JSON"),
        (b'{"resourceSpans": 3}', JSON_CT, "resourceSpans: expected a list"),
        (gzip.compress(b"x", mtime=0)[:5], {**PROTO, "content-encoding": "gzip"}, "invalid gzip"),
    ],
)
def test_400_for_malformed_bodies(
    receiver: RunningReceiver, body: bytes, headers: dict[str, str], message: str
) -> None:
    response = httpx.post(url(receiver), content=body, headers=headers)
    assert response.status_code == 400
    text = response.json()["message"] if headers is JSON_CT else status_of(response).message
    assert message in text


def test_400_names_the_field_when_every_span_is_bad(receiver: RunningReceiver, store: TraceStore) -> None:
    request = pb_request([pb_span(T, "00000000000000a1")])
    request.resource_spans[0].scope_spans[0].spans[0].span_id = b"\x01\x02"
    response = httpx.post(url(receiver), content=request.SerializeToString(), headers=PROTO)
    assert response.status_code == 400
    assert status_of(response).message.startswith(
        "resource_spans[0].scope_spans[0].spans[0].span_id: id must be 8"
    )
    assert store.ingest_stats().rejected == 1


def test_partial_success_keeps_good_spans(receiver: RunningReceiver, store: TraceStore) -> None:
    request = pb_request(
        [pb_span(T, "00000000000000a1"), pb_span(T, "00000000000000a2"), pb_span(T, "00000000000000a3")]
    )
    request.resource_spans[0].scope_spans[0].spans[1].trace_id = b"\x00" * 16
    response = httpx.post(url(receiver), content=request.SerializeToString(), headers=PROTO)
    assert response.status_code == 200
    partial = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert (
        partial.rejected_spans == 1 and "spans[1].trace_id: all-zero id is invalid" in partial.error_message
    )
    assert [s.span_id for s in store.get_trace(T)] == ["00000000000000a1", "00000000000000a3"]
    stats = store.ingest_stats()
    assert stats.rejected == 1 and "spans[1].trace_id" in stats.recent_errors[0]


def test_partial_success_in_json(receiver: RunningReceiver) -> None:
    spans = [{"traceId": T, "spanId": "00000000000000b1"}, {"traceId": "xyz", "spanId": "00000000000000b2"}]
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    response = httpx.post(url(receiver), content=json.dumps(doc), headers=JSON_CT)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1" and "spans[1].traceId" in partial["errorMessage"]


def test_only_post_on_the_traces_path(receiver: RunningReceiver) -> None:
    assert httpx.get(url(receiver)).status_code == 405
    assert httpx.post(url(receiver).replace("traces", "spans"), content=b"", headers=PROTO).status_code == 404


@pytest.mark.parametrize("signal", ["metrics", "logs"])
def test_other_signals_get_a_404_saying_traces_only(receiver: RunningReceiver, signal: str) -> None:
    other = url(receiver).replace("traces", signal)
    binary = httpx.post(other, content=b"", headers=PROTO)
    assert binary.status_code == 404
    assert status_of(binary).message.startswith(
        f"this OTLP receiver collects traces only (POST /v1/traces); {signal}"
    )
    as_json = httpx.post(other, content=b"{}", headers=JSON_CT)
    assert as_json.status_code == 404 and f"OTEL_{signal.upper()}_EXPORTER=none" in as_json.json()["message"]


def test_sdk_metric_exporter_pointed_here_fails_fast_with_404(
    receiver: RunningReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    # The Python SDK logs the status line only (the Status body with the reason is for curl and
    # for SDKs that print it); 404 is not retryable, so the exporter gives up at once.
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    exporter = OTLPMetricExporter(endpoint=url(receiver).replace("traces", "metrics"))
    provider = MeterProvider([PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)])
    provider.get_meter("tests").create_counter("calls").add(1)
    provider.force_flush()
    provider.shutdown()
    assert "Failed to export metrics batch code: 404" in caplog.text and "retries" not in caplog.text


def test_health(receiver: RunningReceiver) -> None:
    response = httpx.get(url(receiver).replace("/v1/traces", "/health"))
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_duplicate_retry_is_stored_once(receiver: RunningReceiver, store: TraceStore) -> None:
    body = pb_request(numbered_spans(4)).SerializeToString()
    for _ in range(3):
        assert httpx.post(url(receiver), content=body, headers=PROTO).status_code == 200
    stats = store.ingest_stats()
    assert (stats.spans, stats.duplicates) == (4, 8)


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_real_sdk_http_exporter_works_unchanged(
    token_receiver: RunningReceiver, store: TraceStore, compression: str
) -> None:
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exporter = OTLPSpanExporter(
        endpoint=url(token_receiver),
        headers={"authorization": "Bearer s3cret"},
        compression=Compression.Gzip if compression == "gzip" else Compression.NoCompression,
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-http"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("tests")
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.agent.name": "a"}):
        for _ in range(3):
            with tracer.start_as_current_span("chat m"):
                pass
    provider.shutdown()
    (summary,) = store.list_traces(TraceFilter())
    assert summary.span_count == 4 and summary.service_name == "sdk-http" and summary.root_agent == "a"


def test_extra_worker_processes_share_the_port_and_stop(store: TraceStore) -> None:
    from janux.tracing.receiver import start_receiver

    running = start_receiver(store, "127.0.0.1", 0, None, http_workers=3)
    try:
        for n in range(30):  # a new connection each time, so the kernel spreads them over processes
            body = pb_request(numbered_spans(10, trace_no=1 + n)).SerializeToString()
            assert httpx.post(url(running), content=body, headers=PROTO).status_code == 200
    finally:
        running.stop()
    assert store.ingest_stats().spans == 300 and store.count_traces(TraceFilter()) == 30
    with pytest.raises(httpx.ConnectError):
        httpx.post(url(running), content=b"", headers=PROTO)


def _raw_exchange(receiver: RunningReceiver, heads_and_bodies: list[tuple[list[bytes], bytes]]) -> list[int]:
    """Send requests as raw bytes on one connection (all at once: pipelined), return the status codes."""
    wire = b""
    for header_lines, body in heads_and_bodies:
        head = [b"POST /v1/traces HTTP/1.1", b"Host: x", b"Content-Type: application/x-protobuf"]
        head += [*header_lines, b"Content-Length: %d" % len(body)]
        wire += b"\r\n".join(head) + b"\r\n\r\n" + body
    with socket.create_connection(("127.0.0.1", receiver.http_port), timeout=30) as conn:
        conn.sendall(wire)
        reader = conn.makefile("rb")
        codes = []
        for _ in heads_and_bodies:
            status_line = reader.readline()
            codes.append(int(status_line.split()[1]))
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            reader.read(length)
        return codes


def test_bearer_token_is_parsed_strictly_from_the_raw_head(
    token_receiver: RunningReceiver, store: TraceStore
) -> None:
    """h11 strips a header value's surrounding whitespace; the check reads the head as sent."""
    bodies = iter(pb_request(numbered_spans(1, trace_no=n)).SerializeToString() for n in range(1, 100))
    body = next(bodies)
    refused = [
        [b"Authorization: Bearer s3cret "],  # trailing space
        [b"Authorization: Bearer s3cret\t"],
        [b"Authorization: Bearer  s3cret"],
        [b"Authorization: bearer s3cret"],
        [b"Authorization: Bearer s3cret", b"Authorization: Bearer s3cret"],  # repeated
        [b"Authorization: Bearer s3cret", b"authorization: Bearer nope"],
    ]
    for lines in refused:
        assert _raw_exchange(token_receiver, [(lines, body)]) == [401], lines
    assert store.ingest_stats().spans == 0
    accepted = [[b"Authorization: Bearer s3cret"], [b"authorization:Bearer s3cret"]]
    for lines in accepted:
        assert _raw_exchange(token_receiver, [(lines, next(bodies))]) == [200], lines
    # Pipelined on one connection: each request is judged by its own head.
    pipelined = [
        ([b"Authorization: Bearer s3cret"], next(bodies)),
        ([b"Authorization: Bearer s3cret "], next(bodies)),
        ([b"Authorization: Bearer s3cret"], next(bodies)),
    ]
    assert _raw_exchange(token_receiver, pipelined) == [200, 401, 200]
    assert store.ingest_stats().spans == 4


def test_raw_authorization_values_keep_what_was_sent() -> None:
    head = b"POST / HTTP/1.1\r\nAuthorization: Bearer a \r\nX: y\r\nauthorization:b\r\n c\r\n\r\nbody"
    assert raw_authorization_values(head) == [b" Bearer a ", b"b\n c"]
    assert raw_authorization_values(b"POST / HTTP/1.1\r\nAuthorization: x\r\n") is None
    assert raw_authorization_values(b"POST / HTTP/1.1\nX: y\n\n") == []
