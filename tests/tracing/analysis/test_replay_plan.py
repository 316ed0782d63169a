"""What a demo trace recorded with content capture on holds for `janux replay`, read by the analysis layer."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from janux.tracing import conventions as c
from janux.tracing.analysis.replay_outcome import differences, find_delegation, run_outcome
from janux.tracing.analysis.replay_plan import NO_CONTENT, ReplayUnavailable, replay_plan
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import SpanRecord
from tests.support.demo_traces import demo_traces


def _trace(name: str, *, captured: bool = True) -> list[SpanRecord]:
    traces = demo_traces(capture_content=captured)
    return [s for s in traces.spans if s.trace_id == traces.trace_ids[name]]


def _root(spans: list[SpanRecord]) -> SpanRecord:
    return next(s for s in spans if not s.parent_span_id)


def test_definitions_are_recorded_only_with_capture_on() -> None:
    assert c.JANUX_AGENT_DEFINITIONS not in _root(_trace("cut_max_turns", captured=False)).attributes
    recorded = json.loads(str(_root(_trace("cut_max_turns")).attributes[c.JANUX_AGENT_DEFINITIONS]))
    assert recorded["entry"] == "triage"
    triage, researcher = recorded["agents"]["triage"], recorded["agents"]["researcher"]
    assert triage["subagents"][0]["agent"] == "researcher"
    assert triage["subagents"][0]["max_turns"] == 2
    assert researcher["cost"] == {"input": 2.5, "output": 10.0}
    assert researcher["tools"] == ["search_docs"]


def test_the_policy_rate_limit_and_filter_are_recorded() -> None:
    retry = json.loads(str(_root(_trace("retry_then_success")).attributes[c.JANUX_AGENT_DEFINITIONS]))
    assert retry["agents"]["triage"]["policy"]["max_retries"] == 2
    limited = json.loads(str(_root(_trace("denied_rate_limited")).attributes[c.JANUX_AGENT_DEFINITIONS]))
    assert limited["agents"]["triage"]["rate_limit"] == {"max_calls": 1, "per_seconds": 60.0}
    fallback = json.loads(str(_root(_trace("timeout_then_fallback")).attributes[c.JANUX_AGENT_DEFINITIONS]))
    assert fallback["agents"]["triage"]["fallback_tools"] == ["delegate.researcher"]
    assert fallback["agents"]["triage"]["policy"]["on_error"] == "fallback_to_primary"


def test_a_trace_without_captured_content_cannot_be_replayed() -> None:
    with pytest.raises(ReplayUnavailable, match="no recorded model outputs: record with content capture on"):
        replay_plan(_trace("delegation", captured=False))
    assert NO_CONTENT.startswith("no recorded model outputs")


def test_the_plan_holds_every_round_output_and_tool_result() -> None:
    plan = replay_plan(_trace("delegation"))
    assert plan.entry == "triage"
    assert plan.input == "My annual plan was charged twice this month. Can I get a refund?"
    assert [r.agent for r in plan.rounds] == ["triage", "researcher", "researcher", "triage"]
    first = plan.rounds[0]
    assert [(call.name, json.loads(call.arguments)) for call in first.tool_calls] == [
        (
            "delegate.researcher",
            {"task": "Refund rules for annual plans", "context": "customer charged twice"},
        )
    ]
    assert (first.input_tokens, first.output_tokens) == (402, 35)
    assert plan.rounds[-1].text.startswith("Yes: annual plans are refundable")
    search = next(t for t in plan.tools if t.tool == "search_docs")
    assert json.loads(search.result or "") == {"hits": 3, "top": "Refunds for annual plans"}


def test_failed_and_cancelled_rounds_are_read_as_such() -> None:
    retry = replay_plan(_trace("retry_then_success"))
    failed = [r for r in retry.rounds if not r.answered]
    assert [(r.agent, r.error_type, r.cancelled) for r in failed] == [("researcher", "model_error", False)]
    assert failed[0].error == "upstream returned 503 Service Unavailable"
    timeout = replay_plan(_trace("timeout_then_fallback"))
    assert [(r.error_type, r.cancelled) for r in timeout.rounds if not r.answered] == [("timeout", True)]


def test_dispatched_tasks_are_read_in_order() -> None:
    plan = replay_plan(_trace("dispatch_synthesize"))
    assert plan.dispatch_tasks == [
        "Refund rules for annual plans",
        "Refund rules for monthly plans",
        "How duplicate charges are handled",
    ]


def test_outcomes_name_each_delegation_and_differences_find_a_change() -> None:
    recorded = run_outcome(reconstruct(_trace("cut_max_turns")))
    assert [(d.number, d.tool, d.status, d.attempts, d.reason) for d in recorded.delegations] == [
        (1, "delegate.researcher", "cut", 1, "max_turns")
    ]
    assert differences(recorded, recorded) == []
    other = run_outcome(reconstruct(_trace("delegation")))
    found = differences(recorded, other)
    assert any(
        line.startswith("delegation 1 (delegate.researcher): cut (max_turns) -> completed") for line in found
    )
    assert any(line.startswith("bill: recorded 2,005 in / 95 out") for line in found)
    span_id = recorded.delegations[0].span_id or ""
    assert find_delegation(recorded, None, span_id[:8]) is recorded.delegations[0]
    assert find_delegation(recorded, 2, None) is None


def test_only_outputs_in_the_sdk_item_form_read_as_an_sdk_trace() -> None:
    from janux.tracing.analysis.replay_plan import RecordedRound, in_item_form, output_items

    def answered(output: str | None) -> RecordedRound:
        return RecordedRound(agent="triage", model="m", messages="[]", output=output)

    items = '[{"type": "function_call", "name": "research", "arguments": "{}", "call_id": "c1"}]'
    genai = '[{"role": "assistant", "content": "Yes.", "tool_calls": []}]'
    assert output_items(answered(items)) == [
        {"type": "function_call", "name": "research", "arguments": "{}", "call_id": "c1"}
    ]
    assert in_item_form([answered(items), RecordedRound(agent="t", model="m", messages=None, answered=False)])
    assert not in_item_form([answered(genai)])
    assert not in_item_form([answered(items), answered(genai)])
    assert not in_item_form([answered("[{\"type\": \"message\"")])  # truncated: unreadable
    assert not in_item_form([])


def test_only_a_dumped_chat_completions_message_reads_as_the_sdks_chat_form() -> None:
    from janux.tracing.analysis.replay_plan import RecordedRound, chat_message, in_sdk_form

    def answered(output: str | None) -> RecordedRound:
        return RecordedRound(agent="triage", model="m", messages="[]", output=output)

    dumped = (
        '[{"content": null, "refusal": null, "role": "assistant", "annotations": null, "audio": null, '
        '"function_call": null, "tool_calls": [{"id": "c1", "type": "function", '
        '"function": {"name": "research", "arguments": "{}"}}]}]'
    )
    text = '[{"content": "Yes.", "refusal": null, "role": "assistant", "tool_calls": null}]'
    items = '[{"type": "function_call", "name": "research", "arguments": "{}", "call_id": "c1"}]'
    runtime_rounds = replay_plan(_trace("delegation")).rounds  # the runtime's own capture
    runtime, runtime_text = runtime_rounds[0].output, runtime_rounds[-1].output
    assert runtime is not None and '"tool_calls"' in runtime
    assert runtime_text is not None and '"tool_calls"' not in runtime_text
    parts = '[{"role": "assistant", "parts": [{"type": "text", "content": "Yes."}]}]'
    flat_calls = (
        '[{"content": null, "refusal": null, "role": "assistant", "tool_calls": [{"id": "c1", "name": "r"}]}]'
    )
    two = f"[{text[1:-1]}, {text[1:-1]}]"
    undumped = '[{"role": "assistant", "content": "Yes.", "tool_calls": null}]'  # no model_dump: no refusal
    message = chat_message(answered(dumped))
    assert message is not None and message["tool_calls"][0]["function"]["name"] == "research"
    assert chat_message(answered(text)) == {
        "content": "Yes.",
        "refusal": None,
        "role": "assistant",
        "tool_calls": None,
    }
    for other in (items, runtime, runtime_text, parts, flat_calls, two, undumped, dumped[:40], None):
        assert chat_message(answered(other)) is None, other

    janux_root = _root(_trace("delegation"))
    assert c.JANUX_TURN_ROUNDS in janux_root.attributes
    foreign_root = replace(janux_root, attributes={})
    failed = RecordedRound(agent="t", model="m", messages=None, answered=False)
    assert in_sdk_form([answered(dumped), answered(text), failed], janux_root)
    assert in_sdk_form([answered(items), answered(text)], janux_root)  # Responses and chat agents in one run
    assert in_sdk_form([answered(items)], foreign_root)
    assert not in_sdk_form([answered(dumped)], foreign_root)  # not written to the Janux contract
    assert not in_sdk_form([answered(dumped), answered(runtime)], janux_root)
    assert not in_sdk_form([answered(runtime)], janux_root)
    assert not in_sdk_form([failed], janux_root)
