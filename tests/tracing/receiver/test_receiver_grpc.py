"""OTLP/gRPC over real sockets: every status code, partial success, and a real OTel SDK exporter."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from janux.tracing.receiver import RunningReceiver
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import TraceStore
from tests.support.otlp_build import numbered_spans, pb_request, pb_span

METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
T = "0af7651916cd43dd8448eb211c80319c"


@pytest.fixture
def export(receiver: RunningReceiver) -> Iterator[grpc.UnaryUnaryMultiCallable]:
    """A raw Export stub sending bytes, so tests can send malformed messages."""
    with grpc.insecure_channel(f"127.0.0.1:{receiver.grpc_port}") as channel:
        yield channel.unary_unary(
            METHOD, request_serializer=None, response_deserializer=ExportTraceServiceResponse.FromString
        )


def test_export_stored_and_acknowledged(export: grpc.UnaryUnaryMultiCallable, store: TraceStore) -> None:
    response = export(pb_request(numbered_spans(20)).SerializeToString(), timeout=30)
    assert not response.HasField("partial_success")
    assert store.ingest_stats().spans == 20


def test_invalid_argument_for_malformed_message(
    export: grpc.UnaryUnaryMultiCallable, store: TraceStore
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        export(b"\xff\xff\xff", timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "invalid protobuf" in caught.value.details()
    assert store.ingest_stats().rejected == 1


def test_invalid_argument_names_the_field(export: grpc.UnaryUnaryMultiCallable) -> None:
    request = pb_request([pb_span(T, "00000000000000a1")])
    request.resource_spans[0].scope_spans[0].spans[0].kind = 42  # type: ignore[assignment]
    with pytest.raises(grpc.RpcError) as caught:
        export(request.SerializeToString(), timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == "resource_spans[0].scope_spans[0].spans[0].kind: unknown enum value 42"


def test_partial_success(export: grpc.UnaryUnaryMultiCallable, store: TraceStore) -> None:
    request = pb_request([pb_span(T, "00000000000000a1"), pb_span(T, "00000000000000a2")])
    request.resource_spans[0].scope_spans[0].spans[0].trace_id = b"\x01"
    response = export(request.SerializeToString(), timeout=30)
    assert response.partial_success.rejected_spans == 1
    assert "spans[0].trace_id: id must be 16 bytes, got 1" in response.partial_success.error_message
    assert [s.span_id for s in store.get_trace(T)] == ["00000000000000a2"]


def test_resource_exhausted_over_the_size_limit(
    export: grpc.UnaryUnaryMultiCallable, store: TraceStore
) -> None:
    request = pb_request([pb_span(T, "00000000000000a1", attrs={"blob": "x" * (2 * 1024 * 1024)})])
    with pytest.raises(grpc.RpcError) as caught:
        export(request.SerializeToString(), timeout=30)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert store.ingest_stats().spans == 0


def test_unauthenticated_without_the_token(token_receiver: RunningReceiver, store: TraceStore) -> None:
    body = pb_request(numbered_spans(3)).SerializeToString()
    with grpc.insecure_channel(f"127.0.0.1:{token_receiver.grpc_port}") as channel:
        stub = channel.unary_unary(
            METHOD, request_serializer=None, response_deserializer=ExportTraceServiceResponse.FromString
        )
        for metadata in (
            (),
            (("authorization", "Bearer wrong"),),
            (("authorization", "Bearer s3cret "),),
            (("authorization", "Bearer s3cret"), ("authorization", "Bearer s3cret")),
        ):
            with pytest.raises(grpc.RpcError) as caught:
                stub(body, metadata=metadata, timeout=30)
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        stub(body, metadata=(("authorization", "Bearer s3cret"),), timeout=30)
    assert store.ingest_stats().spans == 3


def test_real_sdk_grpc_exporter_works_unchanged(token_receiver: RunningReceiver, store: TraceStore) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    exporter = OTLPSpanExporter(
        endpoint=f"127.0.0.1:{token_receiver.grpc_port}",
        insecure=True,
        headers=(("authorization", "Bearer s3cret"),),
        compression=grpc.Compression.Gzip,
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-grpc"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("tests")
    with tracer.start_as_current_span("root"), tracer.start_as_current_span("child"):
        pass
    provider.shutdown()
    (summary,) = store.list_traces(TraceFilter())
    assert summary.span_count == 2 and summary.service_name == "sdk-grpc" and summary.root_name == "root"


@pytest.mark.parametrize(
    ("signal", "service"),
    [
        ("metrics", "opentelemetry.proto.collector.metrics.v1.MetricsService"),
        ("logs", "opentelemetry.proto.collector.logs.v1.LogsService"),
    ],
)
def test_other_signals_are_unimplemented_with_a_reason(
    receiver: RunningReceiver, signal: str, service: str
) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{receiver.grpc_port}") as channel:
        stub = channel.unary_unary(f"/{service}/Export", request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as caught:
            stub(b"", timeout=30)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert (
        f"collects traces only ({METHOD[1:].rsplit('/', 1)[0]}/Export); {signal} are not"
        in caught.value.details()
    )
