"""How one delegation ends: its `Outcome`, the tool result the caller reads, and the fallback.

A delegation's tool result is JSON: `{subagent, tool, text, steps}` when answered,
`{subagent, tool, stopReason}` when a budget cut it, `{subagent, tool, error, detail}` when it was
refused or failed, or whatever the primary executor returned when it fell back.
"""

from __future__ import annotations

import dataclasses
import json

from janux.runtime._loop.attempts import AttemptsResult, Delegation
from janux.runtime._loop.events import Ending
from janux.runtime._loop.primary import Outcome as PrimaryOutcome
from janux.runtime._loop.primary import invoke_fallback_handler, invoke_tool
from janux.runtime.errors import (
    CODE_FALLBACK_UNAVAILABLE,
    CODE_GUARDRAIL,
    CODE_HANDOFF_DENIED,
    CODE_RATE_LIMITED,
    CODE_TOOL_FORBIDDEN,
)
from janux.runtime.policy import HandoffDenied
from janux.tracing.conventions import (
    DENY_RATE_LIMITED,
    DENY_TOOL_FORBIDDEN,
    STATUS_COMPLETED,
    STATUS_CUT,
    STATUS_DENIED,
    STATUS_FAILED,
    STATUS_FALLBACK,
)

Outcome = Ending
"""The final word on one delegation (its `attempts` are the count its event holds)."""


def result_json(d: Delegation, **fields: object) -> str:
    """A tool result naming the subagent and the tool."""
    return json.dumps({"subagent": d.subagent.agent.name, "tool": d.call.name, **fields}, ensure_ascii=False)


def error_outcome(
    d: Delegation, status: str, code: str, detail: str, deny_reason: str | None = None
) -> Outcome:
    """A refusal or failure: `{subagent, tool, error, detail}`."""
    return Outcome(
        status=status,
        result=result_json(d, error=code, detail=detail),
        error_code=code,
        error=detail,
        deny_reason=deny_reason,
    )


_DENIAL_CODES = {DENY_TOOL_FORBIDDEN: CODE_TOOL_FORBIDDEN, DENY_RATE_LIMITED: CODE_RATE_LIMITED}


def denial_outcome(d: Delegation, denial: HandoffDenied) -> Outcome:
    """A denial naming its rule (`handoff_denied` for the policy's own rules)."""
    code = CODE_HANDOFF_DENIED if denial.policy_rule else _DENIAL_CODES.get(denial.rule, CODE_GUARDRAIL)
    return error_outcome(d, STATUS_DENIED, code, denial.detail, deny_reason=denial.rule)


def attempts_outcome(d: Delegation, result: AttemptsResult) -> Outcome:
    """The outcome of the attempts: answered, cut, or failed (every attempt's error)."""
    if result.stop_reason is not None:
        return Outcome(
            status=STATUS_CUT,
            result=result_json(d, stopReason=result.stop_reason),
            stop_reason=result.stop_reason,
        )
    if result.end is not None:
        text = result.end.text
        return Outcome(
            status=STATUS_COMPLETED, result=result_json(d, text=text, steps=result.end.rounds), output=text
        )
    code = result.error_code or STATUS_FAILED
    return error_outcome(d, STATUS_FAILED, code, "; ".join(result.errors) or code)


async def fallback_outcome(d: Delegation, refused: Outcome) -> Outcome:
    """FALLBACK_TO_PRIMARY: the same call to the caller's fallback tool of that name, else to its
    fallback handler, else a clear 'cannot serve'."""
    caller = d.caller.active.agent
    tool = caller.fallback_tools.get(d.call.name)
    served: PrimaryOutcome
    if tool is not None:
        served = await invoke_tool(tool, d.call)
    elif caller.fallback_handler is None:
        detail = (
            f"{refused.error}; FALLBACK_TO_PRIMARY: the primary executor has no tool named {d.call.name!r}"
        )
        return error_outcome(d, refused.status, CODE_FALLBACK_UNAVAILABLE, detail, refused.deny_reason)
    else:
        record = dataclasses.replace(
            d.event.record(), status=refused.status, error=refused.error, deny_reason=refused.deny_reason,
            attempts=d.attempts,
        )  # fmt: skip
        arguments = dict(d.arguments.raw) if d.arguments is not None else {}
        served = await invoke_fallback_handler(caller.fallback_handler, record, arguments, d.call.name)
    result, error_type, _, why = served
    if error_type is not None:
        detail = f"{refused.error}; the primary executor's {d.call.name!r} failed too ({error_type}: {why})"
        return error_outcome(d, refused.status, error_type, detail, deny_reason=refused.deny_reason)
    return Outcome(
        status=STATUS_FALLBACK,
        result=result,
        error=refused.error,
        deny_reason=refused.deny_reason,
        output=result,
    )
