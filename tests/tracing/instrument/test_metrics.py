"""GenAI client metrics (token usage, operation duration) with semconv buckets, and the handoff counter."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from janux.runtime import Agent, HandoffPolicy, ModelError, Subagent
from janux.runtime.testing import ScriptedModel, call_tools, delegate, fail, reply
from janux.tracing import conventions as c

# Copied by hand from open-telemetry/semantic-conventions docs/gen-ai/gen-ai-metrics.md
# ("This metric SHOULD be specified with ExplicitBucketBoundaries of ..."), not from our constants.
SEMCONV_TOKEN_BUCKETS = [
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
]  # fmt: skip
SEMCONV_DURATION_BUCKETS = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
]  # fmt: skip


def _metrics(reader: InMemoryMetricReader) -> dict[str, Any]:
    data = reader.get_metrics_data()
    assert data is not None
    found: dict[str, Any] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == c.INSTRUMENTATION_SCOPE
            for metric in scope.metrics:
                found[metric.name] = metric
    return found


async def test_token_usage_duration_and_handoff_counter() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    ok = Agent("ok", model=ScriptedModel([reply("fine", input_tokens=30, output_tokens=3)], model_name="sub"))
    model = ScriptedModel(
        [
            call_tools(delegate("ok", "a"), delegate("blocked", "b"), input_tokens=100, output_tokens=10),
            reply("done", input_tokens=200, output_tokens=20),
        ],
        model_name="front",
    )
    parent = Agent(
        "p",
        model=model,
        subagents=[
            Subagent(agent=ok, max_turns=1),
            Subagent(agent=Agent("blocked", model=ScriptedModel([])), max_turns=1),
        ],
        policy=HandoffPolicy(denied_tools=["delegate.blocked"]),
    )
    await parent.run("go", meter_provider=provider)
    metrics = _metrics(reader)

    usage = metrics[c.METRIC_TOKEN_USAGE]
    assert usage.unit == "{token}"
    points = {
        (p.attributes[c.GEN_AI_REQUEST_MODEL], p.attributes[c.GEN_AI_TOKEN_TYPE]): p
        for p in usage.data.data_points
    }
    assert points[("front", "input")].sum == 300 and points[("front", "output")].sum == 30
    assert points[("sub", "input")].sum == 30 and points[("front", "input")].count == 2
    assert list(points[("front", "input")].explicit_bounds) == SEMCONV_TOKEN_BUCKETS
    assert points[("front", "input")].attributes[c.GEN_AI_OPERATION_NAME] == "chat"
    assert points[("front", "input")].attributes[c.GEN_AI_PROVIDER_NAME] == "janux.scripted"

    duration = metrics[c.METRIC_OPERATION_DURATION]
    assert duration.unit == "s"
    point = next(p for p in duration.data.data_points if p.attributes[c.GEN_AI_REQUEST_MODEL] == "front")
    assert point.count == 2 and list(point.explicit_bounds) == SEMCONV_DURATION_BUCKETS
    assert point.attributes[c.GEN_AI_RESPONSE_MODEL] == "front"

    handoffs = metrics[c.METRIC_HANDOFFS]
    assert handoffs.unit == "{handoff}" and handoffs.data.is_monotonic
    counts = {
        (p.attributes[c.JANUX_HANDOFF_STATUS], p.attributes[c.JANUX_HANDOFF_KIND]): p.value
        for p in handoffs.data.data_points
    }
    assert counts == {("completed", "delegate"): 1, ("denied", "delegate"): 1}


async def test_failed_rounds_record_duration_with_error_type_and_no_tokens() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    agent = Agent("p", model=ScriptedModel([fail("down", error_type="server_error")], model_name="m"))
    with pytest.raises(ModelError):
        await agent.run("go", meter_provider=provider)
    metrics = _metrics(reader)
    point = metrics[c.METRIC_OPERATION_DURATION].data.data_points[0]
    assert point.attributes[c.ERROR_TYPE] == "server_error"
    assert c.METRIC_TOKEN_USAGE not in metrics


async def test_handoff_counter_by_status_and_kind_over_every_demo_scenario() -> None:
    """The counter's totals equal the HANDOFF_END statuses the runs report, transfers included."""
    from janux.demo.scenarios import run_scenarios

    reader = InMemoryMetricReader()
    outcomes = await run_scenarios(meter_provider=MeterProvider(metric_readers=[reader]), latency_scale=0)
    expected: dict[tuple[str, str], int] = {}
    for outcome in outcomes:
        assert outcome.result is not None, outcome.error
        for end in (e for e in outcome.result.handoff_events if e["event"] == c.EVENT_HANDOFF_END):
            key = (end["status"], end["kind"])
            expected[key] = expected.get(key, 0) + 1
    counts = {
        (p.attributes[c.JANUX_HANDOFF_STATUS], p.attributes[c.JANUX_HANDOFF_KIND]): p.value
        for p in _metrics(reader)[c.METRIC_HANDOFFS].data.data_points
    }
    assert counts == expected
    assert {status for status, _ in counts} == set(c.FINAL_STATUSES)
    assert {kind for _, kind in counts} == {c.KIND_DELEGATE, c.KIND_TRANSFER}
