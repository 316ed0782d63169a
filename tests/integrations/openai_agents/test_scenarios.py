"""The real OpenAI Agents SDK, offline, traced by JanuxProcessor: one test per kind of run.

Each run's spans must pass the contract checker and the dashboard's reconciliation checks, show the
right tree, and account for exactly the tokens the SDK itself counted (`context_wrapper.usage`),
each delegation priced at its own agent's cost.
"""

from __future__ import annotations

import math

import pytest
from agents import Agent, GuardrailFunctionOutput, function_tool, input_guardrail
from agents.exceptions import InputGuardrailTripwireTriggered, MaxTurnsExceeded

from janux.tracing import conventions as c
from janux.tracing.analysis import TraceView
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from tests.integrations.openai_agents.scripts import (
    MODEL_KINDS,
    MODEL_NAME,
    ModelKind,
    Outcome,
    calls,
    failing,
    model,
    price,
    reply,
    run,
)
from tests.integrations.openai_agents.verify import attr, checked, shape, spans_named
from tests.support.contract_checker import Traced


def _model_name(kind: ModelKind) -> str:
    return "unknown" if kind == "sdk" else MODEL_NAME  # the SDK's ScriptedModel names no model


def _same(a: float | None, b: float) -> bool:
    return a is not None and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


def _assert_tokens(view: TraceView, outcome: Outcome) -> None:
    """The rebuilt trace holds exactly the tokens the SDK counted for the run."""
    assert (view.total.input_tokens, view.total.output_tokens) == (
        outcome.usage.input_tokens,
        outcome.usage.output_tokens,
    )


@function_tool
def lookup(topic: str) -> str:
    """Look a topic up in the help center."""
    return f"Article about {topic}."


@function_tool
def broken_lookup(topic: str) -> str:
    """A help-center lookup whose backend is down."""
    raise ConnectionError("help center unreachable")


@input_guardrail(run_in_parallel=False)  # checked before the model is called
async def no_account_numbers(context: object, agent: object, text: object) -> GuardrailFunctionOutput:
    """Refuses every input (the scripted user always sends an account number)."""
    return GuardrailFunctionOutput(output_info="account number", tripwire_triggered=True)


def _researcher(kind: ModelKind, *steps: object) -> Agent[None]:
    return Agent(name="researcher", instructions="Research the help center.", model=model(kind, *steps))  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_one_delegation_through_as_tool(traced: Traced, kind: ModelKind) -> None:
    researcher = _researcher(kind, reply("Refundable within 30 days.", 300, 8))
    triage = Agent(
        name="triage",
        instructions="Front desk: ask the researcher.",
        model=model(
            kind,
            calls(("researcher", {"input": "refund rules"}), input_tokens=400, output_tokens=30),
            reply("Yes, within 30 days.", 600, 12),
        ),
        tools=[researcher.as_tool(tool_name="researcher", tool_description="Research the help center.")],
    )
    outcome = await run(triage, "Can I get a refund?")
    assert outcome.result.final_output == "Yes, within 30 days."
    records, view = checked(traced)
    name = _model_name(kind)
    assert shape(traced) == [
        "invoke_agent triage depth=0",
        f"  chat {name}",
        "  execute_tool researcher status=completed attempts=1 events=START,END",
        "    invoke_agent researcher depth=1 attempt=1",
        f"      chat {name}",
        f"  chat {name}",
    ]
    _assert_tokens(view, outcome)
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (1300, 50)
    (delegation,) = view.delegations
    assert delegation.kind == "delegate" and [a.number for a in delegation.attempts] == [1]
    assert _same(delegation.cost.cost, price("researcher", 300, 8))
    bill = price("triage", 400, 30) + price("triage", 600, 12) + price("researcher", 300, 8)
    assert view.bill is not None and _same(view.bill.cost, bill) and view.bill.unpriced_tokens == 0
    chats = spans_named(records, "chat")
    assert [attr(s, c.GEN_AI_AGENT_NAME) for s in chats] == ["triage", "researcher", "triage"]
    assert [attr(s, c.GEN_AI_USAGE_INPUT_TOKENS) for s in chats] == [400, 300, 600]


@pytest.mark.parametrize("kind", ["responses", "chat_completions"])
async def test_parallel_tool_calls_and_delegations(traced: Traced, kind: ModelKind) -> None:
    researcher = _researcher(kind, reply("Policy: 30 days.", 300, 8))
    writer = Agent(name="writer", instructions="Draft.", model=model(kind, reply("Draft ready.", 200, 40)))
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            kind,
            calls(
                ("lookup", {"topic": "refunds"}),
                ("researcher", {"input": "refund rules"}),
                ("writer", {"input": "draft a reply"}),
                ("lookup", {"topic": "plans"}),
                input_tokens=400,
                output_tokens=60,
            ),
            reply("Here is your answer.", 900, 20),
        ),
        tools=[
            lookup,
            researcher.as_tool(tool_name="researcher", tool_description="Research."),
            writer.as_tool(tool_name="writer", tool_description="Write."),
        ],
    )
    outcome = await run(triage, "Refund?")
    records, view = checked(traced)
    tools = spans_named(records, "execute_tool")
    assert sorted(s.name for s in tools) == [
        "execute_tool lookup",
        "execute_tool lookup",
        "execute_tool researcher",
        "execute_tool writer",
    ]
    # The four calls ran at the same time, each under the triage loop.
    root = spans_named(records, "invoke_agent triage")[0]
    assert {s.parent_span_id for s in tools} == {root.span_id}
    assert max(s.start_ns for s in tools) < min(s.start_ns + s.duration_ns for s in tools)
    _assert_tokens(view, outcome)
    costs = {d.tool: d.cost.cost for d in view.delegations}
    assert _same(costs["researcher"], price("researcher", 300, 8))
    assert _same(costs["writer"], price("writer", 200, 40))


async def test_parallel_delegations_on_a_model_without_usage_are_left_unread_not_guessed(
    traced: Traced,
) -> None:
    """The SDK's ScriptedModel reports no usage per round; the SDK counts two concurrent
    delegations into one shared total, so their rounds cannot be told apart: no figure is better
    than a wrong one."""
    researcher = _researcher("sdk", reply("Policy.", 300, 8))
    writer = Agent(name="writer", instructions="Draft.", model=model("sdk", reply("Draft.", 200, 40)))
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            "sdk",
            calls(
                ("researcher", {"input": "a"}), ("writer", {"input": "b"}), input_tokens=400, output_tokens=60
            ),
            reply("Done.", 900, 20),
        ),
        tools=[
            researcher.as_tool(tool_name="researcher", tool_description="Research."),
            writer.as_tool(tool_name="writer", tool_description="Write."),
        ],
    )
    await run(triage, "Refund?")
    records, view = checked(traced)
    usage_of = {
        (attr(s, c.GEN_AI_AGENT_NAME), attr(s, c.GEN_AI_USAGE_INPUT_TOKENS))
        for s in spans_named(records, "chat")
    }
    # Overlapping turns: no usage; the triage's second turn ran alone: exact.
    assert usage_of == {("researcher", None), ("writer", None), ("triage", None), ("triage", 900)}
    assert (view.total.input_tokens, view.total.output_tokens) == (900, 20)


@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_handoff_chain_is_two_transfers_in_one_loop(traced: Traced, kind: ModelKind) -> None:
    refunds = Agent(
        name="refunds", instructions="Refunds.", model=model(kind, reply("Refund issued.", 700, 25))
    )
    billing = Agent(
        name="billing",
        instructions="Billing.",
        model=model(kind, calls(("transfer_to_refunds", {}), input_tokens=500, output_tokens=15)),
        handoffs=[refunds],
    )
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=model(kind, calls(("transfer_to_billing", {}), input_tokens=400, output_tokens=10)),
        handoffs=[billing],
    )
    outcome = await run(triage, "Refund my annual plan.")
    assert outcome.result.final_output == "Refund issued." and outcome.result.last_agent.name == "refunds"
    records, view = checked(traced)
    name = _model_name(kind)
    assert shape(traced) == [
        "invoke_agent triage depth=0 from=triage to=refunds",
        f"  chat {name}",
        "  execute_tool handoff.billing status=completed attempts=1 events=START,END",
        f"  chat {name}",
        "  execute_tool handoff.refunds status=completed attempts=1 events=START,END",
        f"  chat {name}",
    ]
    (root,) = spans_named(records, "invoke_agent")
    assert attr(root, c.GEN_AI_AGENT_NAME) == "refunds"
    # The whole chain is on the root, so the Traces list names the first agent and every holder.
    assert list(attr(root, c.JANUX_HANDOFF_PATH)) == ["triage", "billing", "refunds"]
    (summary,) = MemoryTraceSource(records).list_traces(TraceFilter())
    assert (summary.root_agent, summary.agent_path) == ("triage", ("triage", "billing", "refunds"))
    assert [attr(s, c.GEN_AI_AGENT_NAME) for s in spans_named(records, "chat")] == [
        "triage",
        "billing",
        "refunds",
    ]
    for tool in spans_named(records, "execute_tool"):
        assert attr(tool, c.GEN_AI_TOOL_TYPE) == c.TOOL_TYPE_HANDOFF
        end = tool.events[-1].attributes
        assert (end[c.JANUX_HANDOFF_KIND], end[c.JANUX_HANDOFF_DEPTH]) == (c.KIND_TRANSFER, 0)
        assert end[c.JANUX_HANDOFF_SESSION_MODE] == c.SESSION_REUSE
    assert [(d.kind, d.target) for d in view.delegations] == [
        ("transfer", "billing"),
        ("transfer", "refunds"),
    ]
    _assert_tokens(view, outcome)
    bill = price("triage", 400, 10) + price("billing", 500, 15) + price("refunds", 700, 25)
    assert view.bill is not None and _same(view.bill.cost, bill)


@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_tool_error_is_an_error_span_and_the_run_goes_on(traced: Traced, kind: ModelKind) -> None:
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            kind,
            calls(("broken_lookup", {"topic": "refunds"}), input_tokens=100, output_tokens=10),
            reply("The help center is down, sorry.", 150, 9),
        ),
        tools=[broken_lookup],
    )
    outcome = await run(triage, "Refund?")
    assert outcome.error is None
    records, view = checked(traced)
    name = _model_name(kind)
    assert shape(traced) == [
        "invoke_agent triage depth=0",
        f"  chat {name}",
        f"  execute_tool broken_lookup [Error {c.ERROR_TOOL}]",
        f"  chat {name}",
    ]
    (tool,) = spans_named(records, "execute_tool")
    assert tool.status_message.startswith("Error running tool")
    _assert_tokens(view, outcome)


@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_input_guardrail_trip_denies_the_run(traced: Traced, kind: ModelKind) -> None:
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=model(kind, reply("never sent", 100, 10)),
        input_guardrails=[no_account_numbers],
    )
    outcome = await run(triage, "My account is 12345678.")
    assert isinstance(outcome.error, InputGuardrailTripwireTriggered)
    records, view = checked(traced)
    assert shape(traced)[0] == (
        "invoke_agent triage [Error InputGuardrailTripwireTriggered] depth=0 deny_reason=guardrail"
    )
    (root,) = spans_named(records, "invoke_agent")
    assert root.status_message == "input guardrail 'no_account_numbers' tripped"
    _assert_tokens(view, outcome)


@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_input_guardrail_trip_in_a_subagent_is_a_denied_delegation(
    traced: Traced, kind: ModelKind
) -> None:
    guarded = Agent(
        name="researcher",
        instructions="Research.",
        model=model(kind, reply("never sent", 100, 10)),
        input_guardrails=[no_account_numbers],
    )
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            kind,
            calls(("researcher", {"input": "account 12345678"}), input_tokens=400, output_tokens=30),
            reply("I cannot look that up.", 500, 12),
        ),
        tools=[guarded.as_tool(tool_name="researcher", tool_description="Research.")],
    )
    outcome = await run(triage, "Look up account 12345678.")
    assert outcome.error is None
    _records, view = checked(traced)
    name = _model_name(kind)
    assert shape(traced) == [
        "invoke_agent triage depth=0",
        f"  chat {name}",
        "  execute_tool researcher [Error guardrail] status=denied attempts=1 deny_reason=guardrail"
        " events=START,END",
        "    invoke_agent researcher [Error InputGuardrailTripwireTriggered] depth=1 attempt=1"
        " deny_reason=guardrail",
        f"  chat {name}",
    ]
    (delegation,) = view.delegations
    assert (delegation.status, delegation.deny_reason) == (c.STATUS_DENIED, c.DENY_GUARDRAIL)
    assert [f.status for f in view.failures] == [c.STATUS_DENIED]
    _assert_tokens(view, outcome)


@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_max_turns_exceeded_stops_the_run(traced: Traced, kind: ModelKind) -> None:
    looping = [calls(("lookup", {"topic": f"t{i}"}), input_tokens=100 + i, output_tokens=5) for i in range(3)]
    triage = Agent(name="triage", instructions="Front desk.", model=model(kind, *looping), tools=[lookup])
    outcome = await run(triage, "Refund?", max_turns=2)
    assert isinstance(outcome.error, MaxTurnsExceeded)
    _records, view = checked(traced)
    name = _model_name(kind)
    assert shape(traced) == [
        "invoke_agent triage [Error MaxTurnsExceeded] depth=0 stop_reason=max_turns",
        f"  chat {name}",
        "  execute_tool lookup",
        f"  chat {name}",
        "  execute_tool lookup",
    ]
    _assert_tokens(view, outcome)
    assert (view.total.input_tokens, view.nodes[0].own.rounds) == (201, 2)


@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_max_turns_in_a_subagent_cuts_the_delegation(traced: Traced, kind: ModelKind) -> None:
    looping = [calls(("lookup", {"topic": f"t{i}"}), input_tokens=50, output_tokens=5) for i in range(2)]
    researcher = Agent(
        name="researcher", instructions="Research.", model=model(kind, *looping), tools=[lookup]
    )
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            kind,
            calls(("researcher", {"input": "dig"}), input_tokens=400, output_tokens=30),
            reply("Could not finish the research.", 500, 12),
        ),
        tools=[researcher.as_tool(tool_name="researcher", tool_description="Research.", max_turns=1)],
    )
    outcome = await run(triage, "Refund?")
    assert outcome.error is None
    records, view = checked(traced)
    (delegation,) = view.delegations
    assert (delegation.status, delegation.stop_reason) == (c.STATUS_CUT, c.STOP_MAX_TURNS)
    (attempt,) = spans_named(records, "invoke_agent researcher")
    assert (
        attr(attempt, c.JANUX_STOP_REASON) == c.STOP_MAX_TURNS
        and attr(attempt, c.ERROR_TYPE) == "MaxTurnsExceeded"
    )
    _assert_tokens(view, outcome)
    assert _same(delegation.cost.cost, price("researcher", 50, 5))


@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_a_run_that_raised_keeps_what_it_spent(traced: Traced, kind: ModelKind) -> None:
    researcher = _researcher(kind, reply("Policy: 30 days.", 300, 8))
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            kind,
            calls(("researcher", {"input": "refund rules"}), input_tokens=400, output_tokens=30),
            failing(RuntimeError("model backend down")),
        ),
        tools=[researcher.as_tool(tool_name="researcher", tool_description="Research.")],
    )
    outcome = await run(triage, "Refund?")
    assert isinstance(outcome.error, RuntimeError)
    _records, view = checked(traced)
    name = _model_name(kind)
    assert shape(traced) == [
        "invoke_agent triage [Error RuntimeError] depth=0",
        f"  chat {name}",
        "  execute_tool researcher status=completed attempts=1 events=START,END",
        "    invoke_agent researcher depth=1 attempt=1",
        f"      chat {name}",
        # A failed Responses-API call returns no response, so nothing names its model.
        f"  chat {'unknown' if kind == 'responses' else name} [Error RuntimeError]",
    ]
    _assert_tokens(view, outcome)
    assert (view.total.input_tokens, view.total.output_tokens) == (700, 38)
    assert view.bill is not None and _same(
        view.bill.cost, price("triage", 400, 30) + price("researcher", 300, 8)
    )
