"""A support desk on the OpenAI Agents SDK, traced to Janux with one line. Runs offline.

    janux collect                                  # terminal 1: receiver + embedded store
    python docs/examples/openai_agents_support_desk.py --endpoint http://127.0.0.1:4318
    janux ui                                       # the dashboard on the same store

Three agents: `triage` answers customers, asks `researcher` (an agent used as a tool:
`researcher.as_tool(...)`, a delegation) and hands refunds off to `billing` (an SDK handoff, a
transfer), which calls a function tool. Two conversations run:

1. "Can I get a refund on my annual plan?": triage delegates to the researcher, then transfers
   to billing, which issues the refund.
2. "Why was card 4111 1111 1111 1111 charged twice?": the researcher's input guardrail refuses
   a card number, so that delegation is denied and triage answers on its own.

The models are scripted (`ScriptedTracedModel`: the SDK's own scripted model, reporting each
round like the SDK's OpenAI models do), so no network and no API key are needed; swap in real
models (`model="gpt-4o-mini"`) and nothing else changes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from typing import Any

from agents import Agent, GuardrailFunctionOutput, Runner, function_tool, input_guardrail, trace
from agents.testing import ModelStep, assistant_message, function_call
from agents.usage import Usage

from janux.integrations.openai_agents import instrument
from janux.integrations.openai_agents.testing import ScriptedTracedModel
from janux.runtime import Cost
from janux.tracing.sdk import configure_telemetry

COSTS = {
    "triage": Cost(input=0.15, output=0.60),  # USD per million tokens
    "researcher": Cost(input=2.50, output=10.00),
    "billing": Cost(input=0.15, output=0.60),
}
"""Each agent's price: every round is billed at its own agent's rate."""

CARD_NUMBER = re.compile(r"\b(?:\d[ -]?){13,16}\b")


def _round(
    input_tokens: int,
    output_tokens: int,
    *,
    text: str | None = None,
    tool: tuple[str, dict[str, Any]] | None = None,
) -> ModelStep:
    """One scripted model round: an answer, or one tool call."""
    if tool is not None:
        output = [function_call(tool[0], json.dumps(tool[1]), call_id=f"call_{tool[0]}_{input_tokens}")]
    else:
        output = [assistant_message(text or "")]
    usage = Usage(
        requests=1,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    )
    return ModelStep(output=output, usage=usage)


@function_tool
def issue_refund(plan: str) -> str:
    """Issue a refund for a plan."""
    return f"refund for the {plan} plan issued: $120"


@input_guardrail(run_in_parallel=False)  # checked before the model is called
async def no_card_numbers(context: Any, agent: Any, task: Any) -> GuardrailFunctionOutput:
    """Refuses any task that contains a card number."""
    found = bool(CARD_NUMBER.search(str(task)))
    return GuardrailFunctionOutput(output_info="card number" if found else None, tripwire_triggered=found)


def support_desk() -> Agent[None]:
    """The three agents, with the rounds of both conversations scripted."""
    researcher = Agent(
        name="researcher",
        instructions="You research the help-center articles.",
        model=ScriptedTracedModel(
            [_round(420, 9, text="Annual plans are refundable within 30 days of purchase.")], model="gpt-4o"
        ),
        input_guardrails=[no_card_numbers],
    )
    billing = Agent(
        name="billing",
        instructions="You handle refunds.",
        model=ScriptedTracedModel(
            [
                _round(610, 18, tool=("issue_refund", {"plan": "annual"})),
                _round(680, 21, text="Done: your $120 refund is on its way."),
            ],
            model="gpt-4o-mini",
        ),
        tools=[issue_refund],
    )
    triage = Agent(
        name="triage",
        instructions="You are the front desk: research first, hand refunds to billing.",
        model=ScriptedTracedModel(
            [
                # conversation 1
                _round(400, 30, tool=("researcher", {"input": "Refund rules for annual plans"})),
                _round(520, 14, tool=("transfer_to_billing", {})),
                # conversation 2
                _round(380, 33, tool=("researcher", {"input": "Card 4111 1111 1111 1111 charged twice?"})),
                _round(450, 26, text="I cannot look up card numbers; billing will email you."),
            ],
            model="gpt-4o-mini",
        ),
        tools=[researcher.as_tool(tool_name="researcher", tool_description="Research the help center.")],
        handoffs=[billing],
    )
    return triage


CONVERSATIONS = (
    ("conv-refund", "Can I get a refund on my annual plan?"),
    ("conv-double-charge", "Why was card 4111 1111 1111 1111 charged twice?"),
)
"""(conversation id, the customer's message) of each run."""


async def serve(desk: Agent[None]) -> None:
    """Run each conversation; each is one SDK trace, grouped by its conversation id."""
    for conversation, message in CONVERSATIONS:
        with trace("support desk", group_id=conversation):
            result = await Runner.run(desk, message)
        usage = result.context_wrapper.usage
        print(
            f"{conversation}: {result.last_agent.name} answered {result.final_output!r} "
            f"({usage.input_tokens} input / {usage.output_tokens} output tokens)"
        )


def main(argv: list[str] | None = None) -> None:
    """Set up telemetry, instrument the SDK (the one line), run the desk, flush."""
    parser = argparse.ArgumentParser(description="A support desk on the OpenAI Agents SDK, traced to Janux.")
    parser.add_argument(
        "--endpoint", help="OTLP/HTTP endpoint of `janux collect` (default: OTEL_* variables)"
    )
    parser.add_argument("--service-name", default="support-desk", help="service.name of the traces")
    args = parser.parse_args(argv)
    endpoint = {"endpoint": args.endpoint, "protocol": "http/protobuf"} if args.endpoint else {}
    telemetry = configure_telemetry(service_name=args.service_name, metrics=False, **endpoint)
    instrument(costs=COSTS, exclusive=True)  # the one line (exclusive: nothing goes to OpenAI's tracing)
    try:
        asyncio.run(serve(support_desk()))
    finally:
        telemetry.shutdown()


if __name__ == "__main__":
    main()
