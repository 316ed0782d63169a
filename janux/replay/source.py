"""The replay of a trace as Python source: the agents as recorded, each model's recorded rounds, the
recorded tool results, and (for a test file) an assertion of the recorded outcome.

`janux replay` runs this very source, and `--write-test` writes it, so the replay a developer sees
and the test they keep are one program. Every value from the trace is written with `repr`, so no
recorded text can become code.
"""

from __future__ import annotations

import builtins
import keyword
import pprint
import re
from dataclasses import dataclass
from typing import Any

from janux.replay.whatif import REPLAY_MODEL
from janux.tracing.analysis.replay_outcome import RunOutcome
from janux.tracing.analysis.replay_plan import RecordedRound, ReplayPlan

_POLICY_DEFAULTS: dict[str, Any] = {
    "enabled": True, "max_depth": 1, "max_retries": 0, "max_transfers": 3,
    "timeout_ms": 0, "allowed_tools": None,
    "denied_tools": None, "on_denied": "fail", "on_error": "fail",
}  # fmt: skip
_SUBAGENT_DEFAULTS: dict[str, Any] = {
    "max_tokens": None, "max_ms": None, "session": "new_session", "tool_name": None, "description": None,
}  # fmt: skip
_ON_FAILURE = {
    "fail": "OnFailure.FAIL",
    "fallback_to_primary": "OnFailure.FALLBACK_TO_PRIMARY",
    "raise": "OnFailure.RAISE",
}
_SESSION = {"new_session": "SessionMode.NEW_SESSION", "reuse_session": "SessionMode.REUSE_SESSION"}


@dataclass(frozen=True, slots=True)
class FromRegistry:
    """Agents from the user's code (`--agents module:attr`) instead of the recorded definitions."""

    reference: str
    """`module:attr` of the registry (a mapping name -> Agent, or a callable returning one)."""
    live_tools: bool = False
    """Run the registry's tools instead of answering with the recorded results."""
    overlay: dict[str, dict[str, Any]] | None = None
    """The registry's definitions with the what-ifs made; None when there are none."""


@dataclass(frozen=True, slots=True)
class Expected:
    """The outcome a written test asserts."""

    error: str | None
    """Exception class the turn raised, or None."""
    delegations: list[tuple[str, str, str, int, str | None]]
    """(tool, target, status, attempts, deny or stop reason), sorted."""
    bill: tuple[int, int, int, float | None]
    """(input tokens, output tokens, unpriced tokens, cost)."""


def _agent_order(plan: ReplayPlan, agents: dict[str, dict[str, Any]]) -> list[str]:
    """Agents reachable from the entry, each after the agents it needs (subagents, handoff targets)."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        definition = agents.get(name, {})
        for link in [*definition.get("subagents", []), *definition.get("handoffs", [])]:
            visit(str(link["agent"]))
        order.append(name)

    visit(plan.entry)
    return order


_TAKEN = frozenset({"recording", "build", "new_recording", "pytest", *keyword.kwlist, *dir(builtins)})


def _variables(order: list[str]) -> dict[str, str]:
    """A Python variable per agent name: the name itself where it can be one, else a cleaned, unique one."""
    names: dict[str, str] = {}
    for agent in order:
        cleaned = "".join(ch if ch.isalnum() else "_" for ch in agent).strip("_") or "agent"
        if not cleaned.isidentifier() or cleaned in _TAKEN or cleaned[0].isupper():
            cleaned = f"agent_{cleaned}"
        unique, number = cleaned, 2
        while unique in names.values():
            unique, number = f"{cleaned}_{number}", number + 1
        names[agent] = unique
    return names


def _step(round_: RecordedRound, deadline_raised: bool) -> str | None:
    asked = repr(round_.messages)
    if round_.answered and round_.output_recorded:
        calls = ", ".join(repr((c.id, c.name, c.arguments)) for c in round_.tool_calls)
        calls_part = f", calls=[{calls}]" if calls else ""
        text_part = f", text={round_.text!r}" if round_.text or not calls else ""
        tokens = (round_.input_tokens, round_.output_tokens)
        return f"answer(asked={asked}{text_part}{calls_part}, tokens={tokens!r})"
    if round_.cancelled:
        raised = ", deadline_raised=True" if deadline_raised else ""
        return f"silence(asked={asked}, recorded_ms={round(round_.duration_ms, 3)!r}{raised})"
    if not round_.answered:
        message = round_.error or round_.error_type or "model error"
        return f"failure(asked={asked}, message={message!r}, error_type={round_.error_type!r})"
    return None  # answered, output not captured: the recording ends there


def _model(plan: ReplayPlan, name: str, definition: dict[str, Any], deadline_raised: bool) -> str:
    rounds = [r for r in plan.rounds if r.agent == name]
    recorded_name = rounds[0].model if rounds else str(definition.get("model") or "replay")
    model_name = str(definition.get(REPLAY_MODEL) or recorded_name)
    steps: list[str] = []
    for round_ in rounds:
        step = _step(round_, deadline_raised)
        if step is None:
            break
        steps.append(step)
    body = "".join(f"            {step},\n" for step in steps)
    return f"recording.model({name!r}, {model_name!r}, [\n{body}        ])"


def _policy(policy: dict[str, Any]) -> str | None:
    parts = []
    for key, default in _POLICY_DEFAULTS.items():
        value = policy.get(key, default)
        if value == default:
            continue
        parts.append(f"{key}={_ON_FAILURE[value]}" if key.startswith("on_") else f"{key}={value!r}")
    return f"HandoffPolicy({', '.join(parts)})" if parts else None


def _subagent(link: dict[str, Any], names: dict[str, str]) -> str:
    parts = [f"agent={names[str(link['agent'])]}", f"max_turns={link['max_turns']!r}"]
    for key, default in _SUBAGENT_DEFAULTS.items():
        value = link.get(key, default)
        if value != default:
            parts.append(f"session={_SESSION[value]}" if key == "session" else f"{key}={value!r}")
    return f"Subagent({', '.join(parts)})"


def _handoff(link: dict[str, Any], names: dict[str, str]) -> str:
    extra = "".join(f", {k}={link[k]!r}" for k in ("tool_name", "description") if link.get(k) is not None)
    return f"Handoff(agent={names[str(link['agent'])]}{extra})"


def _agent(
    plan: ReplayPlan,
    name: str,
    names: dict[str, str],
    agents: dict[str, dict[str, Any]],
    deadline_raised: bool,
) -> list[str]:
    """Lines of one `Agent(...)` as recorded."""
    definition = agents.get(name, {})
    args = [f"{name!r}", f"model={_model(plan, name, definition, deadline_raised)}"]
    if definition.get("description") is not None:
        args.append(f"description={definition['description']!r}")
    cost = definition.get("cost")
    if cost is not None:
        args.append(f"cost=Cost(input={cost['input']!r}, output={cost['output']!r})")
    if definition.get("max_turns", 10) != 10:
        args.append(f"max_turns={definition['max_turns']!r}")
    policy = _policy(definition.get("policy") or {})
    if policy is not None:
        args.append(f"policy={policy}")
    if definition.get("tools"):
        args.append(f"tools=[{', '.join(f'recording.tool({t!r})' for t in definition['tools'])}]")
    if definition.get("subagents"):
        args.append(f"subagents=[{', '.join(_subagent(s, names) for s in definition['subagents'])}]")
    if definition.get("handoffs"):
        args.append(f"handoffs=[{', '.join(_handoff(h, names) for h in definition['handoffs'])}]")
    args.extend(_governance(definition))
    lines = [f"    {names[name]} = Agent("]
    lines.extend(f"        {arg}," for arg in args)
    lines.append("    )")
    return lines


def _governance(definition: dict[str, Any]) -> list[str]:
    args = []
    limit = definition.get("rate_limit")
    if limit is not None:
        args.append(
            f"rate_limit=RateLimit(max_calls={limit['max_calls']!r}, per_seconds={limit['per_seconds']!r})"
        )
    tool_filter = definition.get("tool_filter")
    if tool_filter is not None:
        args.append(
            f"tool_filter=ToolFilter(include={tool_filter['include']!r}, exclude={tool_filter['exclude']!r})"
        )
    if definition.get("fallback_tools"):
        tools = ", ".join(f"recording.fallback_tool({t!r})" for t in definition["fallback_tools"])
        args.append(f"fallback_tools=[{tools}]")
    if definition.get("fallback_handler"):
        args.append("fallback_handler=recording.fallback_handler")
    if definition.get("guardrails"):
        args.append("input_guardrails=[recording.guardrail]")
    if definition.get("parallel_tool_calls") is False:
        args.append("parallel_tool_calls=False")
    return args


def _results(plan: ReplayPlan, fallback: bool) -> dict[str, list[tuple[str, str]]]:
    results: dict[str, list[tuple[str, str]]] = {}
    for tool in plan.tools:
        if tool.result is None or tool.arguments is None:
            continue
        if (fallback and tool.status == "fallback") or (not fallback and tool.tool_type == "function"):
            results.setdefault(tool.tool, []).append((tool.arguments, tool.result))
    return results


def _refusals(plan: ReplayPlan) -> list[tuple[str, str]]:
    """(delegate call arguments, reason) of each delegation a guardrail refused."""
    refusals = []
    for tool in plan.tools:
        if tool.deny_reason == "guardrail" and tool.arguments is not None:
            refusals.append((tool.arguments, (tool.error or "refused").split("guardrail: ", 1)[-1]))
    return refusals


def expectation(recorded: RunOutcome) -> Expected:
    """What a written test asserts, read from the recorded outcome in the runtime's terms: each
    delegation's HANDOFF_END (tool, target, status, attempts, deny or stop reason), the turn's
    `error.type`, and the bill."""
    rows = sorted(
        ((d.tool, d.target, d.status, d.attempts, d.ruling) for d in recorded.delegations),
        key=lambda row: tuple(str(part) for part in row),
    )
    bill = recorded.bill
    error = recorded.error_type if recorded.status == "error" else None
    return Expected(error, rows, (bill.input_tokens, bill.output_tokens, bill.unpriced_tokens, bill.cost))


def _literal(name: str, value: Any) -> list[str]:
    """`NAME = value` over several lines when long (pretty enough for a developer to read)."""
    return [f"{name} = {pprint.pformat(value, width=110, sort_dicts=False)}"]


_RUNTIME_NAMES = (
    "Agent", "Cost", "Handoff", "HandoffPolicy", "OnFailure", "RateLimit", "SessionMode", "Subagent",
    "ToolFilter",
)  # fmt: skip
_STEP_NAMES = ("answer", "failure", "silence")


def _imports(body: str, test: bool, registry: FromRegistry | None) -> list[str]:
    """Import lines naming only what the written module uses (so it lints clean)."""
    used = [name for name in _RUNTIME_NAMES if re.search(rf"\b{name}\b", body)]
    steps = [name for name in _STEP_NAMES if re.search(rf"\b{name}\(", body)]
    support = ["Recording", *steps, *(["run_offline"] if test else [])]
    lines = ["from __future__ import annotations", ""]
    if test:
        lines += ["import pytest", ""]
    if registry is not None:
        module, attr = registry.reference.split(":", 1)
        lines.append(f"from {module} import {attr} as user_registry")
    lines.append(f"from janux.replay.support import {', '.join(support)}")
    if registry is not None:
        lines.append("from janux.replay.user_agents import user_agents")
    lines.append(f"from janux.runtime import {', '.join(used)}")
    return lines


def _registry_body(
    plan: ReplayPlan, agents: dict[str, dict[str, Any]], registry: FromRegistry, deadline_raised: bool
) -> list[str]:
    """`build(recording)` over the user's registry: their agents, each model from its recorded rounds."""
    body = [
        "def build(recording: Recording) -> Agent:",
        f'    """The entry agent of `{registry.reference}` (your code), each model answering from its',
        '    recorded rounds."""',
        "    models = {",
    ]
    for name in plan.agent_names:
        body.append(f"        {name!r}: {_model(plan, name, agents.get(name, {}), deadline_raised)},")
    body.append("    }")
    options = f"live_tools={registry.live_tools!r}"
    if registry.overlay is not None:
        options += ", definitions=DEFINITIONS"
    body.append(f"    return user_agents(user_registry, {plan.entry!r}, recording, models, {options})")
    return body


def replay_source(
    plan: ReplayPlan,
    agents: dict[str, dict[str, Any]],
    *,
    deadline_raised: bool = False,
    expected: Expected | None = None,
    command: str = "",
    registry: FromRegistry | None = None,
) -> str:
    """The module: constants, `build(recording)`, and with `expected` a pytest test of that outcome;
    with `registry`, `build` takes the agents from the user's code instead of defining them."""
    if registry is None:
        body = _recorded_body(plan, agents, deadline_raised)
        about = [
            "The agents are defined as the trace recorded them; each model answers from its recorded rounds",
            "(a round is taken only by a request asked with the recorded messages) and each tool with its",
            "recorded result. Edit an agent below (a budget, the policy) to check a fix: a run that needs a",
            "model output the trace never recorded stops with `recording ends at round N`.",
        ]
    else:
        body = _registry_body(plan, agents, registry, deadline_raised)
        tools = "run for real" if registry.live_tools else "answer with their recorded results"
        about = [
            f"The agents come from `{registry.reference}` (your prompts, guardrails and budgets); each",
            "model answers from its recorded rounds (a round is taken only by a request asked with the",
            f"recorded messages) and the tools {tools}. Fix an agent in your code to check",
            "the fix: a run that needs a model output the trace never recorded stops with",
            "`recording ends at round N`.",
        ]
    written_by = f"`{command}`" if command else "`janux replay`"
    overlay = (
        [] if registry is None or registry.overlay is None else _literal("DEFINITIONS", registry.overlay)
    )
    lines = [
        f'"""Replay of trace {plan.trace_id}, written by {written_by}.',
        "",
        *about,
        '"""',
        "",
        *_imports("\n".join(body), expected is not None, registry),
        "",
        f"TRACE_ID = {plan.trace_id!r}",
        f"INPUT = {plan.input!r}",
        *_literal("DISPATCH_TASKS", plan.dispatch_tasks),
        *_literal("HISTORY", plan.history),
        f"HOLDER = {plan.holder!r}",
        *_literal("TOOL_RESULTS", _results(plan, fallback=False)),
        *_literal("FALLBACK_RESULTS", _results(plan, fallback=True)),
        *_literal("REFUSALS", _refusals(plan)),
        *overlay,
        "",
        "",
        *body,
        "",
        "",
        "def new_recording() -> Recording:",
        '    """The recorded tool results, fallbacks and guardrail refusals, fresh for one run."""',
        "    return Recording(",
        "        tool_results=TOOL_RESULTS, fallback_results=FALLBACK_RESULTS, refusals=REFUSALS",
        "    )",
    ]
    if expected is not None:
        lines.extend(_test(expected))
    return "\n".join(lines) + "\n"


def _recorded_body(plan: ReplayPlan, agents: dict[str, dict[str, Any]], deadline_raised: bool) -> list[str]:
    """`build(recording)` defining every agent as the trace recorded it."""
    body = [
        "def build(recording: Recording) -> Agent:",
        '    """The entry agent, with every agent it reaches, as recorded."""',
    ]
    order = _agent_order(plan, agents)
    names = _variables(order)
    for name in order:
        body.extend(_agent(plan, name, names, agents, deadline_raised))
    body.append(f"    return {names[plan.entry]}")
    return body


def _test(expected: Expected) -> list[str]:
    cost = "None" if expected.bill[3] is None else f"pytest.approx({expected.bill[3]!r}, rel=1e-9)"
    return [
        "",
        "",
        f"EXPECTED_ERROR = {expected.error!r}",
        *_literal("EXPECTED_DELEGATIONS", expected.delegations),
        f"EXPECTED_TOKENS = {expected.bill[:3]!r}",
        "",
        "",
        "def test_recorded_outcome() -> None:",
        '    """The run ends as the trace recorded it: each delegation (tool, target, status, attempts,',
        '    deny or stop reason) and the bill."""',
        "    recording = new_recording()",
        "    outcome = run_offline(",
        "        build, INPUT, recording, dispatch_tasks=DISPATCH_TASKS, history=HISTORY, holder=HOLDER",
        "    )",
        "    assert outcome.ended is None, outcome.ended",
        "    assert outcome.error == EXPECTED_ERROR",
        "    assert outcome.delegations == EXPECTED_DELEGATIONS",
        "    if EXPECTED_ERROR is None:",
        "        bill = outcome.bill",
        "        assert (bill.input_tokens, bill.output_tokens, bill.unpriced_tokens) == EXPECTED_TOKENS",
        f"        assert bill.cost == {cost}",
    ]
