"""End to end: the runtime's traces survive every transport into the store unchanged.

One run of every built-in scenario is exported at once to an in-memory exporter, over real
OTLP/HTTP and OTLP/gRPC sockets to two Janux receivers (each with its own embedded store), and
to an OTLP-JSON-lines file that `janux import` then loads. The normalized span tree of each
trace must be identical on every path: what the dashboard reads is what the runtime wrote.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.demo.scenarios import SCENARIO_NAMES, run_scenarios
from janux.tracing.analysis.normalize import normalized_tree
from janux.tracing.receiver import start_receiver
from janux.tracing.records import SpanRecord
from janux.tracing.sdk.convert import span_records_from_readable
from janux.tracing.sources.store import TraceStore, open_store
from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT


@pytest.fixture()
def stores(tmp_path: Path) -> Iterator[dict[str, TraceStore]]:
    opened = {name: open_store(tmp_path / name) for name in ("http", "grpc", "import")}
    yield opened
    for store in opened.values():
        store.close()


def _by_trace(spans: list[SpanRecord]) -> dict[str, list[SpanRecord]]:
    grouped: dict[str, list[SpanRecord]] = {}
    for span in spans:
        grouped.setdefault(span.trace_id, []).append(span)
    return grouped


def _export_everywhere(http_port: int, grpc_port: int, file_path: Path) -> tuple[list[SpanRecord], list]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "e2e"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(
        BatchSpanProcessor(HttpSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces"))
    )
    provider.add_span_processor(
        BatchSpanProcessor(GrpcSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True))
    )
    provider.add_span_processor(BatchSpanProcessor(FileSpanExporter(file_path)))
    outcomes = asyncio.run(run_scenarios(tracer_provider=provider, latency_scale=0))
    assert provider.force_flush(30_000)
    provider.shutdown()
    return span_records_from_readable(memory.get_finished_spans()), outcomes


def test_http_grpc_and_file_paths_give_the_in_memory_tree(
    stores: dict[str, TraceStore], tmp_path: Path
) -> None:
    file_path = tmp_path / "traces.jsonl"
    http = start_receiver(stores["http"], http_port=0, grpc_port=None)
    grpc = start_receiver(stores["grpc"], http_port=None, grpc_port=0)
    try:
        assert http.http_port is not None and grpc.grpc_port is not None
        memory_spans, outcomes = _export_everywhere(http.http_port, grpc.grpc_port, file_path)
    finally:
        http.stop()
        grpc.stop()
    assert [o.name for o in outcomes] == list(SCENARIO_NAMES)
    assert all(o.error is None and o.trace_id for o in outcomes)

    imported = subprocess.run(
        [sys.executable, "-m", "janux", "import", str(file_path), "--data-dir", str(tmp_path / "import")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr

    expected = _by_trace(memory_spans)
    assert set(expected) == {o.trace_id for o in outcomes}
    for trace_id, spans in expected.items():
        want = normalized_tree(spans)
        for name, store in stores.items():
            got = store.get_trace(trace_id)
            assert len(got) == len(spans), f"{name}: span count of {trace_id}"
            assert normalized_tree(got) == want, f"{name}: tree of {trace_id} differs"


def test_the_tree_comparison_notices_a_changed_attribute(stores: dict[str, TraceStore]) -> None:
    """Guard for the test above: the normalized tree does see contract attributes."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    asyncio.run(run_scenarios(["delegation"], tracer_provider=provider, latency_scale=0))
    spans = span_records_from_readable(memory.get_finished_spans())
    before = normalized_tree(spans)
    tool = next(s for s in spans if "janux.handoff.status" in s.attributes)
    tool.attributes["janux.handoff.status"] = "failed"
    assert normalized_tree(spans) != before
