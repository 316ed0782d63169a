"""One trace as the agent map sees it: its loops (with own and inclusive usage) and its delegations.

The rules of `janux.dashboard.reconstruct` (tree.py, costs.py, failures.py) for what a delegation's
status, failure kind, reason, attempts and cost are, applied to link rows. Two readers fill the
loops and delegations: `walk` (traces with Janux accounting, from their recorded fields) and
`foreign_rows` (every other trace, as `janux.tracing.foreign.facts` read it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from janux.tracing import conventions as c
from janux.tracing.sources.agentmap.classify import LinkRow
from janux.tracing.sources.agentmap.model import MapUsage

LOOSE_AGENT = "(no agent)"
"""The node holding inference rounds that run outside any agent loop (as on the Trace page)."""
MISSING_END = "missing HANDOFF_END"
"""Reason of a delegation whose HANDOFF_START has no HANDOFF_END (as on the Failures page)."""
MAX_WALK = 256
"""Longest parent chain followed; a longer one (or a cycle) ends the walk."""
_TOOL_PREFIXES = ("delegate.", "handoff.", "transfer_to_")


@dataclass(slots=True)
class TraceLinks:
    """What a source hands the builder for one trace."""

    trace_id: str
    """Trace id."""
    rows: Sequence[LinkRow]
    """Link rows of its agent spans and (at least) its delegating tool spans; or, for a trace
    without Janux accounting, its resolved rows (`foreign_rows`)."""
    inference: dict[str, MapUsage] = field(default_factory=dict)
    """Usage of its inference spans, summed per parent span id (`(no parent)` key: ""); not used
    for resolved rows, which carry each loop's own usage."""
    parents: dict[str, str] = field(default_factory=dict)
    """Parent of every other span on a path between link rows and inference (span -> parent)."""

    @property
    def resolved(self) -> bool:
        """True when the rows were resolved from the whole trace (`LinkRow.resolved`): a trace's
        rows are all resolved or none (the store replaces them together), so the first one says."""
        return bool(self.rows) and bool(self.rows[0].resolved)


def target_from_tool(tool: str) -> str:
    """Best guess of a target from a tool name (`delegate.researcher` -> `researcher`)."""
    for prefix in _TOOL_PREFIXES:
        if tool.startswith(prefix) and len(tool) > len(prefix):
            return tool[len(prefix) :]
    return tool


@dataclass(slots=True)
class MapLoop:
    """One agent loop of a trace."""

    row: LinkRow
    """Its agent row."""
    parent: MapLoop | None = None
    """The loop it runs under (None at a top-level loop)."""
    own: MapUsage = field(default_factory=MapUsage)
    """Its own rounds."""
    inclusive: MapUsage | None = None
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


def turn_usage(row: LinkRow) -> MapUsage:
    """The own usage an agent row carries (`janux.turn.*`, or a resolved loop's rounds)."""
    return MapUsage(row.input_tokens or 0, row.output_tokens or 0, row.cost, row.unpriced_tokens or 0)


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


def path_of(loop: MapLoop) -> tuple[str, ...]:
    """Agent names from the loop's top-level loop down to it (cached on every loop passed)."""
    if loop.path is None:
        chain: list[MapLoop] = []
        current: MapLoop | None = loop
        while current is not None and current.path is None and len(chain) < MAX_WALK:
            chain.append(current)
            current = current.parent
        prefix: tuple[str, ...] = current.path if current is not None and current.path else ()
        for item in reversed(chain):
            prefix = (*prefix, item.row.name)
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
    cost: MapUsage
    """Inclusive usage of its attempts."""


TraceFacts = tuple[list[MapLoop], list[DelegationFacts]]
"""One trace's loops (usage filled) and delegations: what a map adds up (and what may be cached)."""


def _status(tool: LinkRow | None, attempts: list[MapLoop]) -> str:
    if tool is not None and tool.resolved:
        return tool.status  # the facts' status, as the trace list counts it
    if tool is not None and tool.has_start and not tool.has_end:
        return "open"
    if (tool is None or not tool.janux) and attempts:
        last = attempts[-1].row.status
        return "open" if last == "open" else (c.STATUS_FAILED if last == "error" else c.STATUS_COMPLETED)
    return (tool.status if tool is not None else "") or c.STATUS_COMPLETED


def _failure(status: str, timeouts: int) -> str | None:
    if status in c.FAILING_STATUSES or status == "open":
        return status
    return c.ERROR_TIMEOUT if timeouts else None


def _reason(kind: str | None, tool: LinkRow | None, error_type: str | None) -> str:
    if kind is None:
        return ""
    if kind == "open":
        return MISSING_END
    if kind == c.ERROR_TIMEOUT:
        return c.ERROR_TIMEOUT
    values = (tool.deny_reason, tool.stop_reason, error_type, tool.error) if tool else (error_type,)
    return next((v for v in values if v), kind)


def _caller(delegation: MapDelegation, kind: str, target: str) -> str:
    loop = delegation.caller
    if loop is None:
        return ""
    row = loop.row
    if kind == c.KIND_TRANSFER and row.transfer_from and row.transfer_to == target:
        return row.transfer_from
    return row.name


def delegation_facts(delegation: MapDelegation) -> DelegationFacts:
    """The facts of one delegation (rules of the Trace page's handoff tree)."""
    tool = delegation.tool
    attempts = _attempt_order(delegation.attempts)
    first = attempts[0].row if attempts else None
    name = tool.name if tool is not None else ""
    target = (tool.target if tool is not None else "") or (first.name if first else target_from_tool(name))
    kind = tool.kind if tool is not None else c.KIND_DELEGATE
    status = _status(tool, attempts)
    failed_types = [a.row.error_type for a in attempts if a.row.error_type]
    error_type = tool.error_type if tool is not None else None
    error_type = error_type or (failed_types[-1] if failed_types else None)
    timeouts = sum(1 for a in attempts if a.row.error_type == c.ERROR_TIMEOUT)
    failure = _failure(status, timeouts)
    if tool is not None:
        ms = tool.handoff_ms if tool.handoff_ms is not None else _ms(tool.duration_ns)
        span_id, start = tool.span_id, tool.start_ns or (first.start_ns if first else 0)
    else:
        assert first is not None
        ms, span_id, start = _ms(first.duration_ns), first.span_id, first.start_ns
    cost = MapUsage()
    for attempt in attempts:
        assert attempt.inclusive is not None
        cost.add(attempt.inclusive)
    recorded = tool.attempt if tool is not None else None
    return DelegationFacts(
        caller=_caller(delegation, kind, target), target=target, kind=kind, tool=name or target,
        status=status, attempts=len(attempts) or recorded or 0, duration_ms=ms, failure=failure,
        reason=_reason(failure, tool, error_type), span_id=span_id, start_ns=start, cost=cost,
    )  # fmt: skip


def _ms(duration_ns: int) -> float | None:
    return None if duration_ns < 0 else duration_ns / 1e6
