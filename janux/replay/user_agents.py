"""Agents from the user's code for a replay: `janux replay TRACE_ID --agents myapp.agents:registry`.

The registry is a mapping of agent name to `janux.runtime.Agent` (or a callable returning one). A
replay rebuilds those agents with the user's instructions, guardrails, filters and listeners, but
each model answers from its recorded rounds and, unless `live_tools`, each tool, fallback tool and
fallback handler answers as recorded (the registry's code holds no recording; the recording holds
no code). What-ifs reach these agents as a definitions overlay (`janux.replay.whatif`'s shape).

    registry = load_registry("myapp.agents:registry")
    entry = user_agents(registry, "triage", recording, models)
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from janux.errors import JanuxError
from janux.replay.support import Recording, ReplayModel
from janux.runtime.agent import Agent
from janux.runtime.agent_core import AgentCore, core_of
from janux.runtime.agent_record import definitions_json
from janux.runtime.definitions import Cost, HandoffPolicy, OnFailure, Subagent
from janux.runtime.tools import Tool

BUDGET_LINES = ("max_turns", "max_tokens", "max_ms")
"""Subagent budget lines a definitions overlay sets."""
POLICY_LINES = ("enabled", "max_depth", "max_retries", "timeout_ms", "on_denied", "on_error")
"""Policy fields a definitions overlay sets."""


class RegistryError(JanuxError, ValueError):
    """The `--agents` registry cannot be loaded or does not hold the trace's agents."""


def split_reference(reference: str) -> tuple[str, str]:
    """`myapp.agents:registry` -> ("myapp.agents", "registry"); raise `RegistryError` otherwise."""
    module, sep, attr = reference.strip().partition(":")
    if not sep or not module or not attr.isidentifier():
        raise RegistryError(f"--agents {reference!r}: expected MODULE:NAME, e.g. myapp.agents:registry")
    return module, attr


def load_registry(reference: str) -> dict[str, AgentCore]:
    """Import `module:attr` (the working directory importable, as `python -m` makes it) and read the
    agents it names; every problem is one `RegistryError` line."""
    return registry_of(import_reference(reference), reference)


def import_reference(reference: str) -> object:
    """The object `module:attr` names, the working directory importable (as `python -m` makes it);
    every problem (no module, the module raising, no such attribute) is one `RegistryError` line."""
    module_name, attr = split_reference(reference)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise RegistryError(f"--agents {reference}: no module named {exc.name!r}") from None
    except Exception as exc:  # the user's module failed while importing: name it, no traceback
        raise RegistryError(
            f"--agents {reference}: importing {module_name} raised {type(exc).__name__}: {exc}"
        ) from None
    if not hasattr(module, attr):
        raise RegistryError(f"--agents {reference}: module {module_name} has no attribute {attr!r}")
    return getattr(module, attr)


def factory_result(value: Any, reference: str) -> Any:
    """`value()`: a factory the reference names, called; its failure is one `RegistryError` line."""
    try:
        return value()
    except Exception as exc:  # the user's factory failed: name it, no traceback
        raise RegistryError(f"--agents {reference}: calling it raised {type(exc).__name__}: {exc}") from None


def registry_of(value: object, reference: str = "the registry") -> dict[str, AgentCore]:
    """The agents of a registry value: a mapping name -> Agent, or a callable returning one."""
    if callable(value) and not isinstance(value, Mapping):
        value = factory_result(value, reference)
    if not isinstance(value, Mapping):
        raise RegistryError(
            f"--agents {reference}: expected a mapping of agent name to janux Agent (or a callable "
            f"returning one), got {type(value).__name__}"
        )
    agents: dict[str, AgentCore] = {}
    for name, agent in value.items():
        if not isinstance(agent, AgentCore):
            raise RegistryError(
                f"--agents {reference}: {name!r} is a {type(agent).__name__}, not a janux Agent"
            )
        agents[str(name)] = agent
    return agents


def reachable(registry: Mapping[str, AgentCore]) -> dict[str, AgentCore]:
    """Every agent of the registry by its own name, with the subagents and handoff targets they reach."""
    found: dict[str, AgentCore] = {}
    pending = list(registry.values())
    while pending:
        agent = pending.pop()
        if agent.name in found:
            continue
        found[agent.name] = agent
        pending.extend(core_of(sub.agent) for sub in agent.spec.subagents)
        pending.extend(core_of(handoff.agent) for handoff in agent.spec.handoffs)
    return found


def check_covers(registry: Mapping[str, AgentCore], names: set[str], reference: str) -> None:
    """Raise `RegistryError` naming the trace's agents the registry does not define."""
    missing = sorted(names - set(reachable(registry)))
    if missing:
        raise RegistryError(
            f"--agents {reference}: no agent named {', '.join(map(repr, missing))} (the trace's "
            f"agents: {', '.join(sorted(names))})"
        )


def registry_definitions(registry: Mapping[str, AgentCore], entry: str) -> dict[str, dict[str, Any]]:
    """The registry's agents reachable from `entry` as `janux.agent.definitions` records them (what
    the what-ifs edit)."""
    document = json.loads(definitions_json(reachable(registry)[entry]))
    agents: dict[str, dict[str, Any]] = document["agents"]
    return agents


def user_agents(
    registry: object,
    entry: str,
    recording: Recording,
    models: Mapping[str, ReplayModel],
    *,
    live_tools: bool = False,
    definitions: Mapping[str, Mapping[str, Any]] | None = None,
) -> Agent:
    """The registry's `entry` agent rebuilt for a replay: each model from `models` (an agent without
    recorded rounds gets an empty script), tools as recorded unless `live_tools`, budgets, policy and
    prices from `definitions` where given."""
    agents = reachable(registry_of(registry))
    if entry not in agents:
        raise RegistryError(
            f"the registry has no agent named {entry!r} (it has: {', '.join(sorted(agents))})"
        )
    rebuilt: dict[str, Agent] = {}

    def rebuild(agent: AgentCore) -> Agent:
        if agent.name not in rebuilt:
            overlay = (definitions or {}).get(agent.name)
            model = models.get(agent.name) or recording.model(agent.name, _model_name(agent), [])
            rebuilt[agent.name] = _rebuilt(agent, model, rebuild, recording, live_tools, overlay)
        return rebuilt[agent.name]

    return rebuild(agents[entry])


def _model_name(agent: AgentCore) -> str:
    model = agent.spec.model
    return model if isinstance(model, str) else model.model_name if model is not None else agent.name


def _rebuilt(
    agent: AgentCore,
    model: ReplayModel,
    rebuild: Callable[[AgentCore], Agent],
    recording: Recording,
    live_tools: bool,
    overlay: Mapping[str, Any] | None,
) -> Agent:
    spec = agent.spec
    settings = overlay or {}
    tools, fallback_tools, handler = spec.tools, spec.fallback_tools, spec.fallback_handler
    if not live_tools:
        tools = [_answering(tool, recording.tool(tool.name)) for tool in spec.tools]
        fallback_tools = [
            _answering(tool, recording.fallback_tool(tool.name)) for tool in spec.fallback_tools
        ]
        handler = recording.fallback_handler if handler is not None else None
    cost = settings["cost"] if "cost" in settings else _cost_of(spec.cost)
    return Agent(
        spec.name,
        instructions=spec.instructions,
        description=spec.description,
        model=model,
        tools=tools,
        subagents=[_subagent(sub, rebuild, settings) for sub in spec.subagents],
        handoffs=[
            handoff.model_copy(update={"agent": rebuild(core_of(handoff.agent))}) for handoff in spec.handoffs
        ],
        tool_filter=spec.tool_filter,
        cost=Cost(**cost) if cost is not None else None,
        max_turns=int(settings.get("max_turns", spec.max_turns)),
        policy=_policy(spec.policy, settings.get("policy") or {}),
        parallel_tool_calls=spec.parallel_tool_calls,
        rate_limit=spec.rate_limit,
        input_guardrails=spec.input_guardrails,
        fallback_tools=fallback_tools,
        fallback_handler=handler,
        listeners=spec.listeners,
        settings=spec.settings,
    )


def _cost_of(cost: Cost | None) -> dict[str, float] | None:
    return None if cost is None else {"input": cost.input, "output": cost.output}


def _answering(tool: Tool, recorded: Tool) -> Tool:
    """The user's tool as the model sees it (name, description, schema), answering as recorded; the
    recorded call's raw arguments are matched, so the user's validator does not rewrite them."""
    return dataclasses.replace(tool, function=recorded.function, validator=None)


def _subagent(sub: Subagent, rebuild: Callable[[AgentCore], Agent], settings: Mapping[str, Any]) -> Subagent:
    target = core_of(sub.agent)
    update: dict[str, Any] = {"agent": rebuild(target)}
    for link in settings.get("subagents") or ():
        if link.get("agent") == target.name and link.get("tool_name") == sub.tool_name:
            update.update({line: link[line] for line in BUDGET_LINES if line in link})
    return sub.model_copy(update=update)


def _policy(policy: HandoffPolicy, changed: Mapping[str, Any]) -> HandoffPolicy:
    update = {
        key: OnFailure(changed[key]) if key.startswith("on_") else changed[key]
        for key in POLICY_LINES
        if key in changed
    }
    return policy.model_copy(update=update) if update else policy
