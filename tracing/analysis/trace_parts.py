"""Plain dataclasses of a rebuilt trace: agent loops, delegations, attempts, costs, checks, failures.

Everything the pages show is one of these; they carry indexes into each other (not object
references) so a rebuilt trace is cheap to build, copy and compare. Their usage is the project's
one usage value, `janux.usage.Usage` (re-exported here with `plus` and `COST_DECIMALS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from janux.usage import COST_DECIMALS, Usage, plus

UsageSource = Literal["recorded", "derived", "estimated", "none"]
"""Where a node's own usage came from: `janux.turn.*` (recorded), summed from its inference spans
(derived, cost only where the rounds carry `janux.round.cost`), priced from the price table
(estimated), or nothing at all."""

Severity = Literal["error", "warning", "info"]
"""How bad a failed check is: `error` breaks the contract, `warning` is suspicious data, `info` is
a note about another runtime's conventions."""


__all__ = [
    "COST_DECIMALS",
    "AgentNode",
    "Attempt",
    "BudgetBurn",
    "Check",
    "Delegation",
    "Failure",
    "FailureKind",
    "Severity",
    "Usage",
    "UsageSource",
    "plus",
]


@dataclass(slots=True)
class Attempt:
    """One run of a delegated agent loop (one `invoke_agent` span under a delegation)."""

    number: int
    """1..n: `janux.handoff.attempt`, else the order among siblings."""
    node: int
    """Index of the attempt's agent loop in `TraceView.nodes`."""
    span_id: str
    """Span id of the attempt's `invoke_agent` span."""
    duration_ms: float | None
    """Wall clock of the attempt; None while the span is still open."""
    status: Literal["ok", "error", "open"]
    """`error` when the span ended with status ERROR, `open` when it has no end yet."""
    error_type: str | None = None
    """`error.type` of a failed attempt (`timeout`, `model_error`, ...)."""
    stop_reason: str | None = None
    """`janux.stop_reason` when a budget line cut the loop."""
    error: str | None = None
    """The failed attempt's error message (its span's status message), whole."""


@dataclass(slots=True)
class Delegation:
    """One delegation or transfer: an edge of the handoff tree from a caller loop to its attempts."""

    index: int
    """Position in `TraceView.delegations`."""
    key: str
    """Stable id: the tool span id, or `direct:<agent span id>` for agent-under-agent nesting."""
    tool_span_id: str | None
    """The `execute_tool` span carrying the delegation, None for direct nesting."""
    parent_node: int | None
    """Calling loop (index in `TraceView.nodes`); None when the caller's spans are missing."""
    tool: str
    """Tool name (`delegate.researcher`), or the target agent for direct nesting."""
    kind: Literal["delegate", "transfer"]
    """Delegation to a subagent, or a transfer of the conversation."""
    target: str
    """Subagent or transfer target name."""
    status: str
    """Final status (`completed`, `failed`, `fallback`, `denied`, `cut`), `open` when no
    HANDOFF_END was seen, or `completed`/`failed` inferred for other runtimes."""
    attempts: list[Attempt] = field(default_factory=list)
    """Attempts in order."""
    recorded_attempts: int | None = None
    """`janux.handoff.attempts` as recorded, None for other runtimes."""
    duration_ms: float | None = None
    """Wall clock of the whole delegation (`janux.handoff.duration_ms`, else the tool span)."""
    start_ns: int = 0
    """Start of the tool span (or of the first attempt)."""
    deny_reason: str | None = None
    """Policy rule that denied it."""
    stop_reason: str | None = None
    """Budget line that cut it."""
    error: str | None = None
    """Human-readable error (`janux.handoff.error`, else the status message)."""
    error_type: str | None = None
    """`error.type` of the tool span, else of the last failed attempt."""
    handoff_id: str | None = None
    """`janux.handoff.id`."""
    session_mode: str | None = None
    """`new_session` or `reuse_session`."""
    depth: int | None = None
    """`janux.handoff.depth`: depth the delegated agent runs at."""
    task: str | None = None
    """The task text, only when content capture was on."""
    output: str | None = None
    """The delegation's output, only when content capture was on."""
    has_start: bool = False
    """A HANDOFF_START event was seen."""
    has_end: bool = False
    """A HANDOFF_END event was seen."""
    cost: Usage = field(default_factory=Usage)
    """Inclusive usage of every attempt (and everything they delegated); nothing when it shares
    its attempts with another delegation, which carries them."""
    shares_run: bool = False
    """Its attempts are another delegation's (a Strands graph node fed by several nodes runs once):
    that one counts them, this one adds nothing to any sum (`readers.structure.Edge.shares_run`)."""
    recorded: bool = False
    """True for janux delegations (events or `janux.handoff.*` attributes present)."""
    found: str = "recorded"
    """How the edge was found: `recorded`, `tool nesting`, `workflow edge`, `span link` or `time
    containment` (`readers.loops.FoundBy`)."""
    caller: str | None = None
    """Agent that delegated or handed off; None when the caller's spans are missing. A loop that
    transferred is named after its target, so a transfer's caller is the agent it came from."""

    @property
    def attempt_count(self) -> int:
        """Attempts seen as spans (the recorded count when no span was seen)."""
        if self.attempts:
            return len(self.attempts)
        return self.recorded_attempts or 0


@dataclass(slots=True)
class AgentNode:
    """One agent loop: a node of the handoff tree."""

    index: int
    """Position in `TraceView.nodes`."""
    span_id: str
    """Its `invoke_agent` span id ("" for the synthetic node holding loose inference spans)."""
    agent: str
    """`gen_ai.agent.name` (else the span name)."""
    start_ns: int
    """Start of the loop span."""
    duration_ns: int
    """Duration of the loop span (negative when still open)."""
    parent: int | None = None
    """Calling loop, None at a root."""
    via: int | None = None
    """Delegation that started this loop, None at a root."""
    delegations: list[int] = field(default_factory=list)
    """Delegations this loop made, in start order."""
    depth: int = 0
    """Depth in the handoff tree (0 at a root)."""
    own: Usage = field(default_factory=Usage)
    """This loop's own rounds only."""
    inclusive: Usage = field(default_factory=Usage)
    """Own plus everything delegated below."""
    own_source: UsageSource = "none"
    """Where `own` came from."""
    chat_spans: list[int] = field(default_factory=list)
    """Indexes (in the span index) of this loop's inference spans."""
    attempt: int | None = None
    """`janux.handoff.attempt` when this loop is a delegation attempt."""
    status: Literal["ok", "error", "open"] = "ok"
    """Span status of the loop."""
    error_type: str | None = None
    """`error.type` of a failed loop."""
    stop_reason: str | None = None
    """`janux.stop_reason` when a budget line cut it."""
    conversation_id: str | None = None
    """`gen_ai.conversation.id`."""
    transferred_from: str | None = None
    """`janux.handoff.from` on a turn that a transfer handed over."""
    transferred_to: str | None = None
    """`janux.handoff.to` on a turn that a transfer handed over."""
    incomplete: bool = False
    """True when the loop hangs below a missing parent (shown under "incomplete trace")."""
    synthetic: bool = False
    """True for the stand-in node holding inference spans outside any agent loop."""
    janux: bool = False
    """True when the loop carries `janux.*` accounting."""
    segment: int = 0
    """Which agent segment of its span this loop is: 0 for the first (or only), n after the n-th
    transfer (a Janux loop that transferred is one node per agent that held the conversation)."""
    segmented: bool = False
    """True when its span holds several agent segments: its own usage is its rounds' then, and the
    span's `janux.turn.*` is the sum over the segments."""


@dataclass(slots=True)
class Check:
    """One reconciliation check of the trace contract."""

    name: str
    """Which rule: `turn_vs_rounds`, `bill_vs_turns`, `usage_on_agent_span`, `attempts_recorded`."""
    ok: bool
    """True when the rule holds."""
    subject: str
    """What was checked (agent name and span id, or the trace)."""
    message: str
    """One line a person can read."""
    severity: Severity = "error"
    """How bad a failure is."""
    span_id: str | None = None
    """Span the check is about."""
    expected: str = ""
    """The reference value (for example the chat-span sum)."""
    actual: str = ""
    """The value found (for example `janux.turn.*`)."""


FailureKind = Literal["denied", "failed", "fallback", "cut", "timeout", "retried", "open", "error"]
"""Why a handoff shows in the Failures view: its final status, a timed-out attempt, a failed attempt
retried to success (`retried`: the handoff itself did not fail), a missing HANDOFF_END, or an ERROR
agent span of another runtime."""


@dataclass(slots=True)
class Failure:
    """One failed, denied, cut, timed-out or unfinished handoff."""

    kind: FailureKind
    """What went wrong."""
    reason: str
    """Deny rule, budget line, error type or `missing HANDOFF_END`: what the view groups by."""
    trace_id: str
    """Trace it belongs to."""
    span_id: str
    """Tool span (or agent span) to inspect."""
    caller: str | None
    """Agent that delegated."""
    target: str
    """Subagent or transfer target."""
    tool: str
    """Delegation tool."""
    attempts: int
    """Attempts that ran."""
    timeouts: int = 0
    """Attempts that timed out (`error.type` = timeout), whatever the final status."""
    status: str = ""
    """Final status of the handoff (`completed`, `fallback`, `failed`, ..., `open`; `error` for a
    failed loop of another runtime): a timed-out attempt may still end in a fallback or a success."""
    error: str | None = None
    """Error text."""
    duration_ms: float | None = None
    """Wall clock of the delegation."""
    task: str | None = None
    """Task text, only when content capture was on."""
    start_ns: int = 0
    """When it started."""
    delegation: int | None = None
    """Index in `TraceView.delegations`."""

    def has_kind(self, kind: str) -> bool:
        """True when the handoff belongs under `kind`: its own kind, or `timeout` for any handoff
        with a timed-out attempt (so a timeout that ended in a fallback is still found as one)."""
        return self.kind == kind or (kind == "timeout" and self.timeouts > 0)


@dataclass(slots=True)
class BudgetBurn:
    """How much of its budget a delegated loop used."""

    node: int
    """Index of the loop in `TraceView.nodes`."""
    agent: str
    """Agent name."""
    attempt: int | None
    """Attempt number."""
    turns_used: int
    """Model rounds made."""
    max_turns: int | None
    """`janux.budget.max_turns`."""
    tokens_used: int
    """Input plus output tokens of its own rounds."""
    max_tokens: int | None
    """`janux.budget.max_tokens`."""
    ms_used: float | None
    """Wall clock held to `max_ms`: the whole delegation's when a time budget is set (it covers
    retries), else the attempt's own; None while open."""
    max_ms: float | None
    """`janux.budget.max_ms`."""
    stop_reason: str | None
    """The budget line that cut it, if any."""

    def fraction(self, what: Literal["turns", "tokens", "ms"]) -> float | None:
        """Used / limit for one budget line, None when there is no limit."""
        used: float | None
        limit: float | None
        if what == "turns":
            used, limit = self.turns_used, self.max_turns
        elif what == "tokens":
            used, limit = self.tokens_used, self.max_tokens
        else:
            used, limit = self.ms_used, self.max_ms
        if used is None or not limit:
            return None
        return used / limit
