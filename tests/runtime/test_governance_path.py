"""Issue 11, governance: the path's rules compose, refused transfers are free, the tool list is what
may be called, a stop-on-denial mode, one fallback handler, and delegate arguments checked."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.runtime import (
    Agent,
    DefinitionError,
    DelegationRequest,
    HandoffError,
    HandoffPolicy,
    HandoffRecord,
    OnFailure,
    Subagent,
    function_tool,
    handoff_events_of,
)
from janux.runtime.testing import ScriptedModel, call_tools, delegate, fail, reply, tool_call, transfer
from janux.tracing.conventions import ERROR_TYPE

from .helpers import end_events, leaf, tool_results


def _chain(
    entry_policy: HandoffPolicy, child_policy: HandoffPolicy, *calls: Any
) -> tuple[Agent, dict[str, Any]]:
    """entry -> child (depth 1), whose one round delegates `calls` to leaves a, b, c, d (depth 2)."""
    leaves = {name: ScriptedModel([reply(f"{name} done")]) for name in "abcd"}
    child_model = ScriptedModel([call_tools(*calls), reply("child done")])
    child = Agent(
        "child",
        model=child_model,
        subagents=[Subagent(agent=leaf(name, model), max_turns=1) for name, model in leaves.items()],
        policy=child_policy,
    )
    entry_model = ScriptedModel([call_tools(delegate("child", "go", id="top")), reply("entry done")])
    entry = Agent(
        "entry", model=entry_model, subagents=[Subagent(agent=child, max_turns=2)], policy=entry_policy
    )
    return entry, {"child": child_model, **leaves}


def _leaf_outcomes(result: Any) -> dict[str, tuple[str, str | None]]:
    return {e["subagent"]: (e["status"], e["denyReason"]) for e in end_events(result) if e["depth"] == 2}


# -- 1. the entry agent caps the whole turn ---------------------------------------------------------


async def test_a_subagents_looser_max_depth_never_lifts_the_entry_agents() -> None:
    entry, models = _chain(
        HandoffPolicy(max_depth=1), HandoffPolicy(max_depth=5), delegate("a", "deeper", id="d")
    )
    result = await entry.run("go")
    assert _leaf_outcomes(result) == {"a": ("denied", "max_depth")}
    assert tool_results(models["child"], 1)["d"]["detail"] == "denied by max_depth 2 exceeds 1"
    assert models["a"].calls == []


async def test_a_subagents_disabled_policy_does_not_switch_its_callers_rules_off() -> None:
    entry, models = _chain(
        HandoffPolicy(max_depth=1), HandoffPolicy(enabled=False), delegate("a", "x", id="d")
    )
    result = await entry.run("go")
    assert _leaf_outcomes(result) == {"a": ("denied", "max_depth")} and models["a"].calls == []


async def test_a_subagent_can_tighten_the_depth_its_caller_allows() -> None:
    entry, _ = _chain(HandoffPolicy(max_depth=3), HandoffPolicy(max_depth=1), delegate("a", "x"))
    result = await entry.run("go")
    assert _leaf_outcomes(result) == {"a": ("denied", "max_depth")}


async def test_allow_lists_intersect_and_deny_lists_add_up_down_the_path() -> None:
    entry_policy = HandoffPolicy(
        max_depth=2,
        allowed_tools=["delegate.child", "delegate.a", "delegate.b", "delegate.d"],
        denied_tools=["delegate.d"],
    )
    child_policy = HandoffPolicy(max_depth=2, allowed_tools=["delegate.a", "delegate.c", "delegate.d"])
    calls = [delegate(name, "x", id=name) for name in "abcd"]
    entry, models = _chain(entry_policy, child_policy, *calls)
    result = await entry.run("go")
    assert _leaf_outcomes(result) == {
        "a": ("completed", None),
        "b": ("denied", "allowed_tools"),  # not on the child's own allow-list
        "c": ("denied", "allowed_tools"),  # not on the entry agent's allow-list
        "d": ("denied", "denied_tools"),  # on both allow-lists, but on the entry agent's deny-list
    }
    assert [m.calls != [] for m in (models["a"], models["b"], models["c"], models["d"])] == [
        True,
        False,
        False,
        False,
    ]


# -- 2. a refused transfer does not use up the turn's transfer ---------------------------------------


def _desk(front_model: ScriptedModel, **front_options: Any) -> tuple[Agent, ScriptedModel, ScriptedModel]:
    def refuse_refund_talk(text: str) -> str | None:
        return "billing only takes invoices" if "refund" in text else None

    billing_model = ScriptedModel([reply("billing here")])
    sales_model = ScriptedModel([reply("sales here")])
    billing = Agent("billing", model=billing_model, input_guardrails=[refuse_refund_talk])
    sales = Agent("sales", model=sales_model)
    front = Agent("front", model=front_model, handoffs=[billing, sales], **front_options)
    return front, billing_model, sales_model


async def test_a_handoff_denied_by_policy_leaves_a_later_round_free_to_transfer() -> None:
    front_model = ScriptedModel(
        [call_tools(transfer("billing", id="b")), call_tools(transfer("sales", id="s"))]
    )
    front, billing_model, _ = _desk(front_model, policy=HandoffPolicy(denied_tools=["handoff.billing"]))
    result = await front.run("an invoice question")
    assert result.agent == "sales" and result.text == "sales here"
    assert [(e["subagent"], e["status"], e["denyReason"]) for e in end_events(result)] == [
        ("billing", "denied", "denied_tools"),
        ("sales", "completed", None),
    ]
    assert billing_model.calls == []


async def test_a_handoff_refused_by_the_targets_guardrail_leaves_the_round_free_to_transfer() -> None:
    front_model = ScriptedModel([call_tools(transfer("billing", id="b"), transfer("sales", id="s"))])
    front, billing_model, sales_model = _desk(front_model)
    result = await front.run("I want a refund")
    assert result.agent == "sales" and len(sales_model.calls) == 1 and billing_model.calls == []
    assert [(e["subagent"], e["status"], e["denyReason"]) for e in end_events(result)] == [
        ("billing", "denied", "guardrail"),
        ("sales", "completed", None),
    ]
    first_round = {m.tool_call_id: m.content for m in sales_model.calls[0].messages if m.role == "tool"}
    assert first_round == {}  # tool scaffolding never reaches the target


async def test_only_a_transfer_that_happens_counts_and_the_next_one_is_ignored() -> None:
    front_model = ScriptedModel([call_tools(transfer("sales", id="s"), transfer("billing", id="b"))])
    front, billing_model, _ = _desk(front_model)
    result = await front.run("an invoice question")
    assert result.agent == "sales"
    assert [(e["subagent"], e["status"]) for e in end_events(result)] == [
        ("sales", "completed"),
        ("billing", "failed"),
    ]
    assert billing_model.calls == []


# -- 3. never offer what is always denied ----------------------------------------------------------


async def test_a_subagent_that_may_not_delegate_further_is_not_shown_delegate_tools() -> None:
    def lookup() -> str:
        return "x"

    for entry_depth, child_depth, shown in [(1, 1, ["lookup"]), (2, 2, ["lookup", "delegate.a"])]:
        child_model = ScriptedModel([reply("child done")])
        child = Agent(
            "child",
            model=child_model,
            tools=[lookup],
            subagents=[Subagent(agent=leaf("a", ScriptedModel([])), max_turns=1)],
            policy=HandoffPolicy(max_depth=child_depth),
        )
        entry_model = ScriptedModel([call_tools(delegate("child", "go")), reply("done")])
        entry = Agent(
            "entry",
            model=entry_model,
            subagents=[Subagent(agent=child, max_turns=1)],
            policy=HandoffPolicy(max_depth=entry_depth),
        )
        await entry.run("go")
        assert child_model.calls[0].tool_names == shown


async def test_tools_the_policy_always_denies_are_not_shown_and_still_denied_when_called() -> None:
    front_model = ScriptedModel(
        [call_tools(transfer("billing", id="b"), delegate("worker", "x", id="w")), reply("ok")]
    )
    worker_model = ScriptedModel([])
    front = Agent(
        "front",
        model=front_model,
        handoffs=[Agent("billing", model=ScriptedModel([])), Agent("sales", model=ScriptedModel([]))],
        subagents=[
            Subagent(agent=leaf("worker", worker_model), max_turns=1),
            Subagent(agent=leaf("helper", ScriptedModel([])), max_turns=1),
        ],
        policy=HandoffPolicy(allowed_tools=["handoff.sales", "delegate.helper"]),
    )
    result = await front.run("hi")
    assert front_model.calls[0].tool_names == ["delegate.helper", "handoff.sales"]
    # A model that calls a hidden tool anyway is told which rule refused it.
    assert {e["subagent"]: e["denyReason"] for e in end_events(result)} == {
        "billing": "allowed_tools",
        "worker": "allowed_tools",
    }
    assert worker_model.calls == []


async def test_a_denied_delegate_tool_a_fallback_serves_stays_on_the_tool_list() -> None:
    @function_tool(name="delegate.worker")
    def cached(task: str) -> str:
        """Cached answers."""
        return f"cached: {task}"

    model = ScriptedModel([call_tools(delegate("worker", "q", id="w")), reply("ok")])
    front = Agent(
        "front",
        model=model,
        subagents=[Subagent(agent=leaf("worker", ScriptedModel([])), max_turns=1)],
        policy=HandoffPolicy(denied_tools=["delegate.worker"], on_denied=OnFailure.FALLBACK_TO_PRIMARY),
        fallback_tools=[cached],
    )
    await front.run("hi")
    assert model.calls[0].tool_names == ["delegate.worker"]
    assert tool_results(model, 1)["w"] == "cached: q"


# -- 4. a stop on denial, and one fallback handler -------------------------------------------------


def _traced() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def test_on_denied_raise_stops_the_run_with_the_handoff_record() -> None:
    provider, exporter = _traced()
    worker_model = ScriptedModel([])
    model = ScriptedModel([call_tools(delegate("worker", "x", id="w")), reply("never")])
    front = Agent(
        "front",
        model=model,
        subagents=[Subagent(agent=leaf("worker", worker_model), max_turns=1)],
        policy=HandoffPolicy(denied_tools=["delegate.worker"], on_denied=OnFailure.RAISE),
    )
    with pytest.raises(HandoffError) as stopped:
        await front.run("hi", tracer_provider=provider)
    record = stopped.value.record
    assert isinstance(record, HandoffRecord)
    assert (record.status, record.deny_reason, record.target, record.attempts) == (
        "denied",
        "denied_tools",
        "worker",
        0,
    )
    assert stopped.value.error_type == "handoff_denied" and "denied_tools" in str(stopped.value)
    assert [e["event"] for e in handoff_events_of(stopped.value)] == ["HANDOFF_START", "HANDOFF_END"]
    assert len(model.calls) == 1 and worker_model.calls == []
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert spans["invoke_agent front"].attributes[ERROR_TYPE] == "handoff_denied"
    assert "execute_tool delegate.worker" in spans  # ended before the error was raised


async def test_on_error_raise_stops_the_run_after_the_last_attempt() -> None:
    worker_model = ScriptedModel([fail("boom 1"), fail("boom 2")])
    model = ScriptedModel([call_tools(delegate("worker", "x")), reply("never")])
    front = Agent(
        "front",
        model=model,
        subagents=[Subagent(agent=leaf("worker", worker_model), max_turns=1)],
        policy=HandoffPolicy(max_retries=1, on_error=OnFailure.RAISE),
    )
    with pytest.raises(HandoffError) as stopped:
        await front.run("hi")
    assert (stopped.value.record.status, stopped.value.record.attempts) == ("failed", 2)
    assert stopped.value.error_type == "handoff_failed"


async def test_a_stop_deep_in_the_turn_reaches_run_with_every_handoff_paired() -> None:
    leaf_model = ScriptedModel([])
    child_model = ScriptedModel([call_tools(delegate("a", "deeper")), reply("never")])
    child = Agent(
        "child",
        model=child_model,
        subagents=[Subagent(agent=leaf("a", leaf_model), max_turns=1)],
        policy=HandoffPolicy(on_denied=OnFailure.RAISE),  # depth 2 exceeds max_depth 1
    )
    entry_model = ScriptedModel([call_tools(delegate("child", "go")), reply("never")])
    entry = Agent(
        "entry",
        model=entry_model,
        subagents=[Subagent(agent=child, max_turns=2)],
        policy=HandoffPolicy(max_retries=2),
    )
    with pytest.raises(HandoffError) as stopped:
        await entry.run("go")
    assert (stopped.value.record.target, stopped.value.record.deny_reason) == ("a", "max_depth")
    events = handoff_events_of(stopped.value)
    assert [(e["event"], e["subagent"], e["status"]) for e in events] == [
        ("HANDOFF_START", "child", "starting"),
        ("HANDOFF_START", "a", "starting"),
        ("HANDOFF_END", "a", "denied"),
        ("HANDOFF_END", "child", "failed"),  # closed on the way out, never retried
    ]
    assert len(child_model.calls) == 1 and leaf_model.calls == []


async def test_on_denied_raise_also_stops_on_a_denied_transfer() -> None:
    front = Agent(
        "front",
        model=ScriptedModel([call_tools(transfer("billing"))]),
        handoffs=[Agent("billing", model=ScriptedModel([]))],
        policy=HandoffPolicy(denied_tools=["handoff.*"], on_denied=OnFailure.RAISE),
    )
    with pytest.raises(HandoffError) as stopped:
        await front.run("hi")
    assert (stopped.value.record.kind, stopped.value.record.deny_reason) == ("transfer", "denied_tools")


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_one_fallback_handler_serves_every_delegate_tool(asynchronous: bool) -> None:
    served: list[tuple[HandoffRecord, dict[str, Any]]] = []

    def handler(record: HandoffRecord, arguments: Any) -> str:
        served.append((record, dict(arguments)))
        return f"primary answer to {arguments['task']}"

    async def async_handler(record: HandoffRecord, arguments: Any) -> str:
        return handler(record, arguments)

    model = ScriptedModel(
        [
            call_tools(delegate("flaky", "q1", id="f"), delegate("blocked", "q2", context="c", id="b")),
            reply("ok"),
        ]
    )
    front = Agent(
        "front",
        model=model,
        subagents=[
            Subagent(agent=leaf("flaky", ScriptedModel([fail("upstream 500")])), max_turns=1),
            Subagent(agent=leaf("blocked", ScriptedModel([])), max_turns=1),
        ],
        policy=HandoffPolicy(
            denied_tools=["delegate.blocked"],
            on_denied=OnFailure.FALLBACK_TO_PRIMARY,
            on_error=OnFailure.FALLBACK_TO_PRIMARY,
        ),
        fallback_handler=async_handler if asynchronous else handler,
    )
    result = await front.run("hi")
    assert tool_results(model, 1) == {"f": "primary answer to q1", "b": "primary answer to q2"}
    records = {record.target: (record.status, record.deny_reason, record.attempts) for record, _ in served}
    assert records == {"flaky": ("failed", None, 1), "blocked": ("denied", "denied_tools", 0)}
    assert sorted(arguments["task"] for _, arguments in served) == ["q1", "q2"]
    assert next(arguments for _, arguments in served if arguments["task"] == "q2")["context"] == "c"
    assert {e["subagent"]: e["status"] for e in end_events(result)} == {
        "flaky": "fallback",
        "blocked": "fallback",
    }


def test_a_fallback_tool_that_matches_no_delegate_tool_is_refused_at_definition() -> None:
    @function_tool(name="delegate.wroker")
    def typo(task: str) -> str:
        """Misnamed."""
        return task

    with pytest.raises(
        DefinitionError, match=r"fallback_tools\.0: 'delegate\.wroker' matches no delegate tool"
    ):
        Agent(
            "front",
            subagents=[Subagent(agent=leaf("worker", ScriptedModel([])), max_turns=1)],
            policy=HandoffPolicy(on_error=OnFailure.FALLBACK_TO_PRIMARY),
            fallback_tools=[typo],
        )


# -- 5. delegate arguments are checked against the schema ------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "detail"),
    [
        ("{}", "task: Field required"),
        ('{"context": "only context"}', "task: Field required"),
        ('{"task": 42}', "task: Input should be a valid string, got number"),
        ('{"task": ["a"]}', "task: Input should be a valid string, got array"),
        ("plain words", "arguments are not valid JSON"),
    ],
)
async def test_a_delegate_call_outside_its_schema_is_invalid_arguments(arguments: str, detail: str) -> None:
    worker_model = ScriptedModel([])
    model = ScriptedModel([call_tools(tool_call("delegate.worker", arguments, id="w")), reply("ok")])
    front = Agent(
        "front",
        model=model,
        subagents=[Subagent(agent=leaf("worker", worker_model), max_turns=1)],
        policy=HandoffPolicy(on_error=OnFailure.RAISE),  # the model's slip is its to fix, never a stop
    )
    result = await front.run("hi")
    payload = tool_results(model, 1)["w"]
    assert payload["error"] == "invalid_arguments" and payload["detail"].startswith(detail)
    assert worker_model.calls == [] and result.text == "ok"
    assert [(e["event"], e["status"]) for e in result.handoff_events] == [
        ("HANDOFF_START", "starting"),
        ("HANDOFF_END", "failed"),
    ]


async def test_the_input_filter_sees_the_parsed_arguments_and_the_call_id() -> None:
    seen: list[DelegationRequest] = []

    def scrub(request: DelegationRequest) -> str | None:
        seen.append(request)
        return None

    worker_model = ScriptedModel([reply("done")])
    call = tool_call("delegate.worker", {"task": "t", "context": "c", "priority": "high"}, id="call-7")
    front = Agent(
        "front",
        model=ScriptedModel([call_tools(call), reply("ok")]),
        subagents=[Subagent(agent=leaf("worker", worker_model), max_turns=1)],
        policy=HandoffPolicy(input_filter=scrub),
    )
    await front.run("hi")
    [request] = seen
    assert request.call_id == "call-7"
    assert dict(request.arguments) == {"task": "t", "context": "c", "priority": "high"}
    assert request.task == "t\n\nContext:\nc" and worker_model.calls[0].last_user == request.task
