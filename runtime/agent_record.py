"""The agents of a turn as a trace records them with content capture on, so `janux replay` can rebuild them.

    definitions_json(entry)  # '{"version": 1, "entry": "triage", "agents": {"triage": {...}, ...}}'

Every agent reachable from the entry agent (through subagents and handoffs) is written once by name:
its budget lines, price, policy, rate limit, tool filter, the names of its tools and fallback tools,
and how many guardrails it has. No prompt text: instructions are recorded on each `chat` span, and
tools, guardrails, filters and handlers are code, recorded by name or count only. The schema is the
trace contract's (`janux.agent.definitions`, docs/trace-contract.md).
"""

from __future__ import annotations

import json
import weakref
from typing import Any

from janux.runtime.agent_core import AgentCore, core_of
from janux.runtime.definitions import Cost, HandoffPolicy, RateLimit, ToolFilter

DEFINITIONS_VERSION = 1
"""Schema version of `janux.agent.definitions`."""


_WRITTEN: weakref.WeakKeyDictionary[AgentCore, str] = weakref.WeakKeyDictionary()
"""Definitions already written, per entry agent: they are frozen once built, so a turn with capture on
pays for the JSON once per entry agent, not once per turn."""


def definitions_json(entry: AgentCore) -> str:
    """Every agent reachable from `entry`, as the JSON the root span records (computed once per agent)."""
    written = _WRITTEN.get(entry)
    if written is None:
        written = _WRITTEN[entry] = _definitions(entry)
    return written


def _definitions(entry: AgentCore) -> str:
    agents: dict[str, dict[str, Any]] = {}
    pending = [entry]
    while pending:
        agent = pending.pop()
        if agent.name in agents:
            continue
        agents[agent.name] = _agent(agent)
        pending.extend(core_of(sub.agent) for sub in agent.spec.subagents)
        pending.extend(core_of(handoff.agent) for handoff in agent.spec.handoffs)
    document = {"version": DEFINITIONS_VERSION, "entry": entry.name, "agents": agents}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def _agent(agent: AgentCore) -> dict[str, Any]:
    spec = agent.spec
    model = spec.model if isinstance(spec.model, str) or spec.model is None else spec.model.model_name
    return {
        "description": spec.description,
        "model": model,
        "max_turns": spec.max_turns,
        "cost": _cost(spec.cost),
        "policy": _policy(spec.policy),
        "rate_limit": _rate_limit(spec.rate_limit),
        "tool_filter": _tool_filter(spec.tool_filter),
        "parallel_tool_calls": spec.parallel_tool_calls,
        "tools": [tool.name for tool in spec.tools],
        "fallback_tools": [tool.name for tool in spec.fallback_tools],
        "fallback_handler": spec.fallback_handler is not None,
        "guardrails": len(spec.input_guardrails),
        "subagents": [
            {
                "agent": sub.agent.name,
                "tool_name": sub.tool_name,
                "max_turns": sub.max_turns,
                "max_tokens": sub.max_tokens,
                "max_ms": sub.max_ms,
                "session": sub.session.value,
                "description": sub.description,
            }
            for sub in spec.subagents
        ],
        "handoffs": [
            {"agent": h.agent.name, "tool_name": h.tool_name, "description": h.description}
            for h in spec.handoffs
        ],
    }


def _cost(cost: Cost | None) -> dict[str, float] | None:
    return None if cost is None else {"input": cost.input, "output": cost.output}


def _policy(policy: HandoffPolicy) -> dict[str, Any]:
    return {
        "enabled": policy.enabled,
        "max_depth": policy.max_depth,
        "max_retries": policy.max_retries,
        "max_transfers": policy.max_transfers,
        "timeout_ms": policy.timeout_ms,
        "allowed_tools": policy.allowed_tools,
        "denied_tools": policy.denied_tools,
        "on_denied": policy.on_denied.value,
        "on_error": policy.on_error.value,
        "input_filter": policy.input_filter is not None,
    }


def _rate_limit(limit: RateLimit | None) -> dict[str, float] | None:
    return None if limit is None else {"max_calls": limit.max_calls, "per_seconds": limit.per_seconds}


def _tool_filter(tool_filter: ToolFilter | None) -> dict[str, list[str] | None] | None:
    if tool_filter is None:
        return None
    return {"include": tool_filter.include, "exclude": tool_filter.exclude}
