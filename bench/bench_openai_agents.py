"""Overhead of Janux tracing on the OpenAI Agents SDK: the `bench_runtime` workload on the SDK.

One run = 3 model rounds + 1 delegation (`agent.as_tool`), on the SDK's own scripted model
(`agents.testing.ScriptedModel`, zero latency, tracing its rounds): triage asks the researcher,
the researcher answers, triage answers.

Run: `.venv/bin/python -m bench.bench_openai_agents [--quick]`. Prints a markdown table of the
time per run (µs) for the cases below, each the fastest of many short interleaved repeats (the one
least disturbed by other work on a shared machine; every case gets the same treatment):
- (a) the SDK with tracing disabled (`set_tracing_disabled(True)`): the baseline;
- (b) the SDK's default tracing, without the network: its `BatchTraceProcessor` (default settings)
  feeding an exporter that serializes every item like the default `BackendSpanExporter`
  (`item.export()`) and sends nothing;
- (c) the SDK + `JanuxProcessor` alone: OpenTelemetry SDK TracerProvider with a
  SimpleSpanProcessor(InMemorySpanExporter), as `bench_runtime` measures the Janux runtime;
- (d) the SDK's tracing on with no processor at all (what the SDK's own spans cost);
- (e) the bare OpenTelemetry SDK cost of the spans (c) writes: the same 6 spans and 2 events created
  directly, same processor and exporter (`bench_runtime`'s case (c)), no SDK run;
- (f) the floor of any processor writing the contract: those 6 spans and 2 events written from inside
  the SDK's callbacks during a real run, at the points (c) writes them, with the very attributes (c)
  wrote, precomputed (no mapping at all); (f') is the time inside its callbacks;
- (g) the same workload on a model that reports its rounds like the SDK's OpenAI models (model name
  and usage on each round's span, `ScriptedTracedModel`, gpt-4o-mini) with no Cost at all, so every
  round gets a genai-prices estimate, token counts new in every run; (g0) its baseline, tracing
  disabled; (g') the time inside the callbacks.
Then the Janux overhead over the SDK with tracing disabled (c - a), over the SDK with its tracing
on but no processor (c - d), the SDK's default tracing (b - a) for comparison, and the time inside
the JanuxProcessor's callbacks (c') against the floor (f'). Target: at most 0.2 ms per run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("OPENAI_API_KEY", "sk-offline-benchmark")  # never used: the model is scripted

from agents import Agent, Runner, set_trace_processors, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.tracing import TracingProcessor
from agents.tracing.processor_interface import TracingExporter
from agents.tracing.processors import BatchTraceProcessor
from agents.usage import Usage
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from bench.bench_runtime import _time_bare
from janux.integrations.openai_agents import JanuxProcessor
from janux.integrations.openai_agents.testing import ScriptedTracedModel
from janux.runtime import Cost
from janux.tracing import conventions as c


def _usage(input_tokens: int, output_tokens: int) -> Usage:
    return Usage(
        requests=1, input_tokens=input_tokens, output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    )  # fmt: skip


_PARENT_STEPS = (
    ModelStep(
        output=[function_call("researcher", '{"input": "find the refund policy"}', call_id="c1")],
        usage=_usage(400, 30),
    ),
    ModelStep(output=[assistant_message("Refunds take 5 days.")], usage=_usage(600, 12)),
)
_SUB_STEPS = (ModelStep(output=[assistant_message("5 days.")], usage=_usage(300, 8)),)
ESTIMATED_MODEL = "gpt-4o-mini"
"""The model of case (g): one genai-prices knows."""
COSTS = {"triage": Cost(input=0.15, output=0.6), "researcher": Cost(input=2.5, output=10)}
"""The prices bench_runtime gives the same two agents."""


class _SerializingNullExporter(TracingExporter):
    """What the default exporter does before the network: serialize every trace and span."""

    def export(self, items: list[Any]) -> None:
        for item in items:
            item.export()


def _workload(named: bool = False) -> tuple[Agent[Any], ScriptedModel, ScriptedModel]:
    """The two agents; `named`: on a model that reports its rounds like the SDK's OpenAI models
    (model name and usage on each round's span), so rounds without a Cost can be estimated."""
    if named:
        parent_model: ScriptedModel = ScriptedTracedModel(model=ESTIMATED_MODEL, api="chat_completions")
        sub_model: ScriptedModel = ScriptedTracedModel(model=ESTIMATED_MODEL, api="chat_completions")
    else:
        parent_model = ScriptedModel(emit_traces=True)
        sub_model = ScriptedModel(emit_traces=True)
    researcher = Agent(name="researcher", instructions="Research.", model=sub_model)
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=parent_model,
        tools=[researcher.as_tool(tool_name="researcher", tool_description="Research a question.")],
    )
    return triage, parent_model, sub_model


def _steps(index: int) -> tuple[tuple[ModelStep, ...], tuple[ModelStep, ...]]:
    """The parent's and the researcher's steps of run `index` of case (g): as (c)'s, with token
    counts new in every run, as real rounds have (nothing may be cached by token count)."""
    parent = (
        ModelStep(output=_PARENT_STEPS[0].output, usage=_usage(400 + index, 30)),
        ModelStep(output=_PARENT_STEPS[1].output, usage=_usage(600 + index, 12)),
    )
    return parent, (ModelStep(output=_SUB_STEPS[0].output, usage=_usage(300 + index, 8)),)


async def _time_runs(runs: int, reset: Callable[[], None], named: bool = False) -> float:
    agent, parent_model, sub_model = _workload(named)
    start = time.perf_counter()
    for index in range(runs):
        parent_steps, sub_steps = _steps(index) if named else (_PARENT_STEPS, _SUB_STEPS)
        parent_model.extend(parent_steps)
        sub_model.extend(sub_steps)
        result = await Runner.run(agent, "How long do refunds take?")
        assert result.final_output == "Refunds take 5 days."
        if index % 100 == 99:
            reset()  # finished spans and recorded calls would otherwise grow the heap run after run
            parent_model._calls.clear()
            sub_model._calls.clear()
    elapsed = time.perf_counter() - start
    reset()
    return elapsed / runs * 1e6


def _case(
    processors: list[TracingProcessor] | None, reset: Callable[[], None], named: bool = False
) -> Callable[[int], float]:
    """A case: `None` disables the SDK's tracing; a list installs exactly those processors."""

    def run(runs: int) -> float:
        set_tracing_disabled(processors is None)
        set_trace_processors(processors or [])
        return asyncio.run(_time_runs(runs, reset, named))

    return run


class _Timed(TracingProcessor):
    """Adds up the time spent inside another processor's callbacks (two clock reads per call)."""

    def __init__(self, inner: TracingProcessor) -> None:
        self.inner = inner
        self.seconds = 0.0

    def _timed(self, call: Callable[[Any], None], item: Any) -> None:
        start = time.perf_counter()
        call(item)
        self.seconds += time.perf_counter() - start

    def on_trace_start(self, trace: Any) -> None:
        self._timed(self.inner.on_trace_start, trace)

    def on_trace_end(self, trace: Any) -> None:
        self._timed(self.inner.on_trace_end, trace)

    def on_span_start(self, span: Any) -> None:
        self._timed(self.inner.on_span_start, span)

    def on_span_end(self, span: Any) -> None:
        self._timed(self.inner.on_span_end, span)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self) -> None:
        self.inner.force_flush()


_START_KEYS = frozenset(
    {
        c.GEN_AI_OPERATION_NAME, c.GEN_AI_AGENT_NAME, c.GEN_AI_CONVERSATION_ID, c.JANUX_AGENT_DEPTH,
        c.JANUX_HANDOFF_ATTEMPT, c.JANUX_HANDOFF_ID, c.GEN_AI_TOOL_NAME, c.GEN_AI_TOOL_CALL_ID,
    }
)  # fmt: skip
"""Attributes the processor sets when a loop or tool span starts (the rest when it ends)."""


class _Written:
    """What (c) wrote for one run, split as it writes it: names, start and end attributes, events."""

    def __init__(self, spans: list[ReadableSpan]) -> None:
        by_name: dict[str, list[ReadableSpan]] = {}
        for span in sorted(spans, key=lambda one: one.start_time or 0):
            by_name.setdefault(span.name.split(" ", 1)[0], []).append(span)
        root, attempt = by_name["invoke_agent"]
        (tool,) = by_name["execute_tool"]
        self.chats = [(chat.name, dict(chat.attributes or {})) for chat in by_name["chat"]]
        self.loops = [self._split(root), self._split(attempt), self._split(tool)]
        self.events = [(event.name, dict(event.attributes or {})) for event in tool.events]

    @staticmethod
    def _split(span: ReadableSpan) -> tuple[str, dict[str, Any], dict[str, Any]]:
        attributes = dict(span.attributes or {})
        start = {key: value for key, value in attributes.items() if key in _START_KEYS}
        if c.GEN_AI_TOOL_TYPE in attributes:
            start[c.GEN_AI_TOOL_TYPE] = c.TOOL_TYPE_FUNCTION  # a delegation is known only later
        end = {key: value for key, value in attributes.items() if key not in _START_KEYS}
        return span.name, start, end


class _BareInSitu(TracingProcessor):
    """The floor of any processor writing the contract: (c)'s spans, attributes precomputed, no mapping.

    Written at the callbacks where the JanuxProcessor writes them: the root when the run's agent
    starts, the tool when the function starts, HANDOFF_START and the attempt when the nested agent
    starts, a `chat` span when each turn ends, each loop when its task ends, the tool's end when
    the function ends. Only this workload's shape is known to it.
    """

    def __init__(self, provider: TracerProvider, written: _Written) -> None:
        self._tracer = provider.get_tracer(c.INSTRUMENTATION_SCOPE)
        self._written = written
        self._open: list[trace.Span] = []
        self._parents: list[Any] = []
        self._chat = 0

    def on_trace_start(self, trace: Any) -> None:
        self._chat = 0

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        kind = span.span_data.type
        if kind == "agent":
            if self._open:  # the nested agent: a delegation attempt under the tool span
                self._open[-1].add_event(*self._written.events[0])
            self._push(self._written.loops[1 if self._open else 0])
        elif kind == "function":
            self._push(self._written.loops[2])

    def _push(self, loop: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
        parent = self._parents[-1] if self._parents else None
        opened = self._tracer.start_span(loop[0], context=parent, attributes=loop[1])
        self._open.append(opened)
        self._parents.append(trace.set_span_in_context(opened))

    def on_span_end(self, span: Any) -> None:
        kind = span.span_data.type
        if kind == "turn":
            name, attributes = self._written.chats[self._chat]
            self._chat += 1
            chat = self._tracer.start_span(
                name, context=self._parents[-1], kind=SpanKind.CLIENT, attributes=attributes
            )
            chat.end()
        elif kind == "function":
            self._open[-1].add_event(*self._written.events[1])
            self._pop(self._written.loops[2])
        elif kind == "task":
            self._pop(self._written.loops[1 if len(self._open) > 1 else 0])

    def _pop(self, loop: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
        closing = self._open.pop()
        self._parents.pop()
        closing.set_attributes(loop[2])
        closing.end()

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def _written_by(janux: JanuxProcessor, memory: InMemorySpanExporter) -> _Written:
    """What the JanuxProcessor writes for one run of the workload."""
    memory.clear()
    _case([janux], lambda: None)(1)
    written = _Written(list(memory.get_finished_spans()))
    memory.clear()
    return written


def _inside(
    janux: TracingProcessor, reset: Callable[[], None], named: bool = False
) -> Callable[[int], float]:
    """µs per run spent inside a processor's callbacks (a direct, less noisy measure)."""
    timed = _Timed(janux)
    run_timed = _case([timed], reset, named)

    def run(runs: int) -> float:
        timed.seconds = 0.0
        run_timed(runs)
        return timed.seconds / runs * 1e6

    return run


def _bare(provider: TracerProvider, reset: Callable[[], None]) -> Callable[[int], float]:
    """The spans of one run created directly, in chunks of 100 runs (the exporter cleared between)."""

    def run(runs: int) -> float:
        chunks = max(1, runs // 100)
        total = 0.0
        for _ in range(chunks):
            total += asyncio.run(_time_bare(100, provider, reset))
            reset()
        return total / chunks

    return run


CASE_A = "(a) SDK, tracing disabled"
CASE_B = "(b) SDK default tracing: BatchTraceProcessor, serializing exporter, no network"
CASE_C = "(c) SDK + JanuxProcessor (SimpleSpanProcessor + InMemorySpanExporter)"
CASE_D = "(d) SDK tracing on, no processor"
CASE_E = "(e) bare OpenTelemetry SDK: the same 6 spans + 2 events, no agent run"
INSIDE = "(c') of (c): time inside the JanuxProcessor's callbacks"
CASE_G0 = "(g0) as (a), on a model reporting its rounds like the SDK's OpenAI models (gpt-4o-mini)"
CASE_G = "(g) (g0) + JanuxProcessor, no Cost at all: every round estimated (token counts new each run)"
INSIDE_G = "(g') of (g): time inside the JanuxProcessor's callbacks"
CASE_F = "(f) SDK + floor processor: (c)'s spans and attributes, precomputed, written from the callbacks"
FLOOR = "(f') of (f): time inside the floor processor's callbacks"


def measure(runs: int, repeats: int) -> dict[str, float]:
    """µs per run of every case: the fastest repeat (interleaved with the other cases)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    janux = JanuxProcessor(costs=COSTS, tracer_provider=provider)
    estimating = JanuxProcessor(tracer_provider=provider)
    floor = _BareInSitu(provider, _written_by(janux, memory))
    batch = BatchTraceProcessor(_SerializingNullExporter())
    nothing: Callable[[], None] = lambda: None  # noqa: E731
    cases = {
        CASE_A: _case(None, nothing),
        CASE_B: _case([batch], nothing),
        CASE_C: _case([janux], memory.clear),
        CASE_D: _case([], nothing),
        CASE_E: _bare(provider, memory.clear),
        CASE_F: _case([floor], memory.clear),
        INSIDE: _inside(janux, memory.clear),
        FLOOR: _inside(floor, memory.clear),
        CASE_G0: _case(None, nothing, named=True),
        CASE_G: _case([estimating], memory.clear, named=True),
        INSIDE_G: _inside(estimating, memory.clear, named=True),
    }
    cases[CASE_C](min(runs, 200))  # warm up
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):  # interleaved, so drift (other load, heap growth) hits every case alike
        for name, run in cases.items():
            samples[name].append(run(runs))
    batch.shutdown()
    set_trace_processors([])
    return {name: min(values) for name, values in samples.items()}


def render(results: dict[str, float]) -> str:
    """The markdown table plus the overhead lines."""
    base = results[CASE_A]
    lines = ["| case | µs per run | ratio to (a) |", "|---|---:|---:|"]
    lines += [f"| {name} | {value:,.1f} | {value / base:.2f}x |" for name, value in results.items()]
    janux, sdk_spans, inside, floor = results[CASE_C], results[CASE_D], results[INSIDE], results[FLOOR]
    lines += [
        "",
        f"JanuxProcessor, measured inside its callbacks (c'): **{inside / 1000:.3f} ms per run** "
        f"(target <= 0.2 ms): {inside / floor:.2f}x the floor (f') of {floor / 1000:.3f} ms, the same spans "
        f"written with no mapping; its mapping costs (c' - f') {(inside - floor) / 1000:.3f} ms. The bare "
        f"OpenTelemetry cost of those spans outside a run (e) is {results[CASE_E] / 1000:.3f} ms.",
        f"End to end: over the SDK with tracing disabled (c - a) {(janux - base) / 1000:.3f} ms, of which "
        f"the SDK's own spans (d - a) {(sdk_spans - base) / 1000:.3f} ms; over the SDK with tracing on "
        f"(c - d) {(janux - sdk_spans) / 1000:.3f} ms; the SDK's default tracing (b - a) "
        f"{(results[CASE_B] - base) / 1000:.3f} ms. The floor of (c - a), the same spans written with no "
        f"mapping (f - a): {(results[CASE_F] - base) / 1000:.3f} ms; (d - a) + (e) = "
        f"{(sdk_spans - base + results[CASE_E]) / 1000:.3f} ms.",
        f"Agents without a Cost, every round estimated: {results[INSIDE_G] / 1000:.3f} ms inside the "
        f"callbacks (g'), {(results[CASE_G] - results[CASE_G0]) / 1000:.3f} ms end to end (g - g0).",
    ]
    return "\n".join(lines)


def _fastest_per_call(call: Callable[[int], object], calls: int, batches: int = 7) -> float:
    """µs per call of `call(i)` for new `i` each time: the fastest of `batches` batches."""
    best = float("inf")
    for batch in range(batches):
        start = time.perf_counter()
        for index in range(batch * calls, (batch + 1) * calls):
            call(index)
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def estimate_cost_line() -> str:
    """What pricing one round of an agent without a Cost costs (the estimate the processor records):
    the shared estimator (one table probe per model, then its fitted rates) against a genai-prices
    lookup per round (a new token count each time, as real rounds have)."""
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    from janux.tracing.prices import estimate_round_cost

    estimate_round_cost("gpt-4o-mini", "openai", 1, 1)  # the one probe per model, outside the timing
    shared = _fastest_per_call(lambda n: estimate_round_cost("gpt-4o-mini", "openai", 400 + n, 30), 500)
    table = _fastest_per_call(
        lambda n: calc_price(
            PriceUsage(input_tokens=400 + n, output_tokens=30), "gpt-4o-mini", provider_id="openai"
        ),
        20,
    )
    return (
        f"An agent without a Cost: its round's estimate costs {shared:.2f} µs (`janux.tracing.prices`, "
        f"fitted per model) instead of {table:.1f} µs for a genai-prices lookup per round."
    )


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer runs (a smoke check, noisier figures)")
    parser.add_argument("--runs", type=int, default=None, help="runs per repeat (default 300, quick 100)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per case (default 15, quick 5)")
    args = parser.parse_args(argv)
    runs = args.runs or (100 if args.quick else 300)
    repeats = args.repeats or (5 if args.quick else 15)
    print(
        "OpenAI Agents SDK tracing overhead: 1 run = 3 model rounds + 1 delegation (agent.as_tool, the "
        f"SDK's ScriptedModel, zero latency); {runs} runs x {repeats} repeats, fastest repeat\n"
    )
    print(render(measure(runs, repeats)))
    print(estimate_cost_line())


if __name__ == "__main__":
    main()
