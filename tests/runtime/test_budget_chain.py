"""Issue 20, item 4: a subagent's `max_tokens` counts what its own delegations spend.

A budget exists so that a chain of delegations cannot outrun it: the rounds of every loop below a
subagent count against its line, the work below stops at the first round boundary after the line is
reached, and the cut is reported on the subagent whose line was crossed (the descendant's delegation
as cancelled).
"""

from __future__ import annotations

from janux.runtime import Agent, HandoffPolicy, Subagent
from janux.runtime.testing import ScriptedModel, call_tools, delegate, reply, tool_call
from tests.support.run_audit import RunAudit

from .helpers import end_events, tool_results


def _chain(worker_model: ScriptedModel, lead_model: ScriptedModel) -> tuple[Agent, ScriptedModel]:
    def search(query: str) -> str:
        return "hit"

    worker = Agent("worker", model=worker_model, tools=[search])
    lead = Agent(
        "lead",
        model=lead_model,
        subagents=[Subagent(agent=worker, max_turns=10)],
        policy=HandoffPolicy(max_depth=2),
    )
    model = ScriptedModel([call_tools(delegate("lead", "plan", id="L")), reply("final")])
    parent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=lead, max_turns=5, max_tokens=1000)],
        policy=HandoffPolicy(max_depth=2),
    )
    return parent, model


async def test_a_subagents_max_tokens_cuts_a_costly_delegation_below_it() -> None:
    search = call_tools(tool_call("search", {"query": "q"}), input_tokens=10_000, output_tokens=0)
    worker_model = ScriptedModel([search, search, search, search, search, reply("done")])
    lead_model = ScriptedModel(
        [call_tools(delegate("worker", "the big job"), input_tokens=10, output_tokens=10), reply("never")]
    )
    parent, model = _chain(worker_model, lead_model)
    audit = RunAudit()
    result = await parent.run("go", tracer_provider=audit.provider)
    assert result.text == "final"
    assert len(worker_model.calls) == 1  # the first round crossed lead's line: no second one
    assert len(lead_model.calls) == 1
    assert tool_results(model, 1)["L"] == {
        "subagent": "lead",
        "tool": "delegate.lead",
        "stopReason": "max_tokens",
    }
    ends = {e["subagent"]: e for e in end_events(result)}
    assert ends["lead"]["status"] == "cut" and ends["lead"]["stopReason"] == "max_tokens"
    assert ends["worker"]["status"] == "failed" and "cancelled" in ends["worker"]["error"]
    assert result.bill.input_tokens == 10_010  # every round made is billed, and no more were made
    assert audit.problems() == []
    lead_span = next(s for s in audit.named("invoke_agent lead"))
    assert lead_span.attributes["janux.stop_reason"] == "max_tokens"
    worker_span = next(s for s in audit.named("invoke_agent worker"))
    assert worker_span.attributes["error.type"] == "cancelled"


async def test_a_delegation_that_answers_within_one_round_still_counts_toward_the_callers_line() -> None:
    worker_model = ScriptedModel([reply("done", input_tokens=5000, output_tokens=0)])
    lead_model = ScriptedModel(
        [
            call_tools(delegate("worker", "one shot"), input_tokens=10, output_tokens=10),
            call_tools(delegate("worker", "again"), input_tokens=10, output_tokens=10),
            reply("never"),
        ]
    )
    parent, model = _chain(worker_model, lead_model)
    result = await parent.run("go")
    # lead's own rounds are 40 tokens; with the worker's 5000 its line of 1000 is crossed, so its
    # second round's tool calls are refused as a max_tokens cut.
    assert tool_results(model, 1)["L"]["stopReason"] == "max_tokens"
    assert len(worker_model.calls) == 1 and len(lead_model.calls) == 2
    assert result.bill.input_tokens == 5020
