"""What-if changes to the recorded agents: `--set researcher.max_tokens=8000`, `--set policy.max_retries=2`,
`--cost researcher=0.15/0.60`.

A change edits the recorded definitions (`janux.agent.definitions`) before the replay is built:

- `AGENT.max_turns|max_tokens|max_ms=N`: the budget line of every delegation to AGENT (and the
  agent's own `max_turns` when it runs a turn); `none` removes a line;
- `policy.FIELD=V` (every agent's policy) or `AGENT.policy.FIELD=V`: `max_retries`, `timeout_ms`,
  `max_depth`, `enabled`, `on_error`, `on_denied`;
- `--cost AGENT=IN/OUT`: the agent's price in USD per million input/output tokens (`none`: unpriced);
- `--model AGENT=MODEL`: the agent's recorded rounds priced as MODEL's, from the price table
  (`janux.tracing.prices`), and its replayed rounds named after MODEL.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from janux.errors import JanuxError
from janux.tracing.prices import TieredPrice, per_million_prices, price_source

BUDGET_FIELDS = ("max_turns", "max_tokens", "max_ms")
"""Budget lines a `--set` can change."""
POLICY_FIELDS = ("max_retries", "timeout_ms", "max_depth", "enabled", "on_error", "on_denied")
"""Policy fields a `--set` can change."""
_ON_FAILURE = ("fail", "fallback_to_primary", "raise")
_DEADLINES = ("timeout_ms", "max_ms")


class WhatIfError(JanuxError, ValueError):
    """A what-if that names an unknown agent or field, or an unreadable value."""


@dataclass(frozen=True, slots=True)
class Change:
    """One `--set`: which agent (None: every agent's policy), which field, what value."""

    agent: str | None
    """Agent name, or None for `policy.FIELD` on every agent."""
    field: str
    """`max_tokens`, or `policy.max_retries`, ..."""
    value: Any
    """The new value (None removes a budget line)."""
    text: str
    """The change as typed."""


def parse_set(text: str) -> Change:
    """`researcher.max_tokens=8000` -> Change; raise `WhatIfError` naming what is wrong."""
    where, sep, raw = text.partition("=")
    if not sep or not where.strip() or not raw.strip():
        raise WhatIfError(f"--set {text!r}: expected AGENT.FIELD=VALUE or policy.FIELD=VALUE")
    parts = where.strip().split(".")
    if parts[0] == "policy" and len(parts) == 2:
        agent, field = None, f"policy.{parts[1]}"
    elif len(parts) == 3 and parts[1] == "policy":
        agent, field = parts[0], f"policy.{parts[2]}"
    elif len(parts) == 2:
        agent, field = parts[0], parts[1]
    else:
        raise WhatIfError(f"--set {text!r}: expected AGENT.FIELD=VALUE or policy.FIELD=VALUE")
    return Change(agent, field, _value(field, raw.strip(), text), text)


def _value(field: str, raw: str, text: str) -> Any:
    name = field.removeprefix("policy.")
    if field.startswith("policy.") and name not in POLICY_FIELDS:
        raise WhatIfError(
            f"--set {text!r}: unknown policy field {name!r} (known: {', '.join(POLICY_FIELDS)})"
        )
    if not field.startswith("policy.") and name not in BUDGET_FIELDS:
        raise WhatIfError(
            f"--set {text!r}: unknown field {name!r} (known: {', '.join(BUDGET_FIELDS)}, policy.*)"
        )
    if name in ("on_error", "on_denied"):
        if raw not in _ON_FAILURE:
            raise WhatIfError(f"--set {text!r}: {name} must be one of {', '.join(_ON_FAILURE)}")
        return raw
    if name == "enabled":
        if raw.lower() not in ("true", "false"):
            raise WhatIfError(f"--set {text!r}: enabled must be true or false")
        return raw.lower() == "true"
    if raw.lower() == "none" and name in ("max_tokens", "max_ms"):
        return None
    try:
        number = float(raw)
    except ValueError:
        raise WhatIfError(f"--set {text!r}: {name} must be a number, got {raw!r}") from None
    if number < 0 or (name in BUDGET_FIELDS and number <= 0):
        raise WhatIfError(f"--set {text!r}: {name} must be {'> 0' if name in BUDGET_FIELDS else '>= 0'}")
    if name in ("max_turns", "max_tokens", "max_retries", "max_depth"):
        if number != int(number):
            raise WhatIfError(f"--set {text!r}: {name} must be a whole number")
        return int(number)
    return number


def parse_cost(text: str) -> tuple[str, dict[str, float] | None]:
    """`researcher=0.15/0.60` -> ("researcher", {"input": 0.15, "output": 0.6}); `researcher=none`
    unprices."""
    agent, sep, raw = text.partition("=")
    if not sep or not agent.strip():
        raise WhatIfError(f"--cost {text!r}: expected AGENT=INPUT/OUTPUT (USD per million tokens)")
    if raw.strip().lower() == "none":
        return agent.strip(), None
    prices = raw.split("/")
    try:
        values = [float(p) for p in prices]
    except ValueError:
        values = []
    if len(values) != 2 or min(values) < 0:
        raise WhatIfError(f"--cost {text!r}: expected AGENT=INPUT/OUTPUT with two prices >= 0")
    return agent.strip(), {"input": values[0], "output": values[1]}


@dataclass(frozen=True, slots=True)
class ModelChange:
    """One `--model`: the agent, the model it is priced as, and that model's table price."""

    agent: str
    """Agent name."""
    model: str
    """The model its rounds are priced (and named) as."""
    cost: dict[str, float]
    """USD per million input/output tokens, from the price table."""


def parse_model(text: str) -> ModelChange:
    """`researcher=gpt-4o-mini` -> the agent priced as gpt-4o-mini; raise `WhatIfError` when the price
    table does not know the model or cannot give it as one rate per token."""
    agent, sep, model = (part.strip() for part in text.partition("="))
    if not sep or not agent or not model:
        raise WhatIfError(f"--model {text!r}: expected AGENT=MODEL (a model of the price table)")
    try:
        prices = per_million_prices(model)
    except TieredPrice as exc:
        raise WhatIfError(f"--model {text}: {exc}; give its price with --cost {agent}=IN/OUT") from None
    if prices is None:
        raise WhatIfError(f"--model {text}: the price table ({price_source()}) has no model {model!r}")
    return ModelChange(agent, model, {"input": prices[0], "output": prices[1]})


def _later(old: Any, new: Any) -> bool:
    """True when the deadline `new` is later than `old` (0 or None: no deadline)."""
    if not new:
        return bool(old)
    return bool(old) and float(new) > float(old)


REPLAY_MODEL = "replay_model"
"""Key of a definition a `--model` changed: the model name its replayed rounds carry."""


def apply_changes(
    agents: dict[str, dict[str, Any]],
    changes: list[Change],
    costs: list[tuple[str, dict[str, float] | None]],
    models: Sequence[ModelChange] = (),
) -> tuple[dict[str, dict[str, Any]], bool]:
    """The definitions with the changes made, and whether a deadline now ends later than recorded."""
    changed = copy.deepcopy(agents)
    later = False
    for change in changes:
        later |= _apply(changed, change)
    for agent, cost in costs:
        _known(changed, agent, f"--cost {agent}")
        changed[agent]["cost"] = cost
    for model in models:
        _known(changed, model.agent, f"--model {model.agent}")
        changed[model.agent]["cost"] = dict(model.cost)
        changed[model.agent][REPLAY_MODEL] = model.model
    return changed, later


def _known(agents: dict[str, dict[str, Any]], agent: str, what: str) -> None:
    if agent not in agents:
        raise WhatIfError(f"{what}: the trace has no agent {agent!r} (agents: {', '.join(sorted(agents))})")


def _apply(agents: dict[str, dict[str, Any]], change: Change) -> bool:
    if change.field.startswith("policy."):
        name = change.field.removeprefix("policy.")
        targets = list(agents) if change.agent is None else [change.agent]
        later = False
        for agent in targets:
            _known(agents, agent, f"--set {change.text}")
            policy = agents[agent].setdefault("policy", {})
            later |= name in _DEADLINES and _later(policy.get(name, 0), change.value)
            policy[name] = change.value
        return later
    assert change.agent is not None
    _known(agents, change.agent, f"--set {change.text}")
    later = False
    links = [
        link for a in agents.values() for link in a.get("subagents", []) if link.get("agent") == change.agent
    ]
    for link in links:
        later |= change.field in _DEADLINES and _later(link.get(change.field), change.value)
        link[change.field] = change.value
    if change.field == "max_turns":
        agents[change.agent]["max_turns"] = change.value
    elif not links:
        raise WhatIfError(
            f"--set {change.text}: {change.agent!r} is never delegated to, so it has no {change.field}"
        )
    return later
