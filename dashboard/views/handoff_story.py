"""A failed handoff explained in one screen, read off one rebuilt trace.

The handoff record (rule or budget line, attempts, timings), the task, the subagent's last model
round and tool results before it failed (content only when it was captured), exception events,
the budget burn at the cut, and how to reproduce it offline (`janux replay` and its test file).
Plain data; the page lays it out and escapes every value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from opentelemetry.semconv.attributes import exception_attributes as exc

from janux.replay.source import expectation, replay_source
from janux.tracing import conventions as c
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.failures import Decision, decided_by
from janux.tracing.analysis.replay_outcome import run_outcome
from janux.tracing.analysis.replay_plan import ReplayUnavailable, replay_plan
from janux.tracing.analysis.trace_parts import BudgetBurn, Delegation
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.records import SpanRecord, attr_int, attr_str

EXCEPTION_EVENT = "exception"
"""OpenTelemetry's event name for a recorded exception."""
NOT_CAPTURED = "(not captured: content capture was off)"
"""Shown where content would be, had it been captured."""

RULE_DOCS: dict[str, str] = {
    c.DENY_ALLOWED_TOOLS: "The caller's policy lists the tools it may call (allowed_tools); "
    "this one is not among them.",
    c.DENY_DENIED_TOOLS: "The caller's policy names this tool in denied_tools.",
    c.DENY_MAX_DEPTH: "The delegation would run deeper than the policy's max_depth.",
    c.DENY_TOOL_FORBIDDEN: "The tool is not on the calling agent's surface (it has no such subagent or "
    "handoff).",
    c.DENY_RATE_LIMITED: "The caller's rate limit had no slot left.",
    c.DENY_GUARDRAIL: "An input guardrail of the caller refused the task text.",
    c.STOP_MAX_TURNS: "Budget line: the subagent used all its model rounds (max_turns).",
    c.STOP_MAX_TOKENS: "Budget line: the subagent used all its tokens (max_tokens).",
    c.STOP_MAX_TIME: "Budget line: the delegation ran out of time (max_ms).",
}
"""What each deny rule and budget line means (docs/runtime.md, "Governance: HandoffPolicy")."""
RULE_DOC_REF = "docs/runtime.md, section Governance: HandoffPolicy"
"""Where the rules are documented."""


@dataclass(slots=True)
class RoundFacts:
    """One model round of the failing subagent."""

    model: str
    """Response (else request) model."""
    input_tokens: int | None
    """`gen_ai.usage.input_tokens`."""
    output_tokens: int | None
    """`gen_ai.usage.output_tokens`."""
    finish_reasons: str
    """`gen_ai.response.finish_reasons`, joined."""
    status: str
    """ok, error (with `error.type`) or open."""
    output: str
    """The captured output messages, else `NOT_CAPTURED`."""


@dataclass(slots=True)
class ToolFacts:
    """One tool call the failing subagent made."""

    tool: str
    """Tool name."""
    status: str
    """ok, `error: ...` or open."""
    duration: str
    """Wall clock."""
    result: str
    """The captured result, else `NOT_CAPTURED`."""


@dataclass(slots=True)
class ExceptionFacts:
    """One exception event."""

    span: str
    """Span it was recorded on."""
    type: str
    """`exception.type`."""
    message: str
    """`exception.message`."""
    stacktrace: str
    """`exception.stacktrace` ("" when not recorded)."""


@dataclass(slots=True)
class HandoffStory:
    """Everything the failed-handoff screen shows."""

    delegation: Delegation
    """The handoff as rebuilt."""
    decision: Decision | None
    """What decided how it ended (rule, budget line, error type and message, missing end); None
    for a handoff that did not go wrong."""
    rule_doc: str | None
    """What that rule or budget line means."""
    attempts: pd.DataFrame
    """One row per attempt: how it ended (`outcomes.attempt_outcome`: `cut: max_turns`, never "ok"
    for a cut attempt), error type, message, duration, stop reason."""
    task: str
    """The task text, else `NOT_CAPTURED`."""
    last_round: RoundFacts | None
    """The last model round of the last attempt, None when it made none."""
    tool_results: list[ToolFacts] = field(default_factory=list)
    """Tool calls of the last attempt, in order."""
    exceptions: list[ExceptionFacts] = field(default_factory=list)
    """Exception events on the tool span and everything below it."""
    budgets: list[BudgetBurn] = field(default_factory=list)
    """Budget burn of the attempts."""


def find_delegation(view: TraceView, span_id: str) -> Delegation | None:
    """The delegation whose tool span (or first attempt span, for direct nesting) is span_id."""
    for d in view.delegations:
        if d.tool_span_id == span_id or (
            d.tool_span_id is None and d.attempts and d.attempts[0].span_id == span_id
        ):
            return d
    return None




def _subtree(view: TraceView, pos: int) -> list[int]:
    out, stack = [], [pos]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(view.index.children[current]))
    return out


def _round(span: SpanRecord) -> RoundFacts:
    attrs = span.attributes
    reasons = attrs.get(c.GEN_AI_RESPONSE_FINISH_REASONS)
    finish = ", ".join(str(r) for r in reasons) if isinstance(reasons, (list, tuple)) else str(reasons or "")
    return RoundFacts(
        model=attr_str(attrs, c.GEN_AI_RESPONSE_MODEL) or attr_str(attrs, c.GEN_AI_REQUEST_MODEL) or "",
        input_tokens=attr_int(attrs, c.GEN_AI_USAGE_INPUT_TOKENS),
        output_tokens=attr_int(attrs, c.GEN_AI_USAGE_OUTPUT_TOKENS),
        finish_reasons=finish, status=span.status,
        output=attr_str(attrs, c.GEN_AI_OUTPUT_MESSAGES) or NOT_CAPTURED,
    )  # fmt: skip


def _attempts_frame(view: TraceView, d: Delegation) -> pd.DataFrame:
    rows = []
    for a in d.attempts:
        span = view.span(a.span_id)
        message = span.status_message if span is not None else ""
        rows.append(
            {"attempt": a.number, "status": outcomes.attempt_outcome(a), "error type": a.error_type,
             "message": message or None, "stop reason": a.stop_reason, "duration": fmt.ms(a.duration_ms),
             "span": a.span_id}
        )  # fmt: skip
    return pd.DataFrame(
        rows, columns=["attempt", "status", "error type", "message", "stop reason", "duration", "span"]
    )


def _last_attempt_work(view: TraceView, d: Delegation) -> tuple[RoundFacts | None, list[ToolFacts]]:
    if not d.attempts:
        return None, []
    node = view.nodes[d.attempts[-1].node]
    last = view.index.spans[node.chat_spans[-1]] if node.chat_spans else None
    pos = view.index.by_id.get(node.span_id)
    tools = []
    if pos is not None:
        for child in view.index.children[pos]:
            span = view.index.spans[child]
            if span.attributes.get(c.GEN_AI_OPERATION_NAME) == c.OP_EXECUTE_TOOL:
                result = attr_str(span.attributes, c.GEN_AI_TOOL_CALL_RESULT) or NOT_CAPTURED
                name = attr_str(span.attributes, c.GEN_AI_TOOL_NAME) or span.name
                tools.append(ToolFacts(name, span.status, fmt.ms(span.duration_ns / 1e6), result))
    return (_round(last) if last is not None else None), tools


def _exceptions(view: TraceView, d: Delegation) -> list[ExceptionFacts]:
    roots = [d.tool_span_id] if d.tool_span_id else [a.span_id for a in d.attempts]
    found = []
    for span_id in roots:
        pos = view.index.by_id.get(span_id)
        for p in _subtree(view, pos) if pos is not None else []:
            span = view.index.spans[p]
            for event in span.events:
                if event.name == EXCEPTION_EVENT:
                    a = event.attributes
                    kind = attr_str(a, exc.EXCEPTION_TYPE) or ""
                    message = attr_str(a, exc.EXCEPTION_MESSAGE) or ""
                    trace = attr_str(a, exc.EXCEPTION_STACKTRACE) or ""
                    found.append(ExceptionFacts(span.span_id, kind, message, trace))
    return found


def handoff_story(view: TraceView, span_id: str) -> HandoffStory | None:
    """The story of the delegation at span_id, None when the trace has no such delegation."""
    d = find_delegation(view, span_id)
    if d is None:
        return None
    decision = decided_by(d)
    last_round, tools = _last_attempt_work(view, d)
    attempt_nodes = {a.node for a in d.attempts}
    doc = RULE_DOCS.get(decision.name) if decision is not None and decision.by != "error" else None
    return HandoffStory(
        delegation=d, decision=decision, rule_doc=doc, attempts=_attempts_frame(view, d),
        task=d.task if d.task is not None else NOT_CAPTURED, last_round=last_round, tool_results=tools,
        exceptions=_exceptions(view, d), budgets=[b for b in view.budgets if b.node in attempt_nodes],
    )  # fmt: skip


def burn_frame(budgets: list[BudgetBurn]) -> pd.DataFrame:
    """Budget burn per attempt: used / limit for turns, tokens and ms, as every budget cell reads
    (`outcomes.budget_cell`: `3 / 5 (60%)`, `3 (no limit)`, `open / 5`)."""
    rows = []
    for b in budgets:
        rows.append(
            {"agent": b.agent, "attempt": b.attempt, "turns": outcomes.budget_cell(b.turns_used, b.max_turns),
             "tokens": outcomes.budget_cell(b.tokens_used, b.max_tokens),
             "ms": outcomes.budget_cell(b.ms_used, b.max_ms), "cut by": b.stop_reason}
        )  # fmt: skip
    return pd.DataFrame(rows, columns=["agent", "attempt", "turns", "tokens", "ms", "cut by"])


@dataclass(frozen=True, slots=True)
class Reproduction:
    """How to run a failed handoff again offline: the command, and the test file to keep."""

    command: str
    """`janux replay TRACE --span SPAN --write-test PATH`."""
    file_name: str
    """Name to save the test file as."""
    test_file: str | None
    """The pytest file `--write-test` writes (asserting the recorded outcome); None when the trace
    cannot be replayed."""
    problem: str | None
    """Why it cannot be replayed (`no recorded model outputs: ...`), None when it can."""


def reproduction(view: TraceView, d: Delegation) -> Reproduction:
    """The replay of the trace `d` belongs to, as a command and a test file (docs/replay.md)."""
    span = d.tool_span_id or (d.attempts[0].span_id if d.attempts else "")
    file_name = f"test_handoff_{span[:8] or view.trace_id[:8]}.py"
    command = f"janux replay {view.trace_id} --span {span} --write-test tests/{file_name}"
    try:
        plan = replay_plan(view.index.spans)
    except ReplayUnavailable as exc:
        return Reproduction(command, file_name, None, str(exc))
    expected = expectation(run_outcome(view))
    source = replay_source(plan, plan.definitions["agents"], expected=expected, command=command)
    return Reproduction(command, file_name, source, None)
