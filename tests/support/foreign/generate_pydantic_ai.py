"""Generate the Pydantic AI fixture: real `pydantic-ai` agents, instrumented, with function models.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_pydantic_ai [OUT_DIR]`.
Every model is a `FunctionModel` that answers from a script and records the usage it returned
in a ledger: the truth's token sums are that ledger, not a reading of the spans.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage

from tests.support.foreign.common import FIXTURES, Capture, FixtureWriter, Truth, swallow

NAME = "pydantic_ai"
LIBRARY = "pydantic-ai (InstrumentationSettings, GenAI semantic conventions)"

Step = tuple[list[tuple[str, dict[str, Any]]] | str, int, int]
"""One scripted answer: tool calls [(tool, args)] or a text, input tokens, output tokens."""


class Ledger:
    """What the scripted models answered: the truth's token sums and calls."""

    def __init__(self, truth: Truth) -> None:
        self.truth = truth

    def model(self, name: str, steps: list[Step]) -> FunctionModel:
        """A function model answering `steps` in order; each answer's usage goes in the ledger."""
        queue = list(steps)
        truth = self.truth

        def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            content, tokens_in, tokens_out = queue.pop(0)
            truth.input_tokens += tokens_in
            truth.output_tokens += tokens_out
            truth.inference_calls += 1
            if isinstance(content, str):
                parts: list[Any] = [TextPart(content)]
            else:
                parts = [ToolCallPart(tool, args, tool_call_id=f"call-{tool}-{i}") for i, (tool, args) in
                         enumerate(content)]  # fmt: skip
            usage = RequestUsage(input_tokens=tokens_in, output_tokens=tokens_out)
            return ModelResponse(parts=parts, usage=usage, model_name=name)

        return FunctionModel(answer, model_name=name)

    def failing(self, name: str) -> FunctionModel:
        """A model whose only call fails like a provider error (no usage returned)."""

        def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            raise ModelHTTPError(503, name, {"error": "overloaded"})

        return FunctionModel(answer, model_name=name)


def _agent(name: str, model: Any) -> Agent[None, str]:
    return Agent(model, name=name)


def _delegate(parent: Agent[None, str], tool: str, child: Agent[None, str], truth: Truth) -> None:
    """Give `parent` a tool that runs `child` (the Pydantic AI delegation pattern)."""

    async def run_child(ctx: RunContext[None], task: str) -> str:
        truth.agents.append(child.name or "")
        truth.delegations.append([parent.name or "", child.name or ""])
        result = await child.run(task, usage=ctx.usage)
        return result.output

    parent.tool(name=tool)(run_child)


def chain(ledger: Ledger) -> Agent[None, str]:
    """triage -> researcher -> checker: a delegation chain of depth 2."""
    checker = _agent("checker", ledger.model("gpt-4o-mini", [("confirmed", 210, 6)]))
    researcher = _agent("researcher", ledger.model("gpt-4o-mini", [
        ([("ask_checker", {"task": "verify the 30 days"})], 380, 22), ("30 days, confirmed", 450, 12)]))
    triage = _agent("triage", ledger.model("gpt-4o", [
        ([("ask_researcher", {"task": "refund window"})], 400, 30), ("Refunds within 30 days.", 520, 14)]))
    _delegate(researcher, "ask_checker", checker, ledger.truth)
    _delegate(triage, "ask_researcher", researcher, ledger.truth)
    return triage


def parallel(ledger: Ledger) -> Agent[None, str]:
    """triage calls two delegation tools in one model answer (they run concurrently)."""
    researcher = _agent("researcher", ledger.model("gpt-4o-mini", [("policy: 30 days", 300, 10)]))
    writer = _agent("writer", ledger.model("gpt-4o-mini", [("draft ready", 260, 40)]))
    triage = _agent("triage", ledger.model("gpt-4o", [
        ([("ask_researcher", {"task": "policy"}), ("ask_writer", {"task": "draft"})], 410, 48),
        ("Here is the answer.", 700, 20)]))
    _delegate(triage, "ask_researcher", researcher, ledger.truth)
    _delegate(triage, "ask_writer", writer, ledger.truth)
    return triage


def tool_error(ledger: Ledger) -> Agent[None, str]:
    """A tool fails (ModelRetry) and the model answers after the retry prompt."""
    triage = _agent("triage", ledger.model("gpt-4o", [
        ([("lookup_order", {"order": "A-1"})], 380, 18), ("I could not find that order.", 460, 15)]))

    @triage.tool_plain(retries=2)
    def lookup_order(order: str) -> str:
        raise ModelRetry(f"order {order} not found")

    return triage


def retry(ledger: Ledger) -> Agent[None, str]:
    """The first model is overloaded; the fallback model answers (a retried model request)."""
    model = FallbackModel(ledger.failing("gpt-4o"), ledger.model("gpt-4o-mini", [("Done.", 330, 9)]))
    return _agent("triage", model)


async def handoff(ledger: Ledger, capture: Capture) -> None:
    """Pydantic AI's programmatic hand-off: the app runs triage, then billing with its history.

    Pydantic AI records no transfer of its own: two agent runs under the app's span."""
    triage = _agent("triage", ledger.model("gpt-4o", [("billing question", 300, 4)]))
    billing = _agent("billing", ledger.model("gpt-4o-mini", [("Your invoice is paid.", 420, 11)]))
    tracer = capture.provider.get_tracer("support-app")
    with tracer.start_as_current_span("support flow"):
        first = await triage.run("Is my invoice paid?")
        ledger.truth.agents.append("triage")
        await billing.run("Is my invoice paid?", message_history=first.all_messages())
        ledger.truth.agents.append("billing")


def raised(ledger: Ledger) -> Agent[None, str]:
    """The subagent's model fails for good: the tool, the subagent and the run raise."""
    researcher = _agent("researcher", ledger.failing("gpt-4o-mini"))
    triage = _agent("triage", ledger.model("gpt-4o", [([("ask_researcher", {"task": "x"})], 350, 20)]))
    _delegate(triage, "ask_researcher", researcher, ledger.truth)
    return triage


SCENARIOS: dict[str, Callable[[Ledger], Agent[None, str]]] = {
    "chain": chain, "parallel": parallel, "tool_error": tool_error, "retry": retry, "raised": raised,
}  # fmt: skip


def _errors(spans: list[ReadableSpan]) -> int:
    return sum(1 for s in spans if s.status.status_code == StatusCode.ERROR)


def generate(out: Path = FIXTURES) -> tuple[Path, Path]:
    """Run every scenario and write the fixture; returns (lines path, truth path)."""
    writer = FixtureWriter(NAME)
    for seed, name in enumerate([*SCENARIOS, "handoff"], start=1):
        capture = Capture(seed=1000 + seed, service="pydantic-ai-app")
        Agent.instrument_all(InstrumentationSettings(tracer_provider=capture.provider))
        truth = Truth(scenario=name, library=LIBRARY)
        ledger = Ledger(truth)
        with swallow(truth):
            if name == "handoff":
                asyncio.run(handoff(ledger, capture))
            else:
                root = SCENARIOS[name](ledger)
                truth.agents.insert(0, root.name or "")
                asyncio.run(root.run("Can I get a refund on my annual plan?"))
        spans = capture.take()
        truth.errors = _errors(spans)
        writer.add(spans, truth)
    Agent.instrument_all(False)
    return writer.write(out)


if __name__ == "__main__":
    print(*generate(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURES), sep="\n")
