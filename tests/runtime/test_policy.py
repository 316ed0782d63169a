"""HandoffPolicy: retries, timeouts that really cancel, fallback, input filter, deny rules, enabled=False."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from janux.runtime import (
    Agent,
    DelegationRequest,
    HandoffPolicy,
    Model,
    OnFailure,
    Subagent,
    ToolFilter,
    function_tool,
)
from janux.runtime.testing import ScriptedModel, call_tools, delegate, fail, reply, tool_call
from janux.tracing.conventions import ERROR_TYPE

from .helpers import end_events, leaf, tool_results


def _parent(sub: Agent, policy: HandoffPolicy, **options: object) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([call_tools(delegate(sub.name, "the task", id="c")), reply("final")])
    agent = Agent("p", model=model, subagents=[Subagent(agent=sub, max_turns=2)], policy=policy, **options)  # type: ignore[arg-type]
    return agent, model


async def test_retry_succeeds_on_the_second_attempt() -> None:
    sub_model = ScriptedModel([fail("503 from upstream", status_code=503), reply("second time lucky")])
    parent, model = _parent(leaf("worker", sub_model), HandoffPolicy(max_retries=2))
    result = await parent.run("go")
    end = end_events(result)[0]
    assert end["status"] == "completed" and end["attempts"] == 2
    assert tool_results(model, 1)["c"]["text"] == "second time lucky"
    sub_model.assert_complete()


async def test_all_attempts_failing_reports_every_attempt() -> None:
    sub_model = ScriptedModel([fail("boom 1"), fail("boom 2")])
    parent, model = _parent(leaf("worker", sub_model), HandoffPolicy(max_retries=1))
    result = await parent.run("go")
    end = end_events(result)[0]
    assert end["status"] == "failed" and end["attempts"] == 2
    assert (
        "attempt 1: model_error: boom 1" in end["error"] and "attempt 2: model_error: boom 2" in end["error"]
    )
    assert tool_results(model, 1)["c"]["error"] == "model_error"


async def test_timeout_really_cancels_the_attempt_then_falls_back() -> None:
    progress: list[str] = []

    @function_tool
    async def long_job() -> str:
        """Runs for a long time."""
        progress.append("started")
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            progress.append("cancelled")
            raise
        progress.append("finished")  # must never happen: the attempt is cancelled
        return "late"

    sub_model = ScriptedModel([call_tools(tool_call("long_job", {}, id="j")), reply("never")])
    worker = Agent("worker", model=sub_model, tools=[long_job])

    @function_tool(name="delegate.worker")
    def primary(task: str = "") -> str:
        """Fallback."""
        return "primary served it"

    policy = HandoffPolicy(timeout_ms=40, on_error=OnFailure.FALLBACK_TO_PRIMARY)
    parent, model = _parent(worker, policy, fallback_tools=[primary])
    result = await parent.run("go")
    assert progress == ["started", "cancelled"]  # cancelled before the fallback answered
    end = end_events(result)[0]
    assert end["status"] == "fallback" and end["attempts"] == 1 and "timeout after 40 ms" in end["error"]
    assert tool_results(model, 1)["c"] == "primary served it"
    assert sub_model.remaining == 1  # the second round of the worker never happened


async def test_timeout_without_fallback_fails_with_timeout_and_retries_when_allowed() -> None:
    sub_model = ScriptedModel([reply("slow", delay=1.0), reply("fast")])
    parent, _model = _parent(leaf("worker", sub_model), HandoffPolicy(timeout_ms=30, max_retries=1))
    result = await parent.run("go")
    end = end_events(result)[0]
    assert end["status"] == "completed" and end["attempts"] == 2
    sub_model2 = ScriptedModel([reply("slow", delay=1.0)])
    parent2, model2 = _parent(leaf("worker", sub_model2), HandoffPolicy(timeout_ms=30))
    result2 = await parent2.run("go")
    assert end_events(result2)[0]["status"] == "failed"
    assert tool_results(model2, 1)["c"]["error"] == "timeout"


async def test_fallback_when_the_primary_cannot_serve_the_name_says_so() -> None:
    sub_model = ScriptedModel([fail("down")])
    parent, model = _parent(leaf("worker", sub_model), HandoffPolicy(on_error=OnFailure.FALLBACK_TO_PRIMARY))
    result = await parent.run("go")
    payload = tool_results(model, 1)["c"]
    assert payload["error"] == "fallback_unavailable"
    assert "primary executor has no tool named 'delegate.worker'" in payload["detail"]
    assert end_events(result)[0]["status"] == "failed"


async def test_input_filter_rewrites_the_task_once() -> None:
    seen: list[DelegationRequest] = []

    def scrub(request: DelegationRequest) -> str | None:
        seen.append(request)
        return request.task.replace("secret-token", "[redacted]")

    sub_model = ScriptedModel([reply("ok")])
    model = ScriptedModel([call_tools(delegate("worker", "use secret-token please")), reply("final")])
    parent = Agent(
        "p",
        model=model,
        subagents=[Subagent(agent=leaf("worker", sub_model), max_turns=1)],
        policy=HandoffPolicy(input_filter=scrub),
    )
    await parent.run("go")
    assert sub_model.calls[0].last_user == "use [redacted] please"
    assert (
        len(seen) == 1
        and seen[0].tool == "delegate.worker"
        and seen[0].target == "worker"
        and seen[0].depth == 1
    )


async def test_input_filter_returning_none_keeps_the_original() -> None:
    sub_model = ScriptedModel([reply("ok")])
    parent, _ = _parent(leaf("worker", sub_model), HandoffPolicy(input_filter=lambda request: None))
    await parent.run("go")
    assert sub_model.calls[0].last_user == "the task"


@pytest.mark.parametrize(
    ("policy", "rule", "detail"),
    [
        (HandoffPolicy(allowed_tools=["delegate.other"]), "allowed_tools", "not on the allow-list"),
        (HandoffPolicy(denied_tools=["delegate.*"]), "denied_tools", "on the deny-list"),
        (HandoffPolicy(max_depth=0), "max_depth", "denied by max_depth 1 exceeds 0"),
    ],
)
async def test_denial_by_each_policy_rule_never_runs_the_subagent(
    policy: HandoffPolicy, rule: str, detail: str
) -> None:
    sub_model = ScriptedModel([])
    parent, model = _parent(leaf("worker", sub_model), policy)
    result = await parent.run("go")
    start, end = result.handoff_events
    assert start["event"] == "HANDOFF_START" and end["event"] == "HANDOFF_END"
    assert end["status"] == "denied" and end["denyReason"] == rule and end["attempts"] == 0
    payload = tool_results(model, 1)["c"]
    assert payload["error"] == "handoff_denied" and detail in payload["detail"] and rule in payload["detail"]
    assert sub_model.calls == []


async def test_depth_denial_parent_child_leaf_with_max_depth_1() -> None:
    leaf_model = ScriptedModel([])
    child_model = ScriptedModel([call_tools(delegate("leaf", "deeper", id="d")), reply("child answer")])
    child = Agent(
        "child", model=child_model, subagents=[Subagent(agent=leaf("leaf", leaf_model), max_turns=1)]
    )
    parent, _model = _parent(child, HandoffPolicy(max_depth=1))
    result = await parent.run("go")
    ends = end_events(result)
    assert [(e["subagent"], e["depth"], e["status"], e["denyReason"]) for e in ends] == [
        ("leaf", 2, "denied", "max_depth"),
        ("child", 1, "completed", None),
    ]
    assert "denied by max_depth 2 exceeds 1" in tool_results(child_model, 1)["d"]["detail"]
    assert leaf_model.calls == []


async def test_denial_can_fall_back_to_primary() -> None:
    @function_tool(name="delegate.worker")
    def primary(task: str = "") -> str:
        """Fallback."""
        return "served by primary"

    sub_model = ScriptedModel([])
    policy = HandoffPolicy(denied_tools=["delegate.worker"], on_denied=OnFailure.FALLBACK_TO_PRIMARY)
    parent, model = _parent(leaf("worker", sub_model), policy, fallback_tools=[primary])
    result = await parent.run("go")
    end = end_events(result)[0]
    assert end["status"] == "fallback" and end["denyReason"] == "denied_tools"
    assert tool_results(model, 1)["c"] == "served by primary"


async def test_disabled_policy_skips_deny_checks_filter_and_retries_but_keeps_events_and_timeout() -> None:
    filtered: list[str] = []
    sub_model = ScriptedModel([fail("first failure"), reply("would need a retry")])
    policy = HandoffPolicy(
        enabled=False,
        denied_tools=["delegate.worker"],
        max_depth=0,
        max_retries=3,
        input_filter=lambda request: filtered.append(request.task) or "rewritten",
    )
    parent, _model = _parent(leaf("worker", sub_model), policy)
    result = await parent.run("go")
    assert [e["event"] for e in result.handoff_events] == ["HANDOFF_START", "HANDOFF_END"]
    end = end_events(result)[0]
    assert end["status"] == "failed" and end["attempts"] == 1  # no retries
    assert filtered == [] and sub_model.calls[0].last_user == "the task"

    slow = ScriptedModel([reply("slow", delay=1.0)])
    parent2, _ = _parent(leaf("worker", slow), HandoffPolicy(enabled=False, timeout_ms=20))
    result2 = await parent2.run("go")
    assert end_events(result2)[0]["status"] == "failed" and "timeout" in end_events(result2)[0]["error"]


async def test_plain_tools_pass_straight_through_the_policy() -> None:
    calls: list[str] = []

    def lookup(key: str) -> str:
        calls.append(key)
        return "value"

    model = ScriptedModel([call_tools(tool_call("lookup", {"key": "k"})), reply("done")])
    agent = Agent("p", model=model, tools=[lookup], policy=HandoffPolicy(allowed_tools=[], max_depth=0))
    result = await agent.run("go")
    assert calls == ["k"] and result.handoff_events == []


async def test_a_raising_input_filter_fails_the_delegation_with_paired_events_not_the_turn() -> None:
    def broken(request: DelegationRequest) -> str | None:
        raise KeyError("scrubber table missing")

    sub_model = ScriptedModel([])
    parent, model = _parent(leaf("worker", sub_model), HandoffPolicy(input_filter=broken))
    result = await parent.run("go")
    assert result.text == "final"
    assert [e["event"] for e in result.handoff_events] == ["HANDOFF_START", "HANDOFF_END"]
    end = end_events(result)[0]
    assert end["status"] == "failed" and end["attempts"] == 0
    payload = tool_results(model, 1)["c"]
    assert payload["error"] == "input_filter_error"
    assert "input_filter raised KeyError" in payload["detail"]
    assert "scrubber table missing" in payload["detail"]
    assert sub_model.calls == []  # the unfiltered task never reaches the subagent


async def test_an_unexpected_failure_inside_governance_still_pairs_the_events() -> None:
    class LazyRegistry(dict[str, Model]):
        """A registry that builds clients on lookup; building one fails (e.g. no API key)."""

        def get(self, key: str, default: object = None) -> Model:  # type: ignore[override]
            raise RuntimeError(f"cannot build a client for {key!r}: no API key")

    worker = Agent("worker", model="remote-model")
    parent, model = _parent(worker, HandoffPolicy())
    result = await parent.run("go", models=LazyRegistry())
    assert result.text == "final"
    assert [e["event"] for e in result.handoff_events] == ["HANDOFF_START", "HANDOFF_END"]
    payload = tool_results(model, 1)["c"]
    assert payload["error"] == "RuntimeError" and "no API key" in payload["detail"]
    assert end_events(result)[0]["status"] == "failed"


def test_policy_defaults_are_the_documented_ones() -> None:
    policy = HandoffPolicy()
    assert (policy.enabled, policy.max_depth, policy.max_retries, policy.timeout_ms) == (True, 1, 0, 0)
    assert policy.allowed_tools is None and policy.denied_tools is None and policy.input_filter is None
    assert policy.on_denied is OnFailure.FAIL and policy.on_error is OnFailure.FAIL


async def test_order_start_then_filter_then_attempts_then_end_and_depth_is_known_before_start() -> None:
    trail: list[str] = []

    def listener(event: dict[str, object]) -> None:
        trail.append(f"{event['event']} depth={event['depth']}")

    def scrub(request: DelegationRequest) -> str:
        trail.append(f"filter depth={request.depth}")
        return "scrubbed task"

    def guard(text: str) -> None:
        if text == "scrubbed task":  # the guardrail sees the filtered task
            trail.append("guardrail")

    sub_model = ScriptedModel([fail("flaky"), reply("ok")])

    class Recording(ScriptedModel):
        async def request(self, *args: Any, **kwargs: Any) -> Any:
            trail.append("attempt")
            return await sub_model.request(*args, **kwargs)

    worker = Agent("worker", model=Recording([]))
    policy = HandoffPolicy(input_filter=scrub, max_retries=1)
    parent, _ = _parent(worker, policy, listeners=[listener], input_guardrails=[guard])
    await parent.run("go")
    assert trail == [
        "HANDOFF_START depth=1",
        "filter depth=1",
        "guardrail",
        "attempt",
        "attempt",
        "HANDOFF_END depth=1",
    ]
    # The filter ran once; both attempts got the rewritten task.
    assert [call.last_user for call in sub_model.calls] == ["scrubbed task", "scrubbed task"]


async def test_a_denial_comes_after_start_and_before_the_filter_which_never_runs() -> None:
    trail: list[str] = []
    policy = HandoffPolicy(
        denied_tools=["delegate.worker"], input_filter=lambda request: trail.append("filter") or None
    )
    parent, _ = _parent(
        leaf("worker", ScriptedModel([])), policy, listeners=[lambda e: trail.append(e["event"])]
    )
    await parent.run("go")
    assert trail == ["HANDOFF_START", "HANDOFF_END"]


@pytest.mark.parametrize(
    ("policy", "rule"),
    [
        # Refused by all three rules: the allow-list is checked first.
        (
            HandoffPolicy(allowed_tools=["delegate.other"], denied_tools=["delegate.*"], max_depth=0),
            "allowed_tools",
        ),
        # Allowed, but denied and too deep: the deny-list comes before the depth.
        (
            HandoffPolicy(allowed_tools=["delegate.*"], denied_tools=["delegate.*"], max_depth=0),
            "denied_tools",
        ),
        (HandoffPolicy(allowed_tools=["delegate.*"], max_depth=0), "max_depth"),
    ],
)
async def test_deny_checks_run_in_order_allowed_denied_depth(policy: HandoffPolicy, rule: str) -> None:
    parent, model = _parent(leaf("worker", ScriptedModel([])), policy)
    result = await parent.run("go")
    assert end_events(result)[0]["denyReason"] == rule
    assert tool_results(model, 1)["c"]["detail"].startswith(f"denied by {rule}")


class _OpenSpans(SpanProcessor):
    """Names of spans started and not (yet) ended."""

    def __init__(self) -> None:
        self.open: dict[int, str] = {}
        self.ended: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: object = None) -> None:
        self.open[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.open.pop(span.context.span_id, None)
        self.ended.append(span)


async def test_a_timeout_cancels_the_attempt_its_tools_and_nested_delegations_and_closes_spans() -> None:
    progress: list[tuple[str, str]] = []

    @function_tool
    async def slow(label: str) -> str:
        """Works for a long time."""
        progress.append(("started", label))
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            progress.append(("cancelled", label))
            raise
        progress.append(("finished", label))
        return label

    deep_model = ScriptedModel([call_tools(tool_call("slow", {"label": "deep"})), reply("x")])
    deep = Agent("deep", model=deep_model, tools=[slow])
    worker_model = ScriptedModel(
        [
            call_tools(
                tool_call("slow", {"label": "a"}), tool_call("slow", {"label": "b"}), delegate("deep", "go")
            ),
            reply("never"),
        ]
    )
    worker = Agent(
        "worker",
        model=worker_model,
        tools=[slow],
        subagents=[Subagent(agent=deep, max_turns=2)],
        policy=HandoffPolicy(max_depth=2),
    )
    spans = _OpenSpans()
    provider = TracerProvider()
    provider.add_span_processor(spans)
    # Long enough for all three slow tools to start on a loaded machine; they would run 5 s.
    parent, model = _parent(worker, HandoffPolicy(timeout_ms=200, max_depth=2))
    result = await parent.run("go", tracer_provider=provider)

    # By the time the turn returns, every task inside the attempt has received its cancellation.
    labels = ["a", "b", "deep"]
    assert sorted(progress) == sorted([(step, x) for step in ("started", "cancelled") for x in labels])
    assert spans.open == {}
    await asyncio.sleep(0.05)
    assert not any(step == "finished" for step, _ in progress)
    assert worker_model.remaining == 1
    assert tool_results(model, 1)["c"]["error"] == "timeout"
    timed_out = [s.name for s in spans.ended if s.attributes and s.attributes.get(ERROR_TYPE) == "timeout"]
    assert "invoke_agent worker" in timed_out and timed_out.count("execute_tool slow") == 3
    ends = {e["subagent"]: e for e in end_events(result)}
    assert ends["worker"]["status"] == "failed" and ends["deep"]["error"] == "cancelled (timeout)"


@pytest.mark.parametrize("refusal", ["tool_forbidden", "guardrail"])
async def test_only_policy_rule_denials_fall_back_to_primary(refusal: str) -> None:
    served: list[str] = []

    @function_tool(name="delegate.worker")
    def primary(task: str = "") -> str:
        """Fallback."""
        served.append(task)
        return "served by primary"

    options: dict[str, Any] = (
        {"tool_filter": ToolFilter(exclude=["delegate.*"])}
        if refusal == "tool_forbidden"
        else {"input_guardrails": [lambda text: "no" if text == "the task" else None]}
    )
    policy = HandoffPolicy(on_denied=OnFailure.FALLBACK_TO_PRIMARY, on_error=OnFailure.FALLBACK_TO_PRIMARY)
    parent, model = _parent(leaf("worker", ScriptedModel([])), policy, fallback_tools=[primary], **options)
    result = await parent.run("go")
    end = end_events(result)[0]
    assert end["status"] == "denied" and end["denyReason"] == refusal
    assert tool_results(model, 1)["c"]["error"] == refusal and served == []
