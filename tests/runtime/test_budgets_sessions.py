"""Budget cuts by each line, REUSE_SESSION memory and serialization, NEW_SESSION freshness."""

from __future__ import annotations

from janux.runtime import Agent, HandoffPolicy, SessionMode, Subagent
from janux.runtime.testing import ScriptedModel, call_tools, delegate, fail, reply, tool_call

from .helpers import end_events, tool_results


def _searcher(model: ScriptedModel) -> Agent:
    def search(query: str) -> str:
        return "hit"

    return Agent("researcher", model=model, tools=[search])


def _parent(sub: Subagent) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([call_tools(delegate(sub.agent.name, "dig", id="c")), reply("final")])
    return Agent("p", model=model, subagents=[sub]), model


async def test_cut_by_max_turns() -> None:
    search = call_tools(tool_call("search", {"query": "q"}), input_tokens=10, output_tokens=2)
    sub_model = ScriptedModel([search, search, search])
    parent, model = _parent(Subagent(agent=_searcher(sub_model), max_turns=2))
    result = await parent.run("go")
    assert tool_results(model, 1)["c"] == {
        "subagent": "researcher",
        "tool": "delegate.researcher",
        "stopReason": "max_turns",
    }
    end = end_events(result)[0]
    assert end["status"] == "cut" and end["stopReason"] == "max_turns" and end["attempts"] == 1
    assert len(sub_model.calls) == 2 and sub_model.remaining == 1
    assert result.bill.input_tokens == 20  # the cut rounds are still billed


async def test_cut_by_max_tokens() -> None:
    sub_model = ScriptedModel(
        [
            call_tools(tool_call("search", {"query": "q"}), input_tokens=700, output_tokens=100),
            call_tools(tool_call("search", {"query": "q"}), input_tokens=900, output_tokens=100),
            reply("never"),
        ]
    )
    parent, model = _parent(Subagent(agent=_searcher(sub_model), max_turns=10, max_tokens=1500))
    result = await parent.run("go")
    assert tool_results(model, 1)["c"]["stopReason"] == "max_tokens"
    assert end_events(result)[0]["stopReason"] == "max_tokens"
    assert len(sub_model.calls) == 2  # 800 < 1500 allowed a second round; 1800 >= 1500 stopped the third


async def test_a_final_answer_within_budget_is_not_cut() -> None:
    sub_model = ScriptedModel([reply("answer", input_tokens=2000, output_tokens=10)])
    parent, model = _parent(Subagent(agent=_searcher(sub_model), max_turns=1, max_tokens=100))
    result = await parent.run("go")
    assert end_events(result)[0]["status"] == "completed"
    assert tool_results(model, 1)["c"]["text"] == "answer"


async def test_cut_by_max_time_cancels_the_subagent() -> None:
    # The reply would take a minute: the cut must cancel it. The bound only tells "cancelled" from
    # "waited" (the cut lands at ~30 ms), with a wide margin for a loaded machine.
    sub_model = ScriptedModel([reply("too late", delay=60.0)])
    parent, model = _parent(Subagent(agent=_searcher(sub_model), max_turns=3, max_ms=30))
    result = await parent.run("go")
    assert tool_results(model, 1)["c"]["stopReason"] == "max_time"
    end = end_events(result)[0]
    assert end["status"] == "cut" and end["stopReason"] == "max_time" and end["durationMillis"] < 10_000


async def test_the_turn_itself_stops_at_its_max_turns() -> None:
    def noop() -> str:
        return "ok"

    model = ScriptedModel([call_tools(tool_call("noop")), call_tools(tool_call("noop")), reply("never")])
    result = await Agent("p", model=model, tools=[noop], max_turns=2).run("go")
    assert result.stop_reason == "max_turns" and result.rounds == 2 and model.remaining == 1


async def test_reuse_session_remembers_earlier_delegations() -> None:
    sub_model = ScriptedModel([reply("first answer"), reply("second answer")])
    memo = Agent("memo", instructions="remember", model=sub_model)
    model = ScriptedModel(
        [call_tools(delegate("memo", "one")), call_tools(delegate("memo", "two")), reply("done")]
    )
    parent = Agent(
        "p", model=model, subagents=[Subagent(agent=memo, max_turns=1, session=SessionMode.REUSE_SESSION)]
    )
    result = await parent.run("go", thread_id="th")
    second = sub_model.calls[1].messages
    assert [(m.role, m.content) for m in second] == [
        ("system", "remember"),
        ("user", "one"),
        ("assistant", "first answer"),
        ("user", "two"),
    ]
    assert {e["sessionMode"] for e in result.handoff_events} == {"reuse_session"}


async def test_reuse_session_serializes_concurrent_calls() -> None:
    sub_model = ScriptedModel([reply("a", delay=0.03), reply("b", delay=0.03)])
    memo = Agent("memo", model=sub_model)
    model = ScriptedModel([call_tools(delegate("memo", "one"), delegate("memo", "two")), reply("done")])
    parent = Agent(
        "p", model=model, subagents=[Subagent(agent=memo, max_turns=1, session=SessionMode.REUSE_SESSION)]
    )
    await parent.run("go")
    assert sub_model.peak_concurrency == 1
    assert [m.content for m in sub_model.calls[1].messages if m.role != "system"] == ["one", "a", "two"]


async def test_reuse_session_persists_across_turns_of_a_thread_but_not_across_threads() -> None:
    sub_model = ScriptedModel([reply("x1"), reply("x2"), reply("y1")])
    memo = Agent("memo", model=sub_model)
    model = ScriptedModel(
        [
            call_tools(delegate("memo", "t1")),
            reply("ok"),
            call_tools(delegate("memo", "t2")),
            reply("ok"),
            call_tools(delegate("memo", "t3")),
            reply("ok"),
        ]
    )
    parent = Agent(
        "p", model=model, subagents=[Subagent(agent=memo, max_turns=1, session=SessionMode.REUSE_SESSION)]
    )
    await parent.run("turn 1", thread_id="A")
    await parent.run("turn 2", thread_id="A")
    await parent.run("turn 3", thread_id="B")
    assert [m.content for m in sub_model.calls[1].messages if m.role != "system"] == ["t1", "x1", "t2"]
    assert [m.content for m in sub_model.calls[2].messages if m.role != "system"] == ["t3"]


async def test_new_session_starts_fresh_every_time() -> None:
    sub_model = ScriptedModel([reply("a"), reply("b")])
    model = ScriptedModel([call_tools(delegate("w", "one")), call_tools(delegate("w", "two")), reply("done")])
    parent = Agent("p", model=model, subagents=[Subagent(agent=Agent("w", model=sub_model), max_turns=1)])
    await parent.run("go")
    assert [m.content for m in sub_model.calls[1].messages if m.role != "system"] == ["two"]


async def test_a_cut_is_final_even_with_retries_left_and_budgets_bound_each_attempt() -> None:
    search = call_tools(tool_call("search", {"query": "q"}), input_tokens=600, output_tokens=0)
    # Attempt 1: one search round (600 tokens), then the model fails. Attempt 2 starts with a fresh
    # 1000-token budget: one search round (600), a second (1200 >= 1000), then it is cut.
    sub_model = ScriptedModel([search, fail("flaky"), search, search, reply("never")])
    model = ScriptedModel([call_tools(delegate("researcher", "dig", id="c")), reply("final")])
    parent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=_searcher(sub_model), max_turns=5, max_tokens=1000)],
        policy=HandoffPolicy(max_retries=3),
    )
    result = await parent.run("go")
    end = end_events(result)[0]
    assert end["status"] == "cut" and end["stopReason"] == "max_tokens" and end["attempts"] == 2
    assert sub_model.remaining == 1  # no third attempt after the cut
    assert result.bill.input_tokens == 600 * 3  # every round of both attempts is billed
