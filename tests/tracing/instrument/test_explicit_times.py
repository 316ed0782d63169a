"""Spans recorded after the fact (by integrations) keep the times they are given."""

from __future__ import annotations

from types import SimpleNamespace

from janux.tracing import conventions as c
from janux.tracing.instrument import instrumentation_for_run
from tests.support.contract_checker import Traced


def test_rounds_tools_and_events_keep_explicit_times(traced: Traced) -> None:
    obs = instrumentation_for_run(traced.provider, capture=False)
    turn = obs.start_turn("triage", "conv")
    op = obs.start_chat(turn, agent="triage", request_model="m", provider="p", start_time=1_000)
    obs.end_chat(
        op,
        response_model=None,
        finish_reason=None,
        input_tokens=3,
        output_tokens=4,
        cost=None,
        end_time=5_000,
    )
    failed = obs.start_chat(turn, agent="triage", request_model="m", provider="p", start_time=6_000)
    obs.fail_chat(failed, "model_error", end_time=7_000)
    mark = SimpleNamespace(
        id="h", call_id="c", kind=c.KIND_TRANSFER, tool="handoff.billing", target="billing",
        status=c.STATUS_COMPLETED, depth=0, session_mode=c.SESSION_REUSE, attempts=1,
        duration_ms=1.0, error=None, deny_reason=None, stop_reason=None, output=None,
    )  # fmt: skip
    tool = obs.start_tool(
        turn,
        tool="handoff.billing",
        call_id="c",
        tool_type=c.TOOL_TYPE_HANDOFF,
        arguments=None,
        start_time=8_000,
    )
    obs.handoff_start(tool, mark, timestamp=8_500)
    obs.handoff_end(tool, mark)
    obs.end_tool(tool, handoff=mark, end_time=9_000)
    obs.end_agent(
        turn, SimpleNamespace(input_tokens=3, output_tokens=4, cost=None, unpriced_tokens=7, rounds=1)
    )
    records = traced.records()
    chats = sorted((s for s in records if s.name == "chat m"), key=lambda s: s.start_ns)
    assert [(s.start_ns, s.start_ns + s.duration_ns) for s in chats] == [(1_000, 5_000), (6_000, 7_000)]
    assert c.GEN_AI_RESPONSE_FINISH_REASONS not in chats[0].attributes  # not known: left out, not invented
    (handoff,) = [s for s in records if s.name == "execute_tool handoff.billing"]
    assert (handoff.start_ns, handoff.start_ns + handoff.duration_ns) == (8_000, 9_000)
    assert handoff.events[0].timestamp_ns == 8_500
