"""The loops and delegations of a trace with Janux accounting, walked from its link rows.

Each agent loop's caller is its nearest agent ancestor and its delegating tool the nearest tool
span between them (no tool: direct nesting); a loop's own usage is its `janux.turn.*`, else the
inference rounds it owns (unpriced when they carry no cost: the map never estimates). Spans between
link rows (a user's own spans around a nested run) are walked through `TraceLinks.parents`.

This walk is a second implementation of the handoff tree of `handoff_tree.build_tree`, by necessity:
the store keeps one link row per agent and tool span at write time, and a map over a million spans
cannot rebuild every trace. Its rules are the shared ones (`failures.failure_kind` and
`failure_reason`, `spanread.target_from_tool`, `loops`' attempt order and inclusive usage); what
stays two-fold, the tree's shape, is held equal to the Trace page's by tests/tracing/sources/
test_agent_map.py on the demo set, contract traces and every foreign fixture, in every source.
"""

from __future__ import annotations

from janux.tracing import conventions as c
from janux.tracing.analysis.agentmap.classify import ROLE_AGENT, LinkRow
from janux.tracing.analysis.agentmap.loops import (
    MAX_WALK,
    MapDelegation,
    MapLoop,
    TraceLinks,
    turn_usage,
)
from janux.tracing.analysis.readers.structure import LOOSE_AGENT
from janux.tracing.analysis.trace_parts import Usage


class JanuxTrace:
    """The loops and delegations of one trace's link rows."""

    def __init__(self, links: TraceLinks) -> None:
        self.links = links
        self.rows: dict[str, LinkRow] = {row.span_id: row for row in links.rows}
        if len(self.rows) != len(links.rows):  # a span given twice: its first row wins
            self.rows = {}
            for row in links.rows:
                self.rows.setdefault(row.span_id, row)
        self.loops: dict[str, MapLoop] = {}
        self.delegations: dict[str, MapDelegation] = {}
        self.loose: MapLoop | None = None

    def walk(self, parent_id: str) -> tuple[LinkRow | None, LinkRow | None]:
        """(nearest tool below the nearest agent, nearest agent) above a span with this parent."""
        tool = None
        current = parent_id
        for _ in range(MAX_WALK):
            if not current:
                break
            row = self.rows.get(current)
            if row is None:
                next_id = self.links.parents.get(current)
                if next_id is None:
                    break
                current = next_id
                continue
            if row.role == ROLE_AGENT:
                return tool, row
            if tool is None:
                tool = row
            current = row.parent_span_id
        return tool, None

    def build(self) -> None:
        """Find every loop's parent and delegation, then the owner of every inference sum."""
        loops = self.loops
        for row in self.links.rows:
            if row.role == ROLE_AGENT and row.span_id not in loops:
                loops[row.span_id] = MapLoop(row, own=turn_usage(row) if row.has_turn else Usage())
        for loop in loops.values():
            tool, caller = self.walk(loop.row.parent_span_id)
            loop.parent = loops.get(caller.span_id) if caller is not None else None
            if tool is not None:
                self._delegation(tool).attempts.append(loop)
            elif loop.parent is not None:
                key = "direct:" + loop.row.span_id
                self.delegations[key] = MapDelegation(None, loop.parent, [loop])
        for row in self.rows.values():
            if row.role != ROLE_AGENT and row.delegating:
                self._delegation(row)
        self._inference()

    def _delegation(self, tool: LinkRow) -> MapDelegation:
        found = self.delegations.get(tool.span_id)
        if found is None:
            _, caller = self.walk(tool.parent_span_id)
            found = MapDelegation(tool, self.loops.get(caller.span_id) if caller is not None else None)
            self.delegations[tool.span_id] = found
        return found

    def _inference(self) -> None:
        for parent_id, usage in self.links.inference.items():
            row = self.rows.get(parent_id)
            owner = row if row is not None and row.role == ROLE_AGENT else self.walk(parent_id)[1]
            loop = self.loops.get(owner.span_id) if owner is not None else None
            if loop is None:
                if self.loose is None:
                    self.loose = MapLoop(_loose_row(self.links.trace_id))
                loop = self.loose
            elif loop.row.has_turn:
                continue
            loop.own.add(usage)

    def all_loops(self) -> list[MapLoop]:
        """Every loop, the stand-in for loose rounds last."""
        loops = list(self.loops.values())
        return [*loops, self.loose] if self.loose is not None else loops


def _loose_row(trace_id: str) -> LinkRow:
    return LinkRow(
        trace_id, "", "", ROLE_AGENT, 0, 0, LOOSE_AGENT, "ok", None, None, None, False,
        None, None, None, None, False, None, None, False, c.KIND_DELEGATE, "", None, None, None, False, False,
        "", False,
    )  # fmt: skip
