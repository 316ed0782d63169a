"""Guards for `contract_problems`: each rule it checks does notice a broken trace."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from janux.runtime import Agent, Cost, Subagent
from janux.runtime.testing import ScriptedModel, call_tools, delegate, reply
from janux.tracing import conventions as c
from janux.tracing.records import SpanRecord
from tests.support.contract_checker import Traced, contract_problems


async def _records() -> list[SpanRecord]:
    traced = Traced()
    sub = Agent("researcher", model=ScriptedModel([reply("ok", input_tokens=3, output_tokens=1)]))
    model = ScriptedModel(
        [call_tools(delegate("researcher", "t"), input_tokens=5), reply("done", input_tokens=6)]
    )
    agent = Agent(
        "triage", model=model, subagents=[Subagent(agent=sub, max_turns=1)], cost=Cost(input=1, output=1)
    )
    await agent.run("q", tracer_provider=traced.provider)
    return traced.records()


def _named(records: list[SpanRecord], prefix: str) -> SpanRecord:
    return next(span for span in records if span.name.startswith(prefix))


def _drop_end(records: list[SpanRecord]) -> None:
    _named(records, "execute_tool").events.pop()


def _int_cost(records: list[SpanRecord]) -> None:
    _named(records, "invoke_agent triage").attributes[c.JANUX_TURN_COST] = 1


def _usage_on_agent(records: list[SpanRecord]) -> None:
    _named(records, "invoke_agent researcher").attributes[c.GEN_AI_USAGE_INPUT_TOKENS] = 3


def _other_handoff_id(records: list[SpanRecord]) -> None:
    _named(records, "invoke_agent researcher").attributes[c.JANUX_HANDOFF_ID] = "another"


def _stale_tool_status(records: list[SpanRecord]) -> None:
    _named(records, "execute_tool").attributes[c.JANUX_HANDOFF_STATUS] = c.STATUS_STARTING


def _string_tokens(records: list[SpanRecord]) -> None:
    _named(records, "chat").attributes[c.GEN_AI_USAGE_OUTPUT_TOKENS] = "0"


def _error_without_type(records: list[SpanRecord]) -> None:
    _named(records, "chat").status_code = "Error"


def _wrong_bill(records: list[SpanRecord]) -> None:
    _named(records, "invoke_agent triage").attributes[c.JANUX_BILL_INPUT_TOKENS] = 10


def _missing_attempt(records: list[SpanRecord]) -> None:
    records.remove(_named(records, "invoke_agent researcher"))


BREAKAGES: list[Callable[[list[SpanRecord]], None]] = [
    _drop_end,
    _int_cost,
    _usage_on_agent,
    _other_handoff_id,
    _stale_tool_status,
    _string_tokens,
    _error_without_type,
    _wrong_bill,
    _missing_attempt,
]


async def test_a_correct_trace_has_no_problem() -> None:
    assert contract_problems(await _records()) == []


@pytest.mark.parametrize("breakage", BREAKAGES, ids=[b.__name__.strip("_") for b in BREAKAGES])
async def test_each_breakage_is_reported(breakage: Callable[[list[SpanRecord]], None]) -> None:
    records = await _records()
    breakage(records)
    assert contract_problems(records) != []
