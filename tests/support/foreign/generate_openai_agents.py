"""Generate the OpenAI Agents SDK fixtures, once per OpenTelemetry bridge.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_openai_agents [OUT_DIR]`.
Real `openai-agents` agents run the SDK's own `OpenAIChatCompletionsModel` against an `AsyncOpenAI`
client whose HTTP transport answers from a script (no network). The SDK's traces go through
- `openinference-instrumentation-openai-agents` (fixture `openai_agents_openinference`), and
- `opentelemetry-instrumentation-openai-agents-v2`, the OTel GenAI bridge (`openai_agents_genai`).
The truth is read off the SDK's raw tracing spans (a `TracingProcessor` recording generation
usage, agent runs, handoffs and errors), never off the bridged OpenTelemetry spans.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_trace_processors,
    set_tracing_disabled,
)
from agents.retry import ModelRetrySettings, RetryDecision
from agents.tracing import Span, Trace, TracingProcessor
from agents.tracing.span_data import AgentSpanData, FunctionSpanData, GenerationSpanData, HandoffSpanData
from openai import AsyncOpenAI

from tests.support.foreign.common import FIXTURES, Capture, FixtureWriter, Truth, swallow

Reply = tuple[list[tuple[str, dict[str, Any]]] | str, int, int]
"""One scripted chat completion: tool calls [(tool, args)] or a text, prompt and completion tokens."""


class Script:
    """Scripted chat completions per model name, served over a fake HTTP transport."""

    def __init__(self, replies: dict[str, list[Reply | int]]) -> None:
        self.replies = {model: list(steps) for model, steps in replies.items()}
        self.calls = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        step = self.replies[body["model"]].pop(0)
        if isinstance(step, int):  # an HTTP error status (the model request fails)
            return httpx.Response(step, json={"error": {"message": "overloaded", "type": "server_error"}})
        content, tokens_in, tokens_out = step
        self.calls += 1
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(content, str):
            message["content"] = content
            finish = "stop"
        else:
            message["tool_calls"] = [
                {"id": f"call_{self.calls}_{i}", "type": "function",
                 "function": {"name": tool, "arguments": json.dumps(args)}}
                for i, (tool, args) in enumerate(content)
            ]  # fmt: skip
            finish = "tool_calls"
        total = tokens_in + tokens_out
        usage = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": total}
        return httpx.Response(200, json={
            "id": f"chatcmpl-{self.calls}", "object": "chat.completion", "created": 1_700_000_000,
            "model": body["model"], "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        })  # fmt: skip

    def model(self, name: str) -> OpenAIChatCompletionsModel:
        """The SDK's chat-completions model on a client served by this script."""
        client = AsyncOpenAI(
            api_key="offline", base_url="http://scripted.invalid/v1", max_retries=0,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(self.handle)),
        )  # fmt: skip
        return OpenAIChatCompletionsModel(model=name, openai_client=client)


class RawSpans(TracingProcessor):
    """The SDK's own spans, for the truth (tokens per generation, agents, handoffs, errors)."""

    def __init__(self) -> None:
        self.spans: list[Span[Any]] = []

    def on_trace_start(self, trace: Trace) -> None:
        pass

    def on_trace_end(self, trace: Trace) -> None:
        pass

    def on_span_start(self, span: Span[Any]) -> None:
        self.spans.append(span)

    def on_span_end(self, span: Span[Any]) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass

    def truth(self, truth: Truth) -> None:
        """Fill `truth` from the raw spans of one run."""
        by_id = {s.span_id: s for s in self.spans}
        for span in self.spans:
            data = span.span_data
            if span.error:
                truth.errors += 1
            if isinstance(data, GenerationSpanData) and data.usage:
                truth.input_tokens += int(data.usage.get("input_tokens") or 0)
                truth.output_tokens += int(data.usage.get("output_tokens") or 0)
                truth.inference_calls += 1
            elif isinstance(data, AgentSpanData):
                truth.agents.append(data.name)
                caller = _caller(span, by_id)
                if caller is not None:
                    truth.delegations.append([caller, data.name])
            elif isinstance(data, HandoffSpanData) and data.from_agent and data.to_agent:
                truth.transfers.append([data.from_agent, data.to_agent])


def _caller(span: Span[Any], by_id: dict[str, Span[Any]]) -> str | None:
    """The agent whose tool call ran this agent (agents as tools), None for a top-level run."""
    parent = by_id.get(span.parent_id or "")
    through_tool = False
    while parent is not None:
        if isinstance(parent.span_data, FunctionSpanData):
            through_tool = True
        if isinstance(parent.span_data, AgentSpanData):
            return parent.span_data.name if through_tool else None
        parent = by_id.get(parent.parent_id or "")
    return None


@function_tool
def lookup_order(order: str) -> str:
    """Find an order by id."""
    raise LookupError(f"order {order} not found")


def chain(script: Script) -> Agent[Any]:
    """triage -> researcher -> checker through agents used as tools: a chain of depth 2."""
    checker = Agent(name="checker", instructions="Check facts.", model=script.model("gpt-4.1-mini"))
    researcher = Agent(name="researcher", instructions="Research.", model=script.model("gpt-4o-mini"),
                       tools=[checker.as_tool("ask_checker", "Verify a fact.")])  # fmt: skip
    return Agent(name="triage", instructions="Delegate.", model=script.model("gpt-4o"),
                 tools=[researcher.as_tool("ask_researcher", "Research a question.")])  # fmt: skip


CHAIN: dict[str, list[Reply | int]] = {
    "gpt-4o": [([("ask_researcher", {"input": "refund window"})], 400, 30),
               ("Refunds within 30 days.", 520, 14)],
    "gpt-4o-mini": [([("ask_checker", {"input": "30 days?"})], 380, 22), ("30 days, confirmed", 450, 12)],
    "gpt-4.1-mini": [("confirmed", 210, 6)],
}  # fmt: skip


def parallel(script: Script) -> Agent[Any]:
    """triage calls two agents-as-tools in one answer (the SDK runs them concurrently)."""
    researcher = Agent(name="researcher", instructions="Research.", model=script.model("gpt-4o-mini"))
    writer = Agent(name="writer", instructions="Write.", model=script.model("gpt-4.1-mini"))
    tools = [researcher.as_tool("ask_researcher", "Research."), writer.as_tool("ask_writer", "Write.")]
    return Agent(name="triage", instructions="Delegate.", model=script.model("gpt-4o"), tools=tools)


PARALLEL: dict[str, list[Reply | int]] = {
    "gpt-4o": [([("ask_researcher", {"input": "policy"}), ("ask_writer", {"input": "draft"})], 410, 48),
               ("Here is the answer.", 700, 20)],
    "gpt-4o-mini": [("policy: 30 days", 300, 10)],
    "gpt-4.1-mini": [("draft ready", 260, 40)],
}  # fmt: skip


def tool_error(script: Script) -> Agent[Any]:
    """A function tool raises; the SDK hands the error text to the model, which answers."""
    return Agent(name="triage", instructions="Help.", model=script.model("gpt-4o"), tools=[lookup_order])


TOOL_ERROR: dict[str, list[Reply | int]] = {
    "gpt-4o": [([("lookup_order", {"order": "A-1"})], 380, 18),
               ("I could not find that order.", 460, 15)],
}


def _always_retry(request: Any) -> RetryDecision:
    return RetryDecision(retry=True, delay=0.0, reason="scripted 503", approve_unsafe_replay=True)


def retry(script: Script) -> Agent[Any]:
    """The first model request fails with 503; the runner retries it once and it succeeds."""
    settings = ModelSettings(retry=ModelRetrySettings(max_retries=1, policy=_always_retry))
    return Agent(name="triage", instructions="Help.", model=script.model("gpt-4o"), model_settings=settings)


RETRY: dict[str, list[Reply | int]] = {"gpt-4o": [503, ("Done.", 330, 9)]}


def handoff(script: Script) -> Agent[Any]:
    """triage hands the conversation off to billing (a transfer)."""
    billing = Agent(name="billing", instructions="Billing.", model=script.model("gpt-4o-mini"))
    return Agent(name="triage", instructions="Route.", model=script.model("gpt-4o"), handoffs=[billing])


HANDOFF: dict[str, list[Reply | int]] = {
    "gpt-4o": [([("transfer_to_billing", {})], 300, 12)],
    "gpt-4o-mini": [("Your invoice is paid.", 420, 11)],
}


def raised(script: Script) -> Agent[Any]:
    """The subagent's model fails for good: the run raises."""
    researcher = Agent(name="researcher", instructions="Research.", model=script.model("gpt-4o-mini"))
    return Agent(name="triage", instructions="Delegate.", model=script.model("gpt-4o"), tools=[
        researcher.as_tool("ask_researcher", "Research.", failure_error_function=None)])  # fmt: skip


RAISED: dict[str, list[Reply | int]] = {
    "gpt-4o": [([("ask_researcher", {"input": "x"})], 350, 20)],
    "gpt-4o-mini": [500],
}

SCENARIOS: dict[str, tuple[Callable[[Script], Agent[Any]], dict[str, list[Reply | int]]]] = {
    "chain": (chain, CHAIN), "parallel": (parallel, PARALLEL), "tool_error": (tool_error, TOOL_ERROR),
    "retry": (retry, RETRY), "handoff": (handoff, HANDOFF), "raised": (raised, RAISED),
}  # fmt: skip

BRIDGES = {
    "openinference": (
        "openai_agents_openinference", "openai-agents + openinference-instrumentation-openai-agents"),
    "genai": ("openai_agents_genai", "openai-agents + opentelemetry-instrumentation-openai-agents-v2"),
}  # fmt: skip


def _instrument(bridge: str, capture: Capture) -> Callable[[], None]:
    """Instrument the SDK with one bridge into `capture`; returns the uninstrument call."""
    if bridge == "openinference":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        oi = OpenAIAgentsInstrumentor()
        oi.instrument(tracer_provider=capture.provider, exclusive_processor=False)
        return lambda: oi.uninstrument()
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor as GenAIInstrumentor

    genai = GenAIInstrumentor()
    genai.instrument(tracer_provider=capture.provider, capture_message_content=False)
    return lambda: genai.uninstrument()


def generate_bridge(bridge: str, out: Path = FIXTURES) -> tuple[Path, Path]:
    """Run every scenario through one bridge and write its fixture."""
    name, library = BRIDGES[bridge]
    writer = FixtureWriter(name)
    set_tracing_disabled(False)
    for seed, (scenario, (build, replies)) in enumerate(SCENARIOS.items(), start=1):
        capture = Capture(seed=(2000 if bridge == "genai" else 3000) + seed, service="openai-agents-app")
        raw = RawSpans()
        set_trace_processors([raw])  # no exporter to OpenAI's backend: offline
        stop = _instrument(bridge, capture)
        truth = Truth(scenario=scenario, library=library)
        script = Script(replies)
        with swallow(truth):
            asyncio.run(Runner.run(build(script), "Can I get a refund on my annual plan?"))
        stop()
        raw.truth(truth)
        writer.add(capture.take(), truth)
    set_trace_processors([])
    return writer.write(out)


def generate(out: Path = FIXTURES) -> list[Path]:
    """Both bridges' fixtures."""
    return [path for bridge in BRIDGES for path in generate_bridge(bridge, out)]


if __name__ == "__main__":
    print(*generate(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURES), sep="\n")
