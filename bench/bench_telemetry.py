"""Cost of Janux's failure-isolated span processor on the agent's thread, against the plain SDK one.

Run: `.venv/bin/python -m bench.bench_telemetry [--quick]`. Prints a markdown table: per case,
the median time to start and end one span (µs) and the ratio to the same-run baseline, which is
the SDK's own BatchSpanProcessor with an exporter that does nothing. Cases:
- `janux, healthy`: our BoundedSpanProcessor (admission counting + guarded exporter), same exporter;
- `janux, exporter hung`: the exporter never answers, so the queue fills and spans are dropped
  (and counted): the agent must not pay more than in the healthy case;
- `no processor`: a provider with nothing attached (the floor).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from janux.tracing.sdk.processor import BoundedSpanProcessor
from janux.tracing.sdk.settings import BatchSettings


class _NullExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _HungExporter(SpanExporter):
    def __init__(self) -> None:
        self.release = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(60)
        return SpanExportResult.SUCCESS


def _per_span_us(provider: TracerProvider, spans: int, repeats: int) -> float:
    tracer = provider.get_tracer("bench")
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(spans):
            tracer.start_span("span", attributes={"gen_ai.operation.name": "chat"}).end()
        samples.append((time.perf_counter() - start) / spans * 1e6)
    return statistics.median(samples)


def _provider(processor: object | None) -> TracerProvider:
    provider = TracerProvider(shutdown_on_exit=False)
    if processor is not None:
        provider.add_span_processor(processor)  # type: ignore[arg-type]
    return provider


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer spans and repeats")
    args = parser.parse_args(argv)
    spans, repeats = (2_000, 3) if args.quick else (20_000, 7)
    # A queue large enough that the healthy cases never drop: they measure the admission path.
    roomy = BatchSettings(
        max_queue_size=spans * repeats,
        schedule_delay_ms=200,
        max_export_batch_size=512,
        export_timeout_ms=30_000,
    )
    small = BatchSettings(
        max_queue_size=2048, schedule_delay_ms=200, max_export_batch_size=512, export_timeout_ms=30_000
    )
    hung = _HungExporter()
    cases = {
        "SDK BatchSpanProcessor (baseline)": BatchSpanProcessor(
            _NullExporter(),
            max_queue_size=roomy.max_queue_size,
            schedule_delay_millis=200,
            max_export_batch_size=512,
        ),
        "janux, healthy": BoundedSpanProcessor(_NullExporter(), roomy),
        "janux, exporter hung (dropping)": BoundedSpanProcessor(hung, small),
        "no processor": None,
    }
    results = {name: _per_span_us(_provider(proc), spans, repeats) for name, proc in cases.items()}
    hung.release.set()
    baseline = results["SDK BatchSpanProcessor (baseline)"]
    print(f"Span start+end on the caller's thread ({spans} spans, median of {repeats})\n")
    print("| case | µs per span | vs baseline |")
    print("|---|---:|---:|")
    for name, value in results.items():
        print(f"| {name} | {value:.2f} | {value / baseline:.2f}x |")
    for name in ("janux, healthy", "janux, exporter hung (dropping)"):
        processor = cases[name]
        assert isinstance(processor, BoundedSpanProcessor)
        print(f"\n{name}: {processor.accounting.dropped_queue_full} spans dropped and counted")


if __name__ == "__main__":
    main()
