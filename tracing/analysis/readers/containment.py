"""Time containment: agent runs that no recorded relation places, placed by when they ran.

Some instrumentations hang every agent span directly under the run's root span, a sub-agent run by
another agent's tool call included (the tool span and the run it caused are siblings). Such a run
started inside the tool call's time window: it is that tool call's attempt (a delegation from the
tool's loop). The rule applies only where nothing recorded says otherwise: to a run that is not
below any loop and was reached by no edge, whose parent span is above the tool's loop (the run's
root, a workflow span), or who has none, or who hangs below the same span missing from the trace as
the tool's loop (a run below another missing span may belong anywhere: it stays). Among the tool
calls whose window holds its start, a call that ran no agent yet comes first, then one whose name
holds the agent's name, then the earliest (two tool calls in parallel run their agents in the order
they started).
"""

from __future__ import annotations

from janux.tracing.analysis.readers.loops import Structure
from janux.tracing.analysis.span_index import NO_PARENT


def _ancestors(s: Structure, pos: int) -> set[int]:
    """Positions of the spans above `pos`."""
    found: set[int] = set()
    parent = s.index.parent[pos]
    while parent != NO_PARENT and parent not in found:
        found.add(parent)
        parent = s.index.parent[parent]
    return found


def _below(s: Structure, loop: int, top: int) -> bool:
    """True when `loop` is `top` or a loop below it."""
    seen = 0
    current: int | None = loop
    while current is not None and seen <= len(s.loops):
        if current == top:
            return True
        current, seen = s.loops[current].parent, seen + 1
    return False


def loose_runs(s: Structure) -> list[int]:
    """Loops with an agent span that no edge reached and no loop holds, the run's first agent
    excepted, in start order: the runs the rules below may place."""
    tops = [
        n for n, loop in enumerate(s.loops)
        if loop.pos != NO_PARENT and loop.parent is None and loop.via is None
    ]  # fmt: skip
    return tops[1:]


def unplaced_runs(s: Structure) -> list[int]:
    """`loose_runs` that also started no edge that ran (a graph's entry node feeding another is placed
    by that edge): what a trace reports as `N agent runs not placed`."""
    return [n for n in loose_runs(s) if not any(s.edges[e].attempts for e in s.loops[n].edges)]


def _above(s: Structure, pos: int) -> tuple[set[int], str]:
    """(positions of the spans above `pos`, the parent id of the topmost one: "" for a root, else the
    id of a span missing from the trace that they all hang below)."""
    above = _ancestors(s, pos)
    top = next((each for each in above | {pos} if s.index.parent[each] == NO_PARENT), pos)
    return above, s.index.spans[top].parent_span_id


def _candidates(s: Structure, number: int, tools: list[int]) -> list[int]:
    """Tool calls of other loops whose time window holds the start of loop `number`, whose run it
    may be: its parent span is above the tool's loop, or it has none, or both hang below the same
    span missing from the trace (a run below another missing span is left where it is)."""
    span = s.index.spans[s.loops[number].pos]
    parent = s.index.parent[s.loops[number].pos]
    found = []
    for tool in tools:
        window = s.index.spans[tool]
        if not window.start_ns <= span.start_ns <= window.start_ns + max(window.duration_ns, 0):
            continue
        owner = s.loop_of[tool]
        if _below(s, owner, number):
            continue
        above, missing = _above(s, s.loops[owner].pos)
        if parent in above or (parent == NO_PARENT and span.parent_span_id in ("", missing)):
            found.append(tool)
    return found


def _rank(s: Structure, tool: int, agent: str, used: set[int]) -> tuple[bool, bool, int]:
    """Sort key of a candidate tool call (lowest first): one that ran no agent yet, one whose name
    holds the agent's, the earliest."""
    named = agent.lower() in (s.read(tool).tool or "").lower()
    return tool in used, not named, s.index.spans[tool].start_ns


def contained_runs(s: Structure, used: set[int]) -> list[tuple[int, int]]:
    """(loop, tool span) for every unplaced run that starts inside a tool call of another loop
    (see the module docstring); `used` holds the tool calls that already ran an agent and is
    updated as runs are placed. The caller makes each run the tool's attempt, in the order given."""
    tools = [
        pos for pos in s.index.order
        if s.kinds[pos][0] == "tool" and s.loop_of[pos] >= 0 and s.loops[s.loop_of[pos]].pos != NO_PARENT
    ]  # fmt: skip
    if not tools:
        return []
    placed: list[tuple[int, int]] = []
    for number in loose_runs(s):
        candidates = _candidates(s, number, tools)
        if not candidates:
            continue
        tool = min(candidates, key=lambda each: _rank(s, each, s.loops[number].name, used))
        used.add(tool)
        placed.append((number, tool))
        s.loops[number].parent = s.loop_of[tool]  # so that later runs see the tree as placed so far
    return placed
