"""Spans written in one attribute pass (what integrations use on the agent's thread) carry the same
contract as the start/end pairs: `record_chat`, `end_agent(bill=, extra=)`, `end_tool(extra=)`, and
parents given as a context built once (`context_of`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from janux.tracing import conventions as c
from janux.tracing.instrument import ContentCapture, instrumentation_for_run
from janux.tracing.instrument.run import context_of
from tests.support.contract_checker import Traced


def _totals(tokens_in: int, tokens_out: int, cost: float | None, unpriced: int, rounds: int) -> Any:
    return SimpleNamespace(
        input_tokens=tokens_in, output_tokens=tokens_out, cost=cost, unpriced_tokens=unpriced, rounds=rounds
    )


def test_record_chat_writes_a_finished_round_in_one_go(traced: Traced) -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    obs = instrumentation_for_run(traced.provider, meters, capture=ContentCapture(enabled=True))
    turn = obs.start_turn("triage", "conv")
    parent = context_of(turn)
    obs.record_chat(
        parent, agent="triage", request_model="m", provider="p", response_model="m-1", finish_reason="stop",
        usage=(30, 4), cost=0.5, start_time=1_000, end_time=2_000_001_000,
        extra={c.JANUX_PRICE_SOURCE: "table 1"}, messages=lambda: "[hi]", output=lambda: "[yo]",
    )  # fmt: skip
    obs.record_chat(
        parent, agent="triage", request_model="m", provider="p", response_model=None, finish_reason=None,
        usage=None, cost=0.5, start_time=3_000, end_time=4_000, output=lambda: "never",
    )  # fmt: skip
    obs.end_agent(turn, _totals(30, 4, 0.5, 0, 2))
    spans = traced.records()
    (root,) = [s for s in spans if s.name == "invoke_agent triage"]
    records = {s.start_ns: s for s in spans if s.name == "chat m"}
    priced, unknown = records[1_000], records[3_000]
    assert (priced.parent_span_id, priced.kind, priced.duration_ns) == (root.span_id, "Client", 2_000_000_000)
    assert unknown.parent_span_id == root.span_id
    assert {key: priced.attributes[key] for key in priced.attributes} == {
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
        c.GEN_AI_PROVIDER_NAME: "p",
        c.GEN_AI_REQUEST_MODEL: "m",
        c.GEN_AI_AGENT_NAME: "triage",
        c.GEN_AI_RESPONSE_MODEL: "m-1",
        c.GEN_AI_RESPONSE_FINISH_REASONS: ["stop"],
        c.GEN_AI_USAGE_INPUT_TOKENS: 30,
        c.GEN_AI_USAGE_OUTPUT_TOKENS: 4,
        c.JANUX_ROUND_COST: 0.5,
        c.JANUX_PRICE_SOURCE: "table 1",
        c.GEN_AI_INPUT_MESSAGES: "[hi]",
        c.GEN_AI_OUTPUT_MESSAGES: "[yo]",
    }
    # Usage unknown: no usage, no cost, no output; never a made-up 0.
    absent = {c.GEN_AI_USAGE_INPUT_TOKENS, c.JANUX_ROUND_COST, c.GEN_AI_OUTPUT_MESSAGES}
    assert not absent & set(unknown.attributes)
    assert c.GEN_AI_RESPONSE_FINISH_REASONS not in unknown.attributes
    data = reader.get_metrics_data()
    assert data is not None
    metrics = {m.name: m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    (duration,) = [p for p in metrics[c.METRIC_OPERATION_DURATION].data.data_points
                   if p.attributes.get(c.GEN_AI_RESPONSE_MODEL) == "m-1"]  # fmt: skip
    assert duration.count == 1 and duration.sum == 2.0
    points = metrics[c.METRIC_TOKEN_USAGE].data.data_points
    tokens = {p.attributes[c.GEN_AI_TOKEN_TYPE]: p.sum for p in points}
    assert tokens == {c.TOKEN_TYPE_INPUT: 30, c.TOKEN_TYPE_OUTPUT: 4}


def test_end_agent_and_end_tool_set_every_final_attribute_at_once(traced: Traced) -> None:
    obs = instrumentation_for_run(traced.provider, capture=False)
    turn = obs.start_turn("triage", "conv")
    tool = obs.start_tool(
        context_of(turn), tool="researcher", call_id="c1", tool_type=c.TOOL_TYPE_FUNCTION, arguments=None
    )
    obs.end_tool(tool, extra={c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_DELEGATE})
    obs.end_agent(
        turn,
        _totals(10, 2, None, 12, 1),
        bill=_totals(30, 4, 0.25, 12, 2),
        extra={c.JANUX_BILL_COST_ESTIMATE: 0.125},
        error_type="boom",
        error_message="it broke",
    )
    by_name = {s.name: s for s in traced.records()}
    assert by_name["execute_tool researcher"].attributes[c.GEN_AI_TOOL_TYPE] == c.TOOL_TYPE_DELEGATE
    root = by_name["invoke_agent triage"]
    assert by_name["execute_tool researcher"].parent_span_id == root.span_id
    expected = {
        c.JANUX_TURN_INPUT_TOKENS: 10, c.JANUX_TURN_OUTPUT_TOKENS: 2, c.JANUX_TURN_UNPRICED_TOKENS: 12,
        c.JANUX_TURN_ROUNDS: 1, c.JANUX_BILL_INPUT_TOKENS: 30, c.JANUX_BILL_OUTPUT_TOKENS: 4,
        c.JANUX_BILL_COST: 0.25, c.JANUX_BILL_UNPRICED_TOKENS: 12, c.JANUX_BILL_COST_ESTIMATE: 0.125,
        c.ERROR_TYPE: "boom",
    }  # fmt: skip
    assert {key: root.attributes.get(key) for key in expected} == expected
    assert c.JANUX_TURN_COST not in root.attributes  # unknown is absent, never 0
    assert (root.status_code, root.status_message) == ("Error", "it broke")
