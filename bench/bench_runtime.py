"""Runtime overhead of tracing: one turn with 3 model rounds and 1 delegation, scripted, zero latency.

Run: `.venv/bin/python -m bench.bench_runtime [--quick]`. Prints a markdown table of the median
time per run (µs) for:
- (a) tracing off: no-op tracer and meter providers (the baseline);
- (b) tracing on: SDK TracerProvider + SimpleSpanProcessor(InMemorySpanExporter), no-op meter;
- (b+m) as (b) plus an SDK MeterProvider (token/duration histograms, handoff counter);
- (c) the bare cost of creating the same 6 spans and 2 events with the SDK directly (same processor);
- (d) tracing on with a BatchSpanProcessor (exporter that does nothing).
Then the tracing overhead (b - a) in ms per run and as ratios. Target: (b - a) under 1 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence

from opentelemetry import trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider, SpanKind

from janux.runtime import Agent, Cost, Subagent
from janux.runtime.testing import ScriptedModel, ScriptStep, call_tools, delegate, reply
from janux.tracing import conventions as c

_PARENT_STEPS = (
    call_tools(delegate("researcher", "find the refund policy", id="c1"), input_tokens=400, output_tokens=30),
    reply("Refunds take 5 days.", input_tokens=600, output_tokens=12),
)
_SUB_STEPS = (reply("5 days.", input_tokens=300, output_tokens=8),)


class _NullExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _workload() -> tuple[Agent, ScriptedModel, ScriptedModel]:
    parent_model = ScriptedModel([], model_name="gpt-4o-mini")
    sub_model = ScriptedModel([], model_name="gpt-4o")
    researcher = Agent(
        "researcher", instructions="Research.", model=sub_model, cost=Cost(input=2.5, output=10)
    )
    triage = Agent(
        "triage",
        instructions="Front desk.",
        model=parent_model,
        subagents=[Subagent(agent=researcher, max_turns=3)],
        cost=Cost(input=0.15, output=0.6),
    )
    return triage, parent_model, sub_model


def _refill(model: ScriptedModel, steps: tuple[ScriptStep, ...]) -> None:
    model.add(*steps)


async def _time_runs(
    runs: int, tracer_provider: object, meter_provider: object, reset: Callable[[], None]
) -> float:
    agent, parent_model, sub_model = _workload()
    start = time.perf_counter()
    for index in range(runs):
        _refill(parent_model, _PARENT_STEPS)
        _refill(sub_model, _SUB_STEPS)
        await agent.run(
            "How long do refunds take?", tracer_provider=tracer_provider, meter_provider=meter_provider
        )  # type: ignore[arg-type]
        if index % 500 == 499:
            reset()
            parent_model.calls.clear()  # recorded requests would otherwise grow the heap run after run
            sub_model.calls.clear()
    return (time.perf_counter() - start) / runs * 1e6


def _bare_spans(provider: TracerProvider) -> Callable[[], Awaitable[None]]:
    """The same spans, attributes and events as one traced run, created with the SDK directly."""
    tracer = provider.get_tracer(c.INSTRUMENTATION_SCOPE)

    async def one_run() -> None:
        root = tracer.start_span(
            "invoke_agent triage",
            attributes={
                c.GEN_AI_OPERATION_NAME: "invoke_agent",
                c.GEN_AI_AGENT_NAME: "triage",
                c.GEN_AI_CONVERSATION_ID: "t",
                c.JANUX_AGENT_DEPTH: 0,
            },
        )
        root_ctx = trace.set_span_in_context(root)
        for _ in range(1):
            _chat(tracer, root_ctx)
        tool = tracer.start_span(
            "execute_tool delegate.researcher",
            context=root_ctx,
            attributes={
                c.GEN_AI_OPERATION_NAME: "execute_tool",
                c.GEN_AI_TOOL_NAME: "delegate.researcher",
                c.GEN_AI_TOOL_CALL_ID: "c1",
                c.GEN_AI_TOOL_TYPE: "delegate",
            },
        )
        tool.add_event(
            c.EVENT_HANDOFF_START,
            {
                c.JANUX_HANDOFF_ID: "x",
                c.JANUX_HANDOFF_CALL_ID: "c1",
                c.JANUX_HANDOFF_KIND: "delegate",
                c.JANUX_HANDOFF_TOOL: "delegate.researcher",
                c.JANUX_HANDOFF_TARGET: "researcher",
                c.JANUX_HANDOFF_DEPTH: 1,
                c.JANUX_HANDOFF_SESSION_MODE: "new_session",
                c.JANUX_HANDOFF_STATUS: "starting",
            },
        )
        attempt = tracer.start_span(
            "invoke_agent researcher",
            context=trace.set_span_in_context(tool),
            attributes={
                c.GEN_AI_OPERATION_NAME: "invoke_agent",
                c.GEN_AI_AGENT_NAME: "researcher",
                c.JANUX_AGENT_DEPTH: 1,
                c.JANUX_HANDOFF_ATTEMPT: 1,
                c.JANUX_HANDOFF_ID: "x",
                c.JANUX_BUDGET_MAX_TURNS: 3,
            },
        )
        _chat(tracer, trace.set_span_in_context(attempt))
        _usage(attempt, "turn")
        attempt.end()
        tool.add_event(
            c.EVENT_HANDOFF_END,
            {
                c.JANUX_HANDOFF_ID: "x",
                c.JANUX_HANDOFF_CALL_ID: "c1",
                c.JANUX_HANDOFF_KIND: "delegate",
                c.JANUX_HANDOFF_TOOL: "delegate.researcher",
                c.JANUX_HANDOFF_TARGET: "researcher",
                c.JANUX_HANDOFF_DEPTH: 1,
                c.JANUX_HANDOFF_SESSION_MODE: "new_session",
                c.JANUX_HANDOFF_STATUS: "completed",
                c.JANUX_HANDOFF_ATTEMPTS: 1,
                c.JANUX_HANDOFF_DURATION_MS: 0.1,
            },
        )
        tool.set_attributes(
            {
                c.JANUX_HANDOFF_STATUS: "completed",
                c.JANUX_HANDOFF_ATTEMPTS: 1,
                c.JANUX_HANDOFF_TARGET: "researcher",
            }
        )
        tool.end()
        _chat(tracer, root_ctx)
        _usage(root, "turn")
        _usage(root, "bill")
        root.end()

    return one_run


def _chat(tracer: object, ctx: object) -> None:
    span = tracer.start_span(
        "chat gpt-4o-mini",
        context=ctx,
        kind=SpanKind.CLIENT,
        attributes={
            c.GEN_AI_OPERATION_NAME: "chat",
            c.GEN_AI_PROVIDER_NAME: "janux.scripted",
            c.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
            c.GEN_AI_AGENT_NAME: "triage",
        },
    )  # type: ignore[attr-defined]
    span.set_attribute(c.GEN_AI_RESPONSE_MODEL, "gpt-4o-mini")
    span.set_attribute(c.GEN_AI_RESPONSE_FINISH_REASONS, ("stop",))
    span.set_attribute(c.GEN_AI_USAGE_INPUT_TOKENS, 400)
    span.set_attribute(c.GEN_AI_USAGE_OUTPUT_TOKENS, 30)
    span.set_attribute(c.JANUX_ROUND_COST, 0.0001)
    span.end()


def _usage(span: object, prefix: str) -> None:
    for key in ("input_tokens", "output_tokens", "cost", "unpriced_tokens"):
        span.set_attribute(f"janux.{prefix}.{key}", 1)  # type: ignore[attr-defined]


async def _time_bare(runs: int, provider: TracerProvider, reset: Callable[[], None]) -> float:
    one_run = _bare_spans(provider)
    start = time.perf_counter()
    for index in range(runs):
        await one_run()
        if index % 500 == 499:
            reset()
    return (time.perf_counter() - start) / runs * 1e6


def _sdk_provider(processor: SpanProcessor) -> TracerProvider:
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    return provider


def measure(runs: int, repeats: int) -> dict[str, float]:
    """Median µs per run of every case."""
    memory = InMemorySpanExporter()
    simple = _sdk_provider(SimpleSpanProcessor(memory))
    batch = _sdk_provider(
        BatchSpanProcessor(_NullExporter(), max_queue_size=100_000, schedule_delay_millis=50)
    )
    meters = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)
    off_tracer, off_meter = NoOpTracerProvider(), NoOpMeterProvider()
    nothing: Callable[[], None] = lambda: None  # noqa: E731
    cases: dict[str, Callable[[], float]] = {
        "(a) tracing off (no-op providers)": lambda: asyncio.run(
            _time_runs(runs, off_tracer, off_meter, nothing)
        ),
        "(b) tracing on: SimpleSpanProcessor + InMemorySpanExporter": lambda: asyncio.run(
            _time_runs(runs, simple, off_meter, memory.clear)
        ),
        "(b+m) as (b), plus SDK metrics": lambda: asyncio.run(_time_runs(runs, simple, meters, memory.clear)),
        "(c) bare SDK: the same 6 spans + 2 events, no runtime": lambda: asyncio.run(
            _time_bare(runs, simple, memory.clear)
        ),
        "(d) tracing on: BatchSpanProcessor (null exporter)": lambda: asyncio.run(
            _time_runs(runs, batch, off_meter, nothing)
        ),
    }
    asyncio.run(_time_runs(min(runs, 200), simple, meters, memory.clear))  # warm caches and imports
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):  # interleaved, so drift (other load, heap growth) hits every case alike
        for name, run in cases.items():
            samples[name].append(run())
    batch.shutdown()
    return {name: statistics.median(values) for name, values in samples.items()}


def render(results: dict[str, float]) -> str:
    """The markdown table plus the overhead lines."""
    names = list(results)
    base = results[names[0]]
    lines = ["| case | µs per run | ratio to (a) |", "|---|---:|---:|"]
    lines += [f"| {name} | {value:,.1f} | {value / base:.2f}x |" for name, value in results.items()]
    traced, bare = results[names[1]], results[names[3]]
    overhead = traced - base
    lines += [
        "",
        f"Tracing overhead (b - a): **{overhead / 1000:.3f} ms per run** (target < 1 ms); "
        f"(b) / (a) = {traced / base:.2f}x; "
        f"(b - a) / (c) = {overhead / bare:.2f}x the bare SDK cost of the same spans.",
        f"With metrics (b+m - a): {(results[names[2]] - base) / 1000:.3f} ms per run.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer runs (a smoke check, noisier figures)")
    parser.add_argument("--runs", type=int, default=None, help="runs per repeat (default 2000, quick 300)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per case (default 5, quick 3)")
    args = parser.parse_args(argv)
    runs = args.runs or (300 if args.quick else 2000)
    repeats = args.repeats or (3 if args.quick else 5)
    print(
        "Runtime tracing overhead: 1 turn = 3 model rounds + 1 delegation (scripted, zero latency); "
        f"{runs} runs x {repeats} repeats, median\n"
    )
    print(render(measure(runs, repeats)))


if __name__ == "__main__":
    main()
