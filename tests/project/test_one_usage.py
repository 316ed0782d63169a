"""One usage value from the runtime's accounting to the pages: `janux.usage.Usage`, with `+`."""

from __future__ import annotations

import asyncio

from janux import usage as usage_module
from janux.runtime import Agent
from janux.runtime.testing import ScriptedModel, reply
from janux.usage import Usage, plus


def test_every_layer_uses_the_one_usage_type() -> None:
    from janux.integrations.openai_agents.state import Loop
    from janux.runtime import usage as runtime_usage
    from janux.tracing.analysis import trace_parts
    from janux.tracing.analysis.agentmap import fleet_stats

    assert runtime_usage.Usage is Usage
    assert trace_parts.Usage is Usage
    assert not hasattr(fleet_stats, "MapUsage")
    assert Loop.__dataclass_fields__["own"].default_factory is Usage  # type: ignore[attr-defined]


def test_a_run_bill_is_the_one_usage_value() -> None:
    model = ScriptedModel([reply("hi", input_tokens=10, output_tokens=2)])
    agent = Agent("solo", instructions="x", model=model)
    result = asyncio.run(agent.run("hello"))
    assert type(result.bill) is Usage
    assert (result.bill.input_tokens, result.bill.output_tokens, result.bill.rounds) == (10, 2, 1)


def test_addition_keeps_unknown_cost_unknown() -> None:
    priced = Usage(100, 20, 0.001, 0)
    unpriced = Usage(50, 5, None, 55)
    total = priced + unpriced
    assert (total.input_tokens, total.output_tokens) == (150, 25)
    assert (total.cost, total.unpriced_tokens) == (0.001, 55)
    assert (Usage() + Usage()).cost is None
    assert priced.cost == 0.001 and unpriced.cost is None, "+ leaves its operands alone"
    assert plus(None, None) is None and plus(None, 3) == 3 and plus(2, None) == 2


def test_a_round_with_an_estimate_keeps_it_apart_from_the_recorded_cost() -> None:
    usage = Usage()
    usage.add_round(100, 10, None, estimate=0.0002)
    usage.add_round(10, 1, 0.001)
    assert usage.cost == 0.001
    assert usage.estimated_cost == 0.0002 and usage.estimated_tokens == 110
    assert usage.unpriced_tokens == 110 and usage.rounds == 2
    assert usage_module.COST_DECIMALS == 12
