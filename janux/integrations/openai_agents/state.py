"""What the processor remembers between an SDK span's start and its end.

One `Entry` per open SDK span; one `Loop` per agent loop (a run, or one attempt of a
delegation), which owns the `invoke_agent` span and its accounting; one `Turn` per SDK turn
span (the usage fallback for models that report none); one `Mark` per delegation or transfer
(shaped like `janux.tracing.instrument.handoff_events.HandoffMark`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import Span

from janux.tracing.conventions import STATUS_STARTING
from janux.usage import Usage


class Kind(IntEnum):
    """What an SDK span is to the mapping."""

    TASK = 1
    """A `Runner.run` (task span): opens a loop."""
    AGENT = 2
    """An agent span: names the loop's current agent (a later one in the same run is a transfer)."""
    TURN = 3
    """One model turn of a loop (turn span): no span of its own."""
    CHAT = 4
    """A generation or response span: one `chat` round."""
    FUNCTION = 5
    """A function tool: an `execute_tool` span (a delegation when an agent runs inside it)."""
    HANDOFF = 6
    """An SDK handoff: a transfer, recorded as an `execute_tool` span when it ends."""
    GUARDRAIL = 7
    """A guardrail: no span; a trip names the loop's deny reason."""
    OTHER = 8
    """Anything else (custom, MCP, speech spans): no span; children attach to its parent's span."""


@dataclass(slots=True, eq=False)
class Mark:
    """One delegation or transfer, as HANDOFF_START/END and the tool span's final attributes need it."""

    id: str
    """Unique id: the SDK span id of the tool or handoff span."""
    call_id: str
    """Stand-in for the model's call id, which the SDK does not give trace processors: the same span id."""
    kind: str
    """`delegate` or `transfer`."""
    tool: str
    """Tool name."""
    target: str
    """The agent that ran (delegate) or took over (transfer)."""
    depth: int
    """Depth the target runs at."""
    session_mode: str
    """`new_session` (delegations run on fresh history) or `reuse_session` (transfers keep it)."""
    started: float
    """perf_counter() at the start, for `duration_ms`."""
    status: str = STATUS_STARTING
    """`starting`, then the final status."""
    attempts: int = 0
    """Attempts run."""
    duration_ms: float = 0.0
    """Wall clock of the whole delegation."""
    error: str | None = None
    """Why it failed or was denied."""
    deny_reason: str | None = None
    """The rule that denied it."""
    stop_reason: str | None = None
    """The budget line that cut it."""
    output: str | None = None
    """Its output text (recorded only with content capture on)."""
    error_type: str | None = None
    """`error.type` for the tool span when it failed or was denied."""


@dataclass(slots=True, eq=False)
class Turn:
    """One SDK turn of a loop: what is known of its usage, for rounds whose model reported none."""

    mark: int
    """The run's overlap count at the start (-1: overlapped from the start)."""
    known_input: int = 0
    """Input tokens already accounted under this turn (its reported rounds, its delegations)."""
    known_output: int = 0
    """Output tokens already accounted under this turn."""
    pending: list[Pending] = field(default_factory=list)
    """Rounds that ended without usage, waiting for the turn's own figure."""
    used_tools: bool = False
    """Whether a tool or handoff ran in this turn (the round asked for tools)."""
    saw_round: bool = False
    """Whether the model traced a round in this turn."""


@dataclass(slots=True, eq=False)
class Loop:
    """One agent loop: the `invoke_agent` span, its own usage and everything below it."""

    depth: int
    """0 for a run, n for a delegation n levels down."""
    conversation_id: str
    """`gen_ai.conversation.id` of the run."""
    parent: Loop | None = None
    """The calling loop; None for a run."""
    parent_turn: Turn | None = None
    """The caller's turn this loop ran in (its usage counts there)."""
    func: Entry | None = None
    """The function tool span this loop was delegated through; None for a run or direct nesting."""
    span: Span | None = None
    """The `invoke_agent` span, opened when the loop's first agent starts."""
    ctx: Context | None = None
    """`span` as the parent of the spans below it (built once for all of them)."""
    agent: str | None = None
    """The agent holding the loop now (after a transfer: the target)."""
    holders: list[str] = field(default_factory=list)
    """After a transfer: every agent that held the loop's conversation in turn, the holder last."""
    attempt: int = 0
    """Attempt number under its delegation."""
    handoff_id: str = ""
    """`janux.handoff.id` of its delegation."""
    own: Usage = field(default_factory=Usage)
    """Its own rounds (`janux.turn.*`)."""
    inclusive: Usage = field(default_factory=Usage)
    """Its rounds and every loop below (`janux.bill.*` on a run)."""
    outer_exc: BaseException | None = None
    """The exception already being handled when the loop started (not its own failure)."""
    stop_reason: str | None = None
    """`max_turns` when the SDK's turn limit ended it."""
    guardrail: str | None = None
    """Name of the guardrail that tripped in it."""
    error_text: str | None = None
    """The SDK's error on its agent span (already redacted by the SDK's settings)."""
    open_turns: int = 0
    """Run only: turns open now in the whole run."""
    overlaps: int = 0
    """Run only: times two turns of the run that are not nested in each other were open together."""
    closed: bool = False
    """Ended (its span and accounting are final)."""

    @property
    def run(self) -> Loop:
        """The run (root loop) this loop belongs to."""
        loop = self
        while loop.parent is not None:
            loop = loop.parent
        return loop


@dataclass(slots=True, eq=False)
class Entry:
    """One open SDK span."""

    kind: Kind
    """What it is to the mapping."""
    loop: Loop | None
    """The loop it belongs to; None outside any run."""
    turn: Turn | None = None
    """The turn it runs in."""
    tool: Span | None = None
    """The `execute_tool` span children attach to (function spans, and spans nested in one)."""
    func: Entry | None = None
    """The function entry it runs in (itself for a function); set exactly when `tool` is."""
    start_ns: int = 0
    """Start time for spans recorded when they end."""
    name: str = ""
    """Agent name (chat rounds: whose loop), or tool name."""
    sdk_id: str = ""
    """The SDK span id (function and handoff entries: the id of their delegation or transfer)."""
    delegation: Mark | None = None
    """Function entries only: the delegation once an agent ran inside it."""
    nested: Loop | None = None
    """Function entries only: the loop of agents run inside it without a task span."""
    tool_ctx: Context | None = None
    """Function entries only: `tool` as the parent of the spans below it (built once)."""
    outer_exc: BaseException | None = None
    """The exception already being handled at the start."""

    @property
    def anchor(self) -> Context | None:
        """Where its children attach: the tool span inside a tool, else the loop's span (as contexts)."""
        func = self.func
        if func is not None:
            return func.tool_ctx
        return self.loop.ctx if self.loop is not None else None


@dataclass(slots=True, eq=False)
class Pending:
    """A round that ended without usage, kept until its turn ends."""

    entry: Entry
    """Its entry."""
    data: Any
    """Its SDK span data."""
    end_ns: int
    """When it ended."""


@dataclass(slots=True, eq=False)
class TraceState:
    """The open spans and the run-less loop of one SDK trace."""

    conversation_id: str
    """The trace's group id, else its trace id."""
    entries: dict[str, Entry] = field(default_factory=dict)
    """Open spans by SDK span id."""
    loop: Loop | None = None
    """The loop of agents run without a task span at the top level (SDKs without task spans)."""
    outer_exc: BaseException | None = None
    """The exception already being handled when the trace started."""
    loops: list[Loop] = field(default_factory=list)
    """Loops opened in the trace and maybe still open, so none is left unended when the trace ends."""
