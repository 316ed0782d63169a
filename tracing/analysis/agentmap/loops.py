"""One trace as the agent map sees it: its loops (with own and inclusive usage) and its delegations.

The rules of the analysis layer (`failures.failure_kind`/`failure_reason`, the handoff tree's status
and attempt order, `costs`'s inclusive usage) applied to link rows. Two readers fill the
loops and delegations: `walk` (traces with Janux accounting, from their recorded fields) and
`foreign_rows` (every other trace, as `janux.tracing.analysis.readers.structure` read it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from janux.tracing import conventions as c
from janux.tracing.analysis.agentmap.classify import LinkRow
from janux.tracing.analysis.failures import failure_kind, failure_reason
from janux.tracing.analysis.spanread import target_from_tool
from janux.tracing.analysis.trace_parts import Usage

MAX_WALK = 256
"""Longest parent chain followed; a longer one (or a cycle) ends the walk."""
MAX_PATH_DEPTH = 32
"""Longest path kept: the loops of a deeper chain share their first levels, then `DEEPER`, then their
own agent (a path per loop of a chain thousands deep would hold its square: 400 MB at 10,000)."""
DEEPER = "…"
"""The step standing for the levels a collapsed path leaves out."""


@dataclass(slots=True)
class TraceLinks:
    """What a source hands the builder for one trace."""

    trace_id: str
    """Trace id."""
    rows: Sequence[LinkRow]
    """Link rows of its agent spans and (at least) its delegating tool spans; or, for a trace
    without Janux accounting, its resolved rows (`foreign_rows`)."""
    inference: dict[str, Usage] = field(default_factory=dict)
    """Usage of its inference spans, summed per parent span id (`(no parent)` key: ""); not used
    for resolved rows, which carry each loop's own usage."""
    parents: dict[str, str] = field(default_factory=dict)
    """Parent of every other span on a path between link rows and inference (span -> parent)."""

    @property
    def resolved(self) -> bool:
        """True when the rows were resolved from the whole trace (`LinkRow.resolved`): a trace's
        rows are all resolved or none (the store replaces them together), so the first one says."""
        return bool(self.rows) and bool(self.rows[0].resolved)


@dataclass(slots=True)
class MapLoop:
    """One agent loop of a trace."""

    row: LinkRow
    """Its agent row."""
    parent: MapLoop | None = None
    """The loop it runs under (None at a top-level loop)."""
    own: Usage = field(default_factory=Usage)
    """Its own rounds."""
    inclusive: Usage | None = None
    """Own plus every loop below (filled by `fold_inclusive`)."""
    path: tuple[str, ...] | None = None
    """Agent names from its top-level loop down (filled by `path_of`)."""


@dataclass(slots=True)
class MapDelegation:
    """One delegation or transfer of a trace, before its facts are read."""

    tool: LinkRow | None
    """Its tool (or edge) row; None for an agent nested directly in another."""
    caller: MapLoop | None
    """The calling loop (None when unknown)."""
    attempts: list[MapLoop] = field(default_factory=list)
    """Loops that ran it."""


def turn_usage(row: LinkRow) -> Usage:
    """The own usage an agent row carries (`janux.turn.*`, or a resolved loop's rounds)."""
    return Usage(row.input_tokens or 0, row.output_tokens or 0, row.cost, row.unpriced_tokens or 0)


def fold_inclusive(loops: Sequence[MapLoop]) -> None:
    """Inclusive usage of every loop: its own plus the own usage of every loop below it."""
    for loop in loops:
        loop.inclusive = loop.own.copy()
    for loop in loops:
        ancestor, steps = loop.parent, 0
        while ancestor is not None and steps < MAX_WALK:
            assert ancestor.inclusive is not None
            ancestor.inclusive.add(loop.own)
            ancestor, steps = ancestor.parent, steps + 1


def _extended(path: tuple[str, ...], name: str) -> tuple[str, ...]:
    """`path` one level down to `name`, at most `MAX_PATH_DEPTH` long (see `DEEPER`)."""
    if len(path) < MAX_PATH_DEPTH:
        return (*path, name)
    return (*path[: MAX_PATH_DEPTH - 2], DEEPER, name)


def path_of(loop: MapLoop) -> tuple[str, ...]:
    """Agent names from the loop's top-level loop down to it (cached on every loop passed); past
    `MAX_PATH_DEPTH` levels the middle is collapsed into `DEEPER`."""
    if loop.path is None:
        chain: list[MapLoop] = []
        current: MapLoop | None = loop
        while current is not None and current.path is None and len(chain) < MAX_WALK:
            chain.append(current)
            current = current.parent
        prefix: tuple[str, ...] = current.path if current is not None and current.path else ()
        for item in reversed(chain):
            prefix = _extended(prefix, item.row.name)
            item.path = prefix
    return loop.path or (loop.row.name,)


def _attempt_order(attempts: list[MapLoop]) -> list[MapLoop]:
    """Attempts by `janux.handoff.attempt`, else by their order among siblings (then start)."""
    if len(attempts) < 2:
        return attempts
    by_start = sorted(attempts, key=lambda a: (a.row.start_ns, a.row.span_id))
    numbered = [(a.row.attempt if a.row.attempt is not None else n, a.row.start_ns, i) for i, (n, a) in
                enumerate(enumerate(by_start, start=1))]  # fmt: skip
    return [by_start[i] for _, _, i in sorted(numbered)]


@dataclass(slots=True)
class DelegationFacts:
    """What the map (and the Failures page) says about one delegation."""

    caller: str
    """Delegating agent ("" when unknown)."""
    target: str
    """Subagent or transfer target."""
    kind: str
    """`delegate` or `transfer`."""
    tool: str
    """Tool name."""
    status: str
    """Final status (`completed`, `failed`, `fallback`, `denied`, `cut`, `open`)."""
    attempts: int
    """Attempts that ran (the recorded count when no attempt span was seen)."""
    duration_ms: float | None
    """Wall clock of the whole delegation."""
    failure: str | None
    """Failure kind (`denied`, `failed`, `fallback`, `cut`, `timeout`, `open`), None when it did not fail."""
    reason: str
    """Why it failed (deny rule, budget line, error type, error text); "" when it did not."""
    span_id: str
    """Tool span id (first attempt's span for direct nesting)."""
    start_ns: int
    """Start of the delegation."""
    cost: Usage
    """Inclusive usage of its attempts."""


class LoopFacts(NamedTuple):
    """What one agent loop adds to the map: flat, so a map over many traces adds it up without
    following a loop's row, parent or usage objects (computed once per trace, added by every map)."""

    agent: str
    """Agent name (the node)."""
    path: tuple[str, ...]
    """Agent names from its top-level loop down to it."""
    ref: tuple[int, str, str]
    """(start, trace id, span id): how the node's newest traces are picked and linked."""
    duration_ms: float | None
    """Wall clock, None for an open loop and the stand-in for loose rounds (left out of percentiles)."""
    error: bool
    """Ended with status ERROR."""
    top: bool
    """Runs under no other loop (a turn: its inclusive cost is a cost per turn)."""
    own_input: int
    """Own rounds: input tokens."""
    own_output: int
    """Own rounds: output tokens."""
    own_cost: float | None
    """Own rounds: USD of the priced ones (None when none was priced)."""
    own_unpriced: int
    """Own rounds: tokens without a price."""
    inclusive_input: int
    """Own plus everything below: input tokens."""
    inclusive_output: int
    """Own plus everything below: output tokens."""
    inclusive_cost: float | None
    """Own plus everything below: USD (None when nothing was priced)."""
    inclusive_unpriced: int
    """Own plus everything below: tokens without a price."""


_facts = tuple.__new__  # builds a LoopFacts without NamedTuple's Python-level __new__ (a hot loop)


def loop_facts(trace_id: str, loops: Sequence[MapLoop]) -> list[LoopFacts]:
    """The facts of a trace's loops (`fold_inclusive` done): paths, references, flat usage."""
    found = []
    for loop in loops:
        row, own, inclusive = loop.row, loop.own, loop.inclusive
        assert inclusive is not None
        duration = row.duration_ns / 1e6 if row.duration_ns >= 0 and row.span_id else None
        found.append(_facts(LoopFacts, (
            row.name, path_of(loop), (row.start_ns, trace_id, row.span_id), duration, row.status == "error",
            loop.parent is None, own.input_tokens, own.output_tokens, own.cost, own.unpriced_tokens,
            inclusive.input_tokens, inclusive.output_tokens, inclusive.cost, inclusive.unpriced_tokens,
        )))  # fmt: skip
    return found


MapFacts = tuple[list[LoopFacts], list[DelegationFacts]]
"""One trace's loops and delegations: what a map adds up (and what may be cached)."""


def _status(tool: LinkRow | None, attempts: list[MapLoop]) -> str:
    if tool is not None and tool.resolved:
        return tool.status  # the facts' status, as the trace list counts it
    if tool is not None and tool.has_start and not tool.has_end:
        return "open"
    if (tool is None or not tool.janux) and attempts:
        last = attempts[-1].row.status
        return "open" if last == "open" else (c.STATUS_FAILED if last == "error" else c.STATUS_COMPLETED)
    return (tool.status if tool is not None else "") or c.STATUS_COMPLETED


def _reason(kind: str | None, tool: LinkRow | None, error_type: str | None) -> str:
    if kind is None:
        return ""
    if tool is None:
        return failure_reason(kind, error_type)
    return failure_reason(kind, tool.deny_reason, tool.stop_reason, error_type, tool.error)


def _caller(delegation: MapDelegation, kind: str, target: str) -> str:
    loop = delegation.caller
    if loop is None:
        return ""
    row = loop.row
    if kind == c.KIND_TRANSFER and row.transfer_from and row.transfer_to == target:
        return row.transfer_from
    return row.name


def _attempt_sums(attempts: list[MapLoop]) -> tuple[str | None, int, Usage]:
    """The last error type among the attempts, how many timed out, and their inclusive usage."""
    last_error, timeouts, cost = None, 0, Usage()
    for attempt in attempts:
        error_type = attempt.row.error_type
        if error_type:
            last_error = error_type
            timeouts += error_type == c.ERROR_TIMEOUT
        assert attempt.inclusive is not None
        cost.add(attempt.inclusive)
    return last_error, timeouts, cost


def delegation_facts(delegation: MapDelegation) -> DelegationFacts:
    """The facts of one delegation (rules of the Trace page's handoff tree)."""
    tool = delegation.tool
    attempts = _attempt_order(delegation.attempts)
    first = attempts[0].row if attempts else None
    last_error, timeouts, cost = _attempt_sums(attempts)
    if tool is not None and tool.janux and tool.kind == c.KIND_TRANSFER:
        # Its "attempt" is the target's agent segment, run after the transfer completed: an error
        # there is the turn's, not the handoff's (`failures.delegation_failures` reads it so too).
        last_error, timeouts = None, 0
    status = _status(tool, attempts)
    failure = failure_kind(status, timeouts)
    if tool is None:  # an agent nested directly in another: its (first) attempt is the delegation
        assert first is not None
        target = first.name
        return DelegationFacts(
            _caller(delegation, c.KIND_DELEGATE, target), target, c.KIND_DELEGATE, target, status,
            len(attempts), _ms(first.duration_ns), failure, _reason(failure, None, last_error), first.span_id,
            first.start_ns, cost,
        )  # fmt: skip
    target = tool.target or (first.name if first else target_from_tool(tool.name))
    ms = tool.handoff_ms if tool.handoff_ms is not None else _ms(tool.duration_ns)
    start = tool.start_ns or (first.start_ns if first else 0)
    reason = _reason(failure, tool, tool.error_type or last_error)
    return DelegationFacts(
        _caller(delegation, tool.kind, target), target, tool.kind, tool.name or target, status,
        len(attempts) or tool.attempt or 0, ms, failure, reason, tool.span_id, start, cost,
    )  # fmt: skip


def _ms(duration_ns: int) -> float | None:
    return None if duration_ns < 0 else duration_ns / 1e6
