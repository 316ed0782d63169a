"""Workflow edges and span links: runs that no parent relation places, placed by what the trace records
between them.

- A workflow edge is a span naming the executor a message came from and the one it went to
  (`message.source_id` / `message.target_id`, as Microsoft Agent Framework's `edge_group.process`),
  or a message sent to an executor (`message.destination_executor_id`) from inside another
  executor's span (`executor.id`). An agent run belongs to the executor whose span holds it (else to
  the executor named like the agent). The run of the target executor that starts after the edge is
  reached from the latest run of the source executor started before it.
- A span link from an agent run's span (or a span above it) to a span of another loop, or to a span
  beside that loop's agent span, says that loop caused the run. The linked span may be in another
  trace read with this one (a run split across traces, `trace_links`): the link names its trace.

Either is a transfer when the caller's run had ended before the run it reached ended (it handed over),
else a delegation (it waited for it). Only runs below no loop and reached by no edge are placed.
"""

from __future__ import annotations

from typing import Literal

from janux.tracing import conventions as c
from janux.tracing.analysis.readers.containment import loose_runs
from janux.tracing.analysis.readers.loops import EdgeKind, Structure
from janux.tracing.analysis.span_index import NO_PARENT

Placed = tuple[int, int, EdgeKind, Literal["workflow edge", "span link"]]
"""(run, calling loop, kind, how it was found)."""


def edge_kind(s: Structure, caller: int, run: int) -> EdgeKind:
    """A transfer when the caller's span ended before the run's did, else a delegation."""
    before, after = s.index.spans[s.loops[caller].pos], s.index.spans[s.loops[run].pos]
    if before.duration_ns < 0 or after.duration_ns < 0:
        return "delegate"
    ended = before.start_ns + before.duration_ns < after.start_ns + after.duration_ns
    return "transfer" if ended else "delegate"


def _executor_of(s: Structure, pos: int) -> str | None:
    """`executor.id` of the nearest span at or above `pos` that has one."""
    current, seen = pos, 0
    while current != NO_PARENT and seen <= len(s.index.spans):
        value = s.index.spans[current].attributes.get(c.WORKFLOW_EXECUTOR_ID)
        if isinstance(value, str) and value:
            return value
        current, seen = s.index.parent[current], seen + 1
    return None


def _workflow_edges(s: Structure) -> list[tuple[int, str, str]]:
    """(span, source executor, target executor) of every workflow edge, in start order."""
    found = []
    for pos in s.index.order:
        attrs = s.index.spans[pos].attributes
        source, target = attrs.get(c.WORKFLOW_MESSAGE_SOURCE_ID), attrs.get(c.WORKFLOW_MESSAGE_TARGET_ID)
        if not isinstance(target, str) or not target:
            target = attrs.get(c.WORKFLOW_MESSAGE_DESTINATION)
            source = _executor_of(s, pos) if isinstance(target, str) and target else None
        if isinstance(source, str) and source and isinstance(target, str) and target and source != target:
            found.append((pos, source, target))
    found.sort(key=lambda edge: s.index.spans[edge[0]].start_ns)
    return found


def by_workflow_edges(s: Structure) -> list[Placed]:
    """Runs reached by a workflow edge (see the module docstring)."""
    edges = _workflow_edges(s)
    if not edges:
        return []
    executor = [_executor_of(s, loop.pos) or loop.name if loop.pos != NO_PARENT else None for loop in s.loops]
    waiting = set(loose_runs(s))
    placed: list[Placed] = []
    for pos, source, target in edges:
        at = s.index.spans[pos].start_ns
        started = [n for n, loop in enumerate(s.loops) if loop.pos != NO_PARENT
                   and s.index.spans[loop.pos].start_ns <= at]  # fmt: skip
        callers = [n for n in started if executor[n] == source]
        runs = [n for n in sorted(waiting)
                if executor[n] == target and s.index.spans[s.loops[n].pos].start_ns >= at]  # fmt: skip
        if callers and runs:
            caller, run = callers[-1], runs[0]
            waiting.discard(run)
            placed.append((run, caller, edge_kind(s, caller, run), "workflow edge"))
    return placed


def _loop_beside(s: Structure, pos: int) -> int:
    """The loop of `pos`, else of the latest agent span started before it below the same span
    (a message sent beside the agent's run inside its executor's span); -1 when none."""
    if s.loop_of[pos] >= 0:
        return s.loop_of[pos]
    parent = s.index.parent[pos]
    if parent == NO_PARENT:
        return -1
    at = s.index.spans[pos].start_ns
    beside = [child for child in s.index.children[parent]
              if s.loop_of[child] >= 0 and s.loops[s.loop_of[child]].pos == child
              and s.index.spans[child].start_ns <= at]  # fmt: skip
    return s.loop_of[max(beside, key=lambda child: s.index.spans[child].start_ns)] if beside else -1


def by_span_links(s: Structure, taken: set[int]) -> list[Placed]:
    """Runs (not in `taken`) whose span, or a span above it, links to a span of a loop that started
    before them (loops are kept in start order: a caller comes before what it calls)."""
    placed: list[Placed] = []
    for run in loose_runs(s):
        if run in taken:
            continue
        pos = s.loops[run].pos
        while pos != NO_PARENT:
            caller = next((found for link in s.index.spans[pos].links
                           if (linked := s.index.by_id.get(link.span_id)) is not None
                           and link.trace_id == s.index.spans[linked].trace_id
                           and 0 <= (found := _loop_beside(s, linked)) < run), -1)  # fmt: skip
            if caller >= 0:
                placed.append((run, caller, edge_kind(s, caller, run), "span link"))
                break
            pos = s.index.parent[pos]
    return placed
