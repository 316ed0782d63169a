"""Handoffs: what a transfer keeps, drops and swaps; first-only; later turns; threads across restarts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from janux.runtime import Agent, HandoffPolicy, Subagent, ToolFilter, UnknownAgentError
from janux.runtime.testing import ScriptedModel, call_tools, delegate, reply, tool_call, transfer
from janux.runtime.threads import SqliteThreadStore
from tests.support.paths import REPO_ROOT

from .helpers import end_events, tool_results


def _lookup() -> str:
    return "invoice 7"


def _desk(
    front_model: ScriptedModel, billing_model: ScriptedModel | str | None, **options: object
) -> tuple[Agent, Agent]:
    def lookup_invoice() -> str:
        return _lookup()

    billing = Agent(
        "billing",
        instructions="You are billing.",
        model=billing_model,
        tools=[lookup_invoice],
        tool_filter=ToolFilter(include=["lookup_*"]),
    )

    def search() -> str:
        return "found"

    front = Agent(
        "triage",
        instructions="You are the front desk.",
        model=front_model,
        tools=[search],
        handoffs=[billing],
        **options,  # type: ignore[arg-type]
    )
    return front, billing


async def test_transfer_keeps_text_drops_scaffolding_and_swaps_prompt_tools_and_model() -> None:
    front_model = ScriptedModel(
        [
            call_tools(tool_call("search", id="s"), text="Let me look."),
            call_tools(transfer("billing", "refund request", id="h")),
        ]
    )
    billing_model = ScriptedModel([reply("Refund issued.", input_tokens=5, output_tokens=2)])
    front, _ = _desk(front_model, billing_model)
    result = await front.run("I was charged twice", thread_id="t")

    assert result.text == "Refund issued." and result.agent == "billing"
    assert front_model.calls[0].tool_names == ["search", "handoff.billing"]
    seen = billing_model.calls[0]
    assert seen.system.startswith("You are billing.")
    assert "transferred to you by triage" in seen.system and "refund request" in seen.system
    assert [(m.role, m.content) for m in seen.messages[1:]] == [
        ("user", "I was charged twice"),
        ("assistant", "Let me look."),
    ]
    assert all(not m.tool_calls and m.role != "tool" for m in seen.messages)
    assert seen.tool_names == ["lookup_invoice"]
    end = end_events(result)[0]
    assert end["kind"] == "transfer" and end["status"] == "completed" and end["subagent"] == "billing"


async def test_target_without_a_model_keeps_the_current_one() -> None:
    front_model = ScriptedModel([call_tools(transfer("billing")), reply("billing via the front model")])
    front, _ = _desk(front_model, None)
    result = await front.run("hi")
    assert result.text == "billing via the front model" and result.agent == "billing"
    assert front_model.calls[1].system.startswith("You are billing.")


async def test_unresolvable_target_model_is_handoff_model_unavailable() -> None:
    front_model = ScriptedModel([call_tools(transfer("billing", id="h")), reply("still front desk")])
    front, _ = _desk(front_model, "gpt-unknown")
    result = await front.run("hi")
    assert result.agent == "triage"
    assert tool_results(front_model, 1)["h"]["error"] == "handoff_model_unavailable"
    assert end_events(result)[0]["status"] == "failed"


async def test_named_target_model_resolves_through_the_registry() -> None:
    billing_model = ScriptedModel([reply("from registry")])
    front_model = ScriptedModel([call_tools(transfer("billing"))])
    front, _ = _desk(front_model, "billing-model")
    result = await front.run("hi", models={"billing-model": billing_model})
    assert result.text == "from registry"


async def test_only_the_first_handoff_of_a_turn_is_taken() -> None:
    other = Agent("sales", instructions="You are sales.")
    billing_model = ScriptedModel([reply("billing here")])
    front_model = ScriptedModel([call_tools(transfer("billing", id="h1"), transfer("sales", id="h2"))])
    front, _ = _desk(front_model, billing_model)
    front = Agent("triage", model=front_model, handoffs=[front.transfer_targets()["billing"], other])
    result = await front.run("hi")
    assert result.agent == "billing"
    ends = end_events(result)
    assert [(e["subagent"], e["status"]) for e in ends] == [("billing", "completed"), ("sales", "failed")]
    assert "ignored" in ends[1]["error"]


async def test_a_target_does_not_delegate() -> None:
    helper_model = ScriptedModel([])
    billing_model = ScriptedModel([call_tools(delegate("helper", "x", id="d")), reply("done alone")])
    billing = Agent(
        "billing",
        model=billing_model,
        subagents=[Subagent(agent=Agent("helper", model=helper_model), max_turns=1)],
    )
    front_model = ScriptedModel([call_tools(transfer("billing"))])
    front = Agent("triage", model=front_model, handoffs=[billing])
    result = await front.run("hi")
    assert billing_model.calls[0].tool_names == []
    assert tool_results(billing_model, 1)["d"]["error"] == "tool_forbidden"
    assert helper_model.calls == [] and result.text == "done alone"


async def test_later_turns_start_as_the_holder_and_unknown_agents_fail() -> None:
    billing_model = ScriptedModel([reply("refund issued"), reply("anything else?"), reply("forced")])
    front_model = ScriptedModel([call_tools(transfer("billing")), reply("front again")])
    front, _ = _desk(front_model, billing_model)
    await front.run("charged twice", thread_id="t")
    second = await front.run("thanks", thread_id="t")
    assert second.agent == "billing" and second.text == "anything else?"
    assert [m.content for m in billing_model.calls[1].messages[1:]] == [
        "charged twice",
        "refund issued",
        "thanks",
    ]
    assert billing_model.calls[1].system == "You are billing."
    explicit = await front.run("back to front", thread_id="t", agent="triage")
    assert explicit.agent == "triage" and explicit.text == "front again"
    with pytest.raises(
        UnknownAgentError, match=r"unknown agent 'nobody' \(known: billing, triage\)"
    ) as raised:
        await front.run("hi", thread_id="t", agent="nobody")
    assert raised.value.error_type == "unknown_agent"


async def test_sqlite_thread_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    with SqliteThreadStore(path) as store:
        billing_model = ScriptedModel([reply("refund issued")])
        front, _ = _desk(ScriptedModel([call_tools(transfer("billing"))]), billing_model, thread_store=store)
        await front.run("charged twice", thread_id="t")
    with SqliteThreadStore(path) as store:
        billing_model = ScriptedModel([reply("welcome back")])
        front, _ = _desk(ScriptedModel([]), billing_model, thread_store=store)
        result = await front.run("hello again", thread_id="t")
    assert result.agent == "billing"
    assert [m.content for m in billing_model.calls[0].messages[1:]] == [
        "charged twice",
        "refund issued",
        "hello again",
    ]


async def test_a_turn_run_with_agent_billing_starts_as_billing_even_on_a_new_thread() -> None:
    front_model = ScriptedModel([])
    billing_model = ScriptedModel([reply("billing from the start")])
    front, _ = _desk(front_model, billing_model)
    result = await front.run("refund please", thread_id="fresh", agent="billing")
    assert result.agent == "billing" and result.text == "billing from the start"
    assert billing_model.calls[0].system == "You are billing."
    assert billing_model.calls[0].tool_names == ["lookup_invoice"]
    assert front_model.calls == []
    # ... and the thread now belongs to billing.
    billing_model.add(reply("still billing"))
    assert (await front.run("and?", thread_id="fresh")).agent == "billing"


async def test_the_target_surface_is_its_own_filter_even_for_tools_the_front_desk_hides() -> None:
    ran: list[str] = []

    def refund(invoice: str) -> str:
        ran.append(invoice)
        return "refunded"

    billing_model = ScriptedModel(
        [call_tools(tool_call("refund", {"invoice": "INV-1"})), reply("Refund issued.")]
    )
    billing = Agent("billing", instructions="You are billing.", model=billing_model, tools=[refund])
    front_model = ScriptedModel(
        [call_tools(tool_call("refund", {"invoice": "X"}, id="r"), transfer("billing"))]
    )
    front = Agent(
        "triage",
        model=front_model,
        tools=[refund],
        handoffs=[billing],
        tool_filter=ToolFilter(exclude=["refund"]),  # the front desk may not refund
    )
    result = await front.run("charged twice")
    assert front_model.calls[0].tool_names == ["handoff.billing"]
    assert billing_model.calls[0].tool_names == ["refund"]
    assert ran == ["INV-1"]  # the front desk's forbidden call never ran; billing's did
    assert result.text == "Refund issued."


async def test_a_handoff_that_fails_leaves_the_turn_free_for_the_next_one_in_the_round() -> None:
    sales_model = ScriptedModel([reply("sales here")])
    sales = Agent("sales", instructions="You are sales.", model=sales_model)
    front_model = ScriptedModel([call_tools(transfer("billing", id="h1"), transfer("sales", id="h2"))])
    front, billing = _desk(front_model, "gpt-unknown")  # the first handoff fails: its model is unknown
    front = Agent("triage", model=front_model, handoffs=[billing, sales])
    result = await front.run("hi")
    assert result.agent == "sales" and result.text == "sales here"
    assert [(e["subagent"], e["status"]) for e in end_events(result)] == [
        ("billing", "failed"),
        ("sales", "completed"),
    ]
    assert "transferred to you by triage" in sales_model.calls[0].system


_DESK_PROCESS = """
import asyncio, json, sys
from janux.runtime import Agent
from janux.runtime.testing import ScriptedModel, call_tools, reply, transfer
from janux.runtime.threads import SqliteThreadStore

db, step = sys.argv[1], sys.argv[2]
billing_model = ScriptedModel([reply("refund issued" if step == "1" else "welcome back")])
billing = Agent("billing", instructions="You are billing.", model=billing_model)
front_model = ScriptedModel([call_tools(transfer("billing"))] if step == "1" else [])

async def main():
    async with SqliteThreadStore(db) as store:
        front = Agent("triage", model=front_model, handoffs=[billing], thread_store=store)
        result = await front.run("charged twice" if step == "1" else "hello again", thread_id="t")
    seen = [m.content for m in billing_model.calls[0].messages[1:]]
    print(json.dumps({"agent": result.agent, "text": result.text, "billing_saw": seen}))

asyncio.run(main())
"""


def test_a_thread_survives_a_real_process_restart(tmp_path: Path) -> None:
    root = REPO_ROOT
    db = tmp_path / "threads.db"

    def run(step: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", _DESK_PROCESS, str(db), step],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        parsed: dict[str, object] = json.loads(done.stdout)
        return parsed

    assert run("1") == {"agent": "billing", "text": "refund issued", "billing_saw": ["charged twice"]}
    assert run("2") == {
        "agent": "billing",
        "text": "welcome back",
        "billing_saw": ["charged twice", "refund issued", "hello again"],
    }


async def test_a_subagents_forbidden_handoff_call_does_not_use_up_the_turns_transfer() -> None:
    sales_model = ScriptedModel([])
    sales = Agent("sales", instructions="You are sales.", model=sales_model)
    helper_model = ScriptedModel([call_tools(transfer("sales", id="x")), reply("helper done")])
    helper = Agent("helper", model=helper_model, handoffs=[sales])  # a subagent never transfers
    billing_model = ScriptedModel([reply("billing here")])
    billing = Agent("billing", instructions="You are billing.", model=billing_model)
    front_model = ScriptedModel([call_tools(delegate("helper", "t")), call_tools(transfer("billing"))])
    front = Agent(
        "triage", model=front_model, subagents=[Subagent(agent=helper, max_turns=2)], handoffs=[billing]
    )
    result = await front.run("hi")
    assert helper_model.calls[0].tool_names == []
    assert tool_results(helper_model, 1)["x"]["error"] == "tool_forbidden" and sales_model.calls == []
    assert result.agent == "billing" and result.text == "billing here"
    assert [(e["subagent"], e["status"]) for e in end_events(result)] == [
        ("sales", "denied"),
        ("helper", "completed"),
        ("billing", "completed"),
    ]


async def test_a_target_transfers_on_and_a_later_turn_starts_as_the_last_holder() -> None:
    sales_model = ScriptedModel([reply("sales here"), reply("sales again")])
    sales = Agent("sales", instructions="You are sales.", model=sales_model)
    billing_model = ScriptedModel([call_tools(transfer("sales", "a quote", id="s1"))])
    billing = Agent("billing", instructions="You are billing.", model=billing_model, handoffs=[sales])
    front = Agent("triage", model=ScriptedModel([call_tools(transfer("billing"))]), handoffs=[billing])
    first = await front.run("hi", thread_id="t")  # triage -> billing -> sales in one turn
    assert (first.agent, first.text) == ("sales", "sales here")
    assert billing_model.calls[0].tool_names == ["handoff.sales"]
    assert sales_model.calls[0].system == (
        "You are sales.\n\nThe conversation was transferred to you by billing. Reason: a quote"
    )
    assert [(e["subagent"], e["status"]) for e in end_events(first)] == [
        ("billing", "completed"),
        ("sales", "completed"),
    ]
    second = await front.run("again", thread_id="t")  # the holder two transfers away starts it
    assert (second.agent, second.text) == ("sales", "sales again")
    with pytest.raises(UnknownAgentError, match=r"known: billing, sales, triage"):
        await front.run("hi", thread_id="t", agent="nobody")


async def test_max_transfers_bounds_a_chain_of_specialists() -> None:
    last = Agent("d", model=ScriptedModel([]))
    c_model = ScriptedModel([call_tools(transfer("d", id="to-d")), reply("c answers")])
    chain = Agent("c", model=c_model, handoffs=[last])
    for name, target in (("b", "c"), ("a", "b")):
        chain = Agent(name, model=ScriptedModel([call_tools(transfer(target))]), handoffs=[chain])
    front = Agent("front", model=ScriptedModel([call_tools(transfer("a"))]), handoffs=[chain])
    result = await front.run("hi")
    ends = [(e["subagent"], e["status"], e.get("denyReason")) for e in end_events(result)]
    # The default max_transfers (3): front -> a -> b -> c, then c's call to d is denied.
    assert ends == [
        ("a", "completed", None),
        ("b", "completed", None),
        ("c", "completed", None),
        ("d", "denied", "max_transfers"),
    ]
    assert "the turn already made 3 of 3" in tool_results(c_model, 1)["to-d"]["detail"]
    assert (result.agent, result.text) == ("c", "c answers")


async def test_max_transfers_is_the_smallest_on_the_holders_path() -> None:
    sales = Agent("sales", model=ScriptedModel([reply("sales here")]))
    billing_model = ScriptedModel([call_tools(transfer("sales", id="s")), reply("billing keeps it")])
    billing = Agent("billing", model=billing_model, handoffs=[sales])
    front = Agent(
        "triage",
        model=ScriptedModel([call_tools(transfer("billing"))]),
        handoffs=[billing],
        policy=HandoffPolicy(max_transfers=1),
    )
    result = await front.run("hi")
    assert (result.agent, result.text) == ("billing", "billing keeps it")
    assert tool_results(billing_model, 1)["s"]["error"] == "handoff_denied"
    assert [e.get("denyReason") for e in end_events(result)] == [None, "max_transfers"]


async def test_a_hidden_handoff_called_first_in_a_round_does_not_shadow_the_allowed_one() -> None:
    sales = Agent("sales", instructions="You are sales.", model=ScriptedModel([]))
    billing_model = ScriptedModel([reply("billing here")])
    billing = Agent("billing", instructions="You are billing.", model=billing_model)
    front_model = ScriptedModel([call_tools(transfer("sales", id="s"), transfer("billing", id="b"))])
    front = Agent(
        "triage",
        model=front_model,
        handoffs=[sales, billing],
        tool_filter=ToolFilter(exclude=["handoff.sales"]),
    )
    result = await front.run("hi")
    assert result.agent == "billing"
    assert [(e["subagent"], e["status"], e["denyReason"]) for e in end_events(result)] == [
        ("sales", "denied", "tool_forbidden"),
        ("billing", "completed", None),
    ]
