"""The governance checks of delegation and handoff tools: deny rules, input filter, guardrails.

Pure functions over the definitions; `janux.runtime._loop.delegation` and `.handoff` apply them in
the order the `HandoffPolicy` documents. A denial is raised as `HandoffDenied`, which names the rule.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from janux.runtime.definitions import DelegationRequest, Guardrail, HandoffPolicy, RateLimit
from janux.runtime.errors import JanuxError
from janux.runtime.tool_names import matches_any
from janux.tracing.conventions import (
    DENY_ALLOWED_TOOLS,
    DENY_DENIED_TOOLS,
    DENY_MAX_DEPTH,
    DENY_MAX_TRANSFERS,
)

_log = logging.getLogger("janux.runtime")


class HandoffDenied(JanuxError):
    """A rule refused a delegation; `rule` is the `janux.handoff.deny_reason`."""

    error_type = "handoff_denied"

    def __init__(self, rule: str, detail: str, *, policy_rule: bool) -> None:
        super().__init__(detail)
        self.rule = rule
        """`allowed_tools`, `denied_tools`, `max_depth`, `max_transfers`, `tool_forbidden`,
        `rate_limited` or `guardrail`."""
        self.detail = detail
        """Human-readable: which rule, and why."""
        self.policy_rule = policy_rule
        """Whether a HandoffPolicy rule denied it (only those fall back to the primary executor)."""


@dataclass(slots=True, frozen=True)
class PathRules:
    """The deny rules in force for one loop: every enabled HandoffPolicy on its path, combined.

    The path runs from the turn's entry agent down to the loop's own agent (through every agent the
    conversation was transferred to). A subagent or a transfer target can tighten what came before
    it, never loosen it: the depth and transfer limits are the smallest on the path, a tool must
    match every allow-list, and every deny-list applies.
    """

    max_depth: int | None = None
    """Deepest depth a delegated agent may run at; `None` = no enabled policy on the path."""
    allowed: tuple[tuple[str, ...], ...] = ()
    """One allow-list per policy that has one; a tool must match a pattern of each."""
    denied: tuple[str, ...] = ()
    """Every deny-list pattern on the path."""
    max_transfers: int | None = None
    """Most transfers of one turn; `None` = no enabled policy on the path."""

    def tightened_by(self, policy: HandoffPolicy) -> PathRules:
        """These rules plus `policy`'s (unchanged when the policy is disabled)."""
        if not policy.enabled:
            return self
        depth = _smallest(self.max_depth, policy.max_depth)
        transfers = _smallest(self.max_transfers, policy.max_transfers)
        adds_nothing = policy.allowed_tools is None and not policy.denied_tools
        if adds_nothing and (depth, transfers) == (self.max_depth, self.max_transfers):
            return self  # the common case
        allowed = self.allowed
        if policy.allowed_tools is not None:
            allowed = (*allowed, tuple(policy.allowed_tools))
        return PathRules(depth, allowed, (*self.denied, *(policy.denied_tools or ())), transfers)

    def check_transfer(self, transfers_made: int) -> None:
        """Raise `HandoffDenied` when a turn that made `transfers_made` transfers may make no more."""
        if self.max_transfers is not None and transfers_made >= self.max_transfers:
            raise HandoffDenied(
                DENY_MAX_TRANSFERS,
                f"denied by max_transfers: the turn already made {transfers_made} of {self.max_transfers}",
                policy_rule=True,
            )

    def check(self, tool: str, depth: int) -> None:
        """Raise `HandoffDenied` for the first rule (allowed, denied, depth) refusing `tool` at `depth`."""
        if any(not matches_any(tool, patterns) for patterns in self.allowed):
            raise HandoffDenied(
                DENY_ALLOWED_TOOLS,
                f"denied by allowed_tools: {tool!r} is not on the allow-list",
                policy_rule=True,
            )
        if self.denied and matches_any(tool, self.denied):
            raise HandoffDenied(
                DENY_DENIED_TOOLS, f"denied by denied_tools: {tool!r} is on the deny-list", policy_rule=True
            )
        if self.max_depth is not None and depth > self.max_depth:
            # "max_depth N exceeds M": N is the depth the agent would run at, M the path's limit.
            raise HandoffDenied(
                DENY_MAX_DEPTH, f"denied by max_depth {depth} exceeds {self.max_depth}", policy_rule=True
            )

    def denies(self, tool: str, depth: int) -> bool:
        """Whether `check` refuses `tool` at `depth` (the same for every call: no state involved)."""
        try:
            self.check(tool, depth)
        except HandoffDenied:
            return True
        return False


def _smallest(current: int | None, added: int) -> int:
    """A limit of the path after a policy adds its own: the smaller one."""
    return added if current is None else min(current, added)


class InputFilterError(JanuxError):
    """The policy's input filter raised; the delegation fails instead of running an unfiltered task."""

    error_type = "input_filter_error"


def apply_input_filter(policy: HandoffPolicy, request: DelegationRequest) -> str:
    """The task after the policy's input filter (runs once; `None` keeps the original).

    A filter that raises fails the delegation (`InputFilterError`): it exists to scrub or rewrite
    the task, so running the unfiltered task instead would defeat it.
    """
    if policy.input_filter is None:
        return request.task
    try:
        rewritten = policy.input_filter(request)
    except Exception as exc:
        raise InputFilterError(f"input_filter raised {type(exc).__name__}: {exc}") from exc
    return request.task if rewritten is None else str(rewritten)


async def first_refusal(guardrails: Sequence[Guardrail], text: str) -> str | None:
    """The first guardrail's refusal reason for `text`, or `None` when all let it through.

    A guardrail that raises refuses (fail closed): a broken check must not wave input through.
    """
    for guardrail in guardrails:
        try:
            verdict = guardrail(text)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except Exception as exc:
            _log.warning("guardrail %r raised %r; treated as a refusal", guardrail, exc)
            return f"guardrail error: {type(exc).__name__}"
        if verdict:
            return str(verdict)
    return None


@dataclass(slots=True, eq=False)
class SlidingWindow:
    """A caller's delegation rate limit: at most `max_calls` slots per `per_seconds`."""

    limit: RateLimit
    """The limit definition."""
    spent: deque[float]
    """Monotonic times of the slots spent in the current window."""

    @classmethod
    def of(cls, limit: RateLimit) -> SlidingWindow:
        """A fresh window for `limit`."""
        return cls(limit, deque())

    def try_spend(self) -> bool:
        """Spend one slot; `False` when the window is full (nothing spent)."""
        now = time.monotonic()
        horizon = now - self.limit.per_seconds
        while self.spent and self.spent[0] <= horizon:
            self.spent.popleft()
        if len(self.spent) >= self.limit.max_calls:
            return False
        self.spent.append(now)
        return True
