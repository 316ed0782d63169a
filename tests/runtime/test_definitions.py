"""Definition errors raise at definition time and name the field."""

from __future__ import annotations

from typing import Any

import pytest

from janux.runtime import Agent, Cost, DefinitionError, HandoffPolicy, RateLimit, Subagent, ToolFilter
from janux.runtime.config import agents_from_config
from janux.runtime.testing import ScriptedModel, reply
from janux.runtime.tools import make_tool


def _agent(name: str = "worker") -> Agent:
    return Agent(name, model=ScriptedModel([]))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Subagent(agent=_agent()), r"Subagent 'worker': max_turns: Field required"),
        (
            lambda: Subagent(agent=_agent(), max_turns=0),
            r"max_turns: Input should be greater than or equal to 1",
        ),
        (
            lambda: Subagent(agent=_agent(), max_turns=1, max_tokens=-5),
            r"max_tokens: Input should be greater",
        ),
        (lambda: Subagent(agent=_agent(), max_turns=1, max_ms=-1), r"max_ms: Input should be greater than 0"),
        (lambda: Subagent(agent="not an agent", max_turns=1), r"agent: Input should be an instance of Agent"),
        (lambda: Subagent(agent=_agent(), max_turns=1, budget=3), r"budget: Extra inputs are not permitted"),
        (lambda: HandoffPolicy(max_retries=-1), r"HandoffPolicy: max_retries: Input should be greater"),
        (lambda: HandoffPolicy(timeout_ms=-10), r"timeout_ms: Input should be greater"),
        (lambda: HandoffPolicy(max_depth=-1), r"max_depth: Input should be greater"),
        (
            lambda: HandoffPolicy(on_error="retry"),
            r"on_error: Input should be 'fail', 'fallback_to_primary' or 'raise'",
        ),
        (lambda: Cost(input=-1, output=1), r"Cost: input: Input should be greater"),
        (lambda: RateLimit(max_calls=0), r"RateLimit: max_calls: Input should be greater"),
        (lambda: Agent("", model=ScriptedModel([])), r"name: String should have at least 1 character"),
        (lambda: Agent("a", max_turns=0), r"Agent 'a': max_turns: Input should be greater"),
        (lambda: Agent("a", model=42), r"model"),
        (
            lambda: Agent("a", tool_filter={"include": ["x"]}),
            r"tool_filter: Input should be an instance of ToolFilter",
        ),
    ],
)
def test_definition_errors_name_the_field(make: Any, message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        make()


def test_duplicate_tool_names_are_refused() -> None:
    def search() -> str:
        return ""

    with pytest.raises(
        DefinitionError, match=r"subagents.1: duplicate tool name 'delegate.worker' \(also subagents.0\)"
    ):
        Agent(
            "p",
            subagents=[
                Subagent(agent=_agent("worker"), max_turns=1),
                Subagent(agent=_agent("Worker"), max_turns=1),
            ],
        )
    with pytest.raises(DefinitionError, match=r"duplicate tool name 'search'"):
        Agent("p", tools=[search, make_tool(search)])
    with pytest.raises(DefinitionError, match=r"duplicate tool name 'delegate.x'"):
        Agent(
            "p",
            tools=[make_tool(search, name="delegate.x")],
            subagents=[Subagent(agent=_agent("x"), max_turns=1)],
        )


def test_a_handoff_target_given_by_name_is_an_unknown_handoff_target() -> None:
    with pytest.raises(DefinitionError, match=r"Agent 'front': handoffs.1: unknown handoff target 'billing'"):
        Agent("front", handoffs=[_agent("sales"), "billing"])  # type: ignore[list-item]


def test_a_subagent_without_a_budget_names_max_turns() -> None:
    with pytest.raises(
        DefinitionError, match=r"Agent 'p': subagents.0: agent 'worker' has no budget.*max_turns is required"
    ):
        Agent("p", subagents=[_agent("worker")])  # type: ignore[list-item]


def test_an_agent_cannot_hand_off_to_itself_by_name() -> None:
    twin = Agent("same")
    with pytest.raises(DefinitionError, match="cannot hand off to itself"):
        Agent("same", handoffs=[twin])


def test_config_builds_agents_and_names_bad_fields() -> None:
    def search_docs(query: str) -> str:
        return "hit"

    model = ScriptedModel([reply("hi")])
    config = {
        "agents": {
            "triage": {
                "instructions": "front desk",
                "model": "main",
                "cost": {"input": 0.15, "output": 0.6},
                "subagents": [{"agent": "researcher", "max_turns": 3, "max_tokens": 4000}],
                "handoffs": ["billing"],
                "tool_filter": {"exclude": ["delegate.secret*"]},
                "policy": {"max_retries": 1, "timeout_ms": 500},
            },
            "researcher": {"instructions": "research", "tools": ["search_docs"]},
            "billing": {"instructions": "billing", "model": "unregistered"},
        }
    }
    agents = agents_from_config(config, models={"main": model}, tools=[make_tool(search_docs)])
    triage = agents["triage"]
    assert triage.model is model and agents["billing"].model == "unregistered"
    assert list(triage.catalog) == ["delegate.researcher", "handoff.billing"]
    assert triage.policy.max_retries == 1 and triage.policy.timeout_ms == 500 and triage.price is not None
    assert agents["researcher"].policy == HandoffPolicy()  # no policy in the file: the defaults

    def broken(path: list[Any], value: Any) -> dict[str, Any]:
        copy: dict[str, Any] = {"agents": {k: dict(v) for k, v in config["agents"].items()}}  # type: ignore[attr-defined]
        target: Any = copy
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return copy

    cases = [
        (
            ["agents", "triage", "handoffs"],
            ["billingg"],
            r"agents.triage.handoffs.0: unknown handoff target 'billingg'",
        ),
        (
            ["agents", "triage", "subagents"],
            [{"agent": "researcher"}],
            r"agents.triage.subagents.0.max_turns: Field required",
        ),
        (["agents", "researcher", "tools"], ["nope"], r"agents.researcher.tools.0: unknown tool 'nope'"),
        (["agents", "researcher", "subagents"], [{"agent": "triage", "max_turns": 1}], r"delegation cycle"),
        (
            ["agents", "triage", "cost"],
            {"input": -1, "output": 1},
            r"agents.triage.cost: Cost: input: Input should be greater",
        ),
        (["agents", "triage", "max_turns"], -3, r"agents.triage.max_turns: Input should be greater"),
        (
            ["agents", "triage", "policy"],
            {"max_retries": -1},
            r"agents.triage.policy: HandoffPolicy: max_retries: Input should be greater",
        ),
        (
            ["agents", "triage", "policy"],
            {"max_depth": 2, "retries": 1},
            r"agents.triage.policy: HandoffPolicy: retries: Extra inputs are not permitted",
        ),
        (
            ["agents", "triage", "policy"],
            {"input_filter": "scrub"},
            r"agents.triage.policy.input_filter: an input filter is a function; set it in code",
        ),
    ]
    for path, value, message in cases:
        with pytest.raises(DefinitionError, match=message):
            agents_from_config(broken(path, value), models={"main": model}, tools=[make_tool(search_docs)])


def test_tool_filter_and_cost_are_accepted_as_definitions() -> None:
    agent = Agent("a", tool_filter=ToolFilter(include=["x*"]), cost=Cost(input=1, output=2))
    assert agent.tool_filter is not None and agent.price is not None
    assert agent.price.input_per_million == 1 and agent.price.output_per_million == 2
