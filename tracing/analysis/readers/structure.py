"""One trace read: agent loops, delegation and transfer edges, attempts, own usage, coverage.

The one structural reading of a trace, shared by every source (`TraceSummary`, `usage_by`), the
CLI and the dashboard's handoff tree (which builds its nodes and edges from `Structure`), so no
two of them can disagree on a count:

- an agent span is a loop (a node) when it has a name, or when it has no name but model calls of
  its own; an unnamed agent span without model calls of its own (the OpenAI Agents SDK's workflow
  root under both bridges) is the run itself: transparent, never an agent;
- a structural span (task, chain, workflow) that names an agent and holds model calls or tool calls,
  at the top or below a tool call, is that agent's loop, as an agent span would be (`named_agents`);
- an agent span directly below a loop of the same name is that loop (one run wrapped twice);
  another agent loop below a loop is a delegation attempt: of the nearest tool span between the
  two (however deep: tool -> task span -> agent counts), else of a direct delegation; unless a
  transfer from a loop beside it names it (a LlamaIndex workflow run inside a tool): then it is
  that transfer's attempt;
- a transfer is a handoff span (`agent_handoff`, OpenInference `handoff to X`, a Janux `handoff`
  tool), or an agent reached by one (`graph.node.parent_id`); the target's next top-level loop is
  its attempt; when the agent that handed off with a LangGraph handoff tool runs again at the top
  without being handed to (langgraph-supervisor's edge back to the supervisor), the handoff was a
  delegation and that run continues the caller's loop; a Strands graph node whose recorded input
  names earlier nodes (`From NODE:` each) is the target of a transfer from each of them, and its one
  run is the attempt of every such edge: it is counted (runs, attempts, usage, cost) under the first
  only, the others share it (`Edge.shares_run`);
- an inference span belongs to its nearest loop; its usage counts once, there; usage an agent span
  reports for itself (accumulated, aggregated) is never added;
- a delegation failed when its last attempt failed (or, for Janux, by its recorded final status).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from janux.tracing import conventions as c
from janux.tracing.analysis.readers import genai, named_agents, openinference, openllmetry
from janux.tracing.analysis.readers.agent_usage import adopt_agent_usage
from janux.tracing.analysis.readers.containment import contained_runs, loose_runs, unplaced_runs
from janux.tracing.analysis.readers.links import by_span_links, by_workflow_edges
from janux.tracing.analysis.readers.loops import (
    FOUND_BY as FOUND_BY,
)
from janux.tracing.analysis.readers.loops import (
    LOOSE_AGENT as LOOSE_AGENT,
)
from janux.tracing.analysis.readers.loops import (
    RETRIED_ERROR as RETRIED_ERROR,
)
from janux.tracing.analysis.readers.loops import (
    UNNAMED_AGENT as UNNAMED_AGENT,
)
from janux.tracing.analysis.readers.loops import (
    Edge as Edge,
)
from janux.tracing.analysis.readers.loops import (
    EdgeKind as EdgeKind,
)
from janux.tracing.analysis.readers.loops import (
    FoundBy as FoundBy,
)
from janux.tracing.analysis.readers.loops import (
    Loop as Loop,
)
from janux.tracing.analysis.readers.loops import (
    Structure as Structure,
)
from janux.tracing.analysis.readers.spans import SpanRead, classify, error_text
from janux.tracing.analysis.span_index import NO_PARENT, SpanIndex, build_index
from janux.tracing.analysis.trace_parts import plus
from janux.tracing.records import STATUS_ERROR, SpanRecord, attr_float, attr_str

DELEGATING_TOOL_TYPES = frozenset({c.TOOL_TYPE_DELEGATE, c.TOOL_TYPE_HANDOFF})
"""`gen_ai.tool.type` of the tool spans that delegate or transfer (the other sign: HANDOFF events)."""
_HANDOFF_EVENTS = frozenset({c.EVENT_HANDOFF_START, c.EVENT_HANDOFF_END})


def _own_call_owners(index: SpanIndex, kinds: list[tuple[str, str, bool]]) -> set[int]:
    """Agent spans (named or not) that are the nearest agent ancestor of some inference span."""
    nearest = [NO_PARENT] * len(index.spans)
    owners: set[int] = set()
    for pos in index.order:
        parent = index.parent[pos]
        above = nearest[parent] if parent != NO_PARENT else NO_PARENT
        role = kinds[pos][0]
        if role == "agent":
            nearest[pos] = pos
        else:
            nearest[pos] = above
            if role == "inference" and above != NO_PARENT:
                owners.add(above)
    return owners


def is_janux_delegating(span: SpanRecord) -> bool:
    """A Janux delegation or transfer tool span (by tool type or HANDOFF events)."""
    if attr_str(span.attributes, c.GEN_AI_TOOL_TYPE) in DELEGATING_TOOL_TYPES:
        return True
    return any(event.name in _HANDOFF_EVENTS for event in span.events)


def is_janux_transfer(span: SpanRecord) -> bool:
    """A Janux transfer tool span (`gen_ai.tool.type` = handoff, or events of kind transfer)."""
    if attr_str(span.attributes, c.GEN_AI_TOOL_TYPE) == c.TOOL_TYPE_HANDOFF:
        return True
    return any(attr_str(e.attributes, c.JANUX_HANDOFF_KIND) == c.KIND_TRANSFER for e in span.events)


class _Builder:
    """One pass over the index in parent-before-child order."""

    def __init__(self, index: SpanIndex) -> None:
        self.s = Structure(index, [classify(span.attributes, span.name) for span in index.spans])
        self.s.loop_of = [-1] * len(index.spans)
        self.tool_below = [NO_PARENT] * len(index.spans)
        self.edge_of_tool: dict[int, int] = {}
        self.pending_transfers: dict[str, list[int]] = {}
        self.pending_any: list[int] = []
        self.hidden: list[tuple[int, int, int]] = []
        self.hidden_loops: dict[str, int] = {}
        self.joined: dict[int, int] = {}
        self.langgraph_handoffs: dict[str, int] = {}
        self.latest_loops: dict[str, int] = {}  # Strands graph: the latest loop of each name so far
        self.synced = 0  # loops already in `latest_loops`
        self._workflow_loops()
        agents = [pos for pos, kind in enumerate(self.s.kinds) if kind[0] == "agent"]
        self.unnamed = {pos for pos in agents if self.s.read(pos).agent is None}
        self._detached_bodies(agents)
        if self.unnamed:
            self._graph_loops()
        self._named_loops()
        # Only an unnamed agent span needs to know whether it made model calls of its own.
        self.owners = _own_call_owners(index, self.s.kinds) if self.unnamed else set()

    def _workflow_loops(self) -> None:
        """LlamaIndex: a run (or a stretch of one agent's sibling steps) is the loop of the agent its
        steps name; the stretch's later steps join the loop of its first."""
        s = self.s
        named = {}
        for pos, kind in enumerate(s.kinds):
            if kind[:2] == ("plain", "openinference"):
                name = openinference.llama_index_step_agent(s.index.spans[pos])
                if name is not None:
                    named[pos] = name
        if not named:
            return
        loops, joined = openinference.workflow_loops(s.index.parent, s.index.children, named)
        self.joined.update(joined)
        for pos, name in loops.items():
            s.kinds[pos] = ("agent", "openinference", True)
            s._reads[pos] = SpanRead("agent", "openinference", True, agent=name)

    def _detached_bodies(self, agents: list[int]) -> None:
        """OpenLLMetry: a named agent span without children whose sibling task span of the same name
        starts inside it ran that task as its body (the instrumentation lost the context between
        them); the task joins the agent's loop. Each parent's children are scanned once."""
        index = self.s.index
        empty = [pos for pos in agents if not index.children[pos] and index.parent[pos] != NO_PARENT]
        tasks: dict[tuple[int, str], list[int]] = {}
        for parent in {index.parent[pos] for pos in empty}:
            for child in index.children[parent]:
                name = openllmetry.task_name(index.spans[child].attributes)
                if name is not None:
                    tasks.setdefault((parent, name), []).append(child)
        for pos in empty:
            span, name = index.spans[pos], self.s.read(pos).agent
            for body in tasks.get((index.parent[pos], name or ""), ()):
                if span.start_ns <= index.spans[body].start_ns <= span.start_ns + span.duration_ns:
                    self.joined[body] = pos

    def _graph_loops(self) -> None:
        """LangGraph: a graph's CHAIN span is the loop, its unnamed AGENT node spans its rounds."""
        s = self.s
        owners = _own_call_owners(s.index, s.kinds)  # a step without model calls (a router) is no round
        steps = {pos for pos in self.unnamed if s.kinds[pos][1] == "openinference" and pos in owners}
        graphs = openinference.graph_loops(s.index.spans, s.index.parent, steps)
        for pos, name in graphs.items():
            s.kinds[pos] = ("agent", "openinference", True)
            s._reads[pos] = SpanRead("agent", "openinference", True, agent=name)
            if name is None:
                self.unnamed.add(pos)
        for pos in steps:
            if s.index.parent[pos] in graphs:
                s.kinds[pos] = ("plain", "openinference", True)
                self.unnamed.discard(pos)

    def _named_loops(self) -> None:
        """A structural span that names an agent and holds model calls or tool calls, at the top or
        below a tool call, is that agent's loop (`named_agents`); spans already joined to a loop
        (an agent's detached body, a workflow's later steps) stay where they are."""
        s = self.s
        index = s.index
        found = named_agents.loop_spans(
            index,
            s.kinds,
            graph_name=lambda pos: openinference.graph_run_name(index.spans, index.children[pos], pos),
            skip=self.joined.keys(),
            unnamed=self.unnamed,
        )
        for pos, name in found.items():
            s.kinds[pos] = ("agent", s.kinds[pos][1], True)
            s._reads[pos] = SpanRead("agent", s.kinds[pos][1], True, agent=name)  # type: ignore[arg-type]

    def run(self) -> Structure:
        s = self.s
        for pos in s.index.order:
            role = s.kinds[pos][0]
            parent = s.index.parent[pos]
            if role == "agent" and (pos not in self.unnamed or pos in self.owners):
                self._loop(pos, parent)
                continue
            if parent == NO_PARENT and self.hidden:
                self._hidden_attempt(pos)
            if parent != NO_PARENT:
                s.loop_of[pos] = s.loop_of[self.joined.get(pos, parent)]
                self.tool_below[pos] = self.tool_below[parent]
            if role == "transfer":
                self._transfer(pos)
            elif role == "tool":
                self.tool_below[pos] = pos
                if is_janux_delegating(s.index.spans[pos]):
                    self._edge_for_tool(pos)
            elif role == "inference":
                self._call(pos)
            elif role == "plain" and s.index.spans[pos].status_code == STATUS_ERROR:
                self._hidden_failure(pos)
        self._place_unplaced()
        s.agent_usage = adopt_agent_usage(s)
        return s

    def _place_unplaced(self) -> None:
        """Runs no parent relation places: by workflow edges and span links first (`links`), then
        inside a tool call's time window, as that call's attempts (`containment`)."""
        s = self.s
        if not loose_runs(s):  # the common case (every Janux trace): nothing to place, no scan
            return
        callers: set[int] = set()
        linked = by_workflow_edges(s)
        linked += by_span_links(s, {run for run, _, _, _ in linked})
        for run, caller, kind, how in linked:
            edge = self._new_edge(kind, NO_PARENT, caller, how)
            s.edges[edge].target = s.loops[run].name
            self._attach(run, edge, callers)
        used = {s.edges[e].tool_pos for e in self.edge_of_tool.values() if s.edges[e].attempts}
        for number, tool in contained_runs(s, used):
            self._attach(number, self._edge_for_tool(tool, "time containment"), callers)
        for caller in callers:  # edges in start order
            s.loops[caller].edges.sort(key=lambda e: self._edge_start(s.edges[e]))

    def _attach(self, run: int, edge: int, callers: set[int]) -> None:
        """Make loop `run` an attempt of `edge`, below the edge's caller (for a transfer: a top-level
        run, as a transfer's target is)."""
        s = self.s
        caller = s.edges[edge].caller
        s.loops[run].via = edge
        if s.edges[edge].kind == "delegate":
            s.loops[run].parent = caller
        s.edges[edge].attempts.append(run)
        if caller is not None:
            callers.add(caller)

    def _edge_start(self, edge: Edge) -> int:
        s = self.s
        pos = edge.tool_pos if edge.tool_pos != NO_PARENT else s.loops[edge.attempts[0]].pos
        return s.index.spans[pos].start_ns if pos != NO_PARENT else 0

    def _hidden_failure(self, pos: int) -> None:
        """smolagents: a step whose managed agent raised. That agent's span is never exported, so the
        step is the failed delegation's tool span; spans of the lost agent become its attempt."""
        span = self.s.index.spans[pos]
        target = openinference.failed_team_member(span)
        if target is None:
            return
        caller = self.s.loop_of[pos]
        edge = self._new_edge("delegate", pos, caller if caller >= 0 else None)
        self.s.edges[edge].target = target
        end = span.start_ns + max(span.duration_ns, 0)
        self.hidden.append((span.start_ns, end, edge))

    def _hidden_attempt(self, pos: int) -> None:
        """A span hanging below a missing span (never exported) inside a step whose managed agent
        failed runs in that agent's loop, the delegation's attempt (started by its first such span)."""
        s = self.s
        span = s.index.spans[pos]
        missing = span.parent_span_id
        if not missing:
            return
        index = self.hidden_loops.get(missing)
        if index is None:
            edge = next((e for start, end, e in self.hidden if start <= span.start_ns <= end
                         and not s.edges[e].attempts), None)  # fmt: skip
            if edge is None:
                return
            index = self.hidden_loops[missing] = len(s.loops)
            s.loops.append(Loop(pos=pos, name=s.edges[edge].target, parent=s.edges[edge].caller, via=edge))
            s.edges[edge].attempts.append(index)
        s.loop_of[pos] = index

    def _loop(self, pos: int, parent: int) -> None:
        s = self.s
        read = s.read(pos)
        outer = s.loop_of[parent] if parent != NO_PARENT else -1
        same = outer >= 0 and read.agent is not None and s.loops[outer].name == read.agent
        if same and self.tool_below[parent] == NO_PARENT:  # the same agent in itself, no tool call between
            if not self._retry(pos, outer):
                s.loop_of[pos] = outer  # one run wrapped twice (OpenLLMetry: invoke_agent around a workflow)
            return
        loop = Loop(pos=pos, name=read.agent or UNNAMED_AGENT)
        index = len(s.loops)
        s.loops.append(loop)
        s.loop_of[pos] = index
        caller = s.loop_of[parent] if parent != NO_PARENT else -1
        if caller >= 0 and caller != s.loose:
            loop.parent = caller
        tool = self.tool_below[parent] if parent != NO_PARENT else NO_PARENT
        sibling = self._sibling_transfer(loop)
        if sibling is not None:
            edge = sibling
        elif tool != NO_PARENT:
            edge = self._edge_for_tool(tool)
        elif loop.parent is not None:
            edge = self._new_edge("delegate", NO_PARENT, loop.parent)
        else:
            transfer = self._transfer_into(loop, read)
            if transfer is None:
                transfer = self._graph_edges(pos, parent, loop)
            if transfer is None:
                self._resume(pos, loop)
                return
            edge = transfer
        loop.via = edge
        s.edges[edge].attempts.append(index)

    def _retry(self, pos: int, outer: int) -> bool:
        """An agent run nested in a loop of the same agent, with no tool call between, is the library
        re-running the agent (CrewAI's task retries) when it is the same operation again (its span
        has the loop's span name) or comes after the loop did work of its own (model calls,
        delegations): another attempt of the edge that started the loop, which failed. False when it
        is another layer around the same run (a workflow span inside an agent span: the run wrapped
        twice) or nothing started the loop (then it is that loop)."""
        s = self.s
        first = s.loops[outer]
        if first.via is None:
            return False
        again = s.index.spans[pos].name == s.index.spans[first.pos].name
        if not (again or first.calls or first.edges):
            return False
        first.retried = True
        index = len(s.loops)
        s.loops.append(Loop(pos=pos, name=first.name, parent=first.parent, via=first.via))
        s.loop_of[pos] = index
        s.edges[first.via].attempts.append(index)
        return True

    def _sibling_transfer(self, loop: Loop) -> int | None:
        """A loop below another that a transfer from a loop beside it names (LlamaIndex: a workflow
        run inside a tool hands over between its agents): that transfer, not a new attempt of the
        enclosing delegation. (A top-level loop's transfers: `_transfer_into`.)"""
        waiting = self.pending_transfers.get(loop.name) if loop.parent is not None else None
        if not waiting:
            return None
        caller = self.s.edges[waiting[0]].caller
        if caller is None or self.s.loops[caller].parent != loop.parent:
            return None
        return waiting.pop(0)

    def _graph_edges(self, pos: int, parent: int, loop: Loop) -> int | None:
        """Strands graph: a node agent (below `invoke_graph`) is the target of a transfer from each
        earlier node its input names (the latest loop of that name); returns the edge from the first
        one named, which owns the run (`loop.via`). The run is also the attempt of the edges from the
        others, which share it (`Edge.shares_run`: counted once). A name no earlier loop has (not a
        node, or the text of some result) is no edge."""
        s = self.s
        above = s.index.spans[parent].attributes if parent != NO_PARENT else {}
        if above.get(c.GEN_AI_OPERATION_NAME) != c.OP_INVOKE_GRAPH:
            return None
        earlier = self.latest_loops
        for number in range(self.synced, len(s.loops) - 1):
            earlier[s.loops[number].name] = number  # the loops started since the last node
        self.synced = len(s.loops) - 1
        known = [earlier[name] for name in genai.graph_inputs(s.index.spans[pos]) if name in earlier]
        if not known:
            return None
        edge = self._new_edge("transfer", NO_PARENT, known[0], "workflow edge")
        s.edges[edge].target = loop.name
        for feeder in known[1:]:  # the same run: attempt of each edge, counted under the first
            shared = s.edges[self._new_edge("transfer", NO_PARENT, feeder, "workflow edge")]
            shared.target, shared.shares_run = loop.name, True
            shared.attempts.append(len(s.loops) - 1)
        return edge

    def _resume(self, pos: int, loop: Loop) -> None:
        """langgraph-supervisor: a top-level run of an agent that handed off with a LangGraph
        handoff tool, reached by no transfer, is that agent taking control back by the graph's edge
        (the handed-to agent worked for it). The run continues the caller's loop, and the handoff
        was a delegation."""
        s = self.s
        number = self.langgraph_handoffs.pop(loop.name, None)
        if number is None:
            return
        edge = s.edges[number]
        if edge.kind != "transfer" or edge.caller is None or not edge.attempts:
            return
        edge.kind = "delegate"
        for attempt in edge.attempts:
            s.loops[attempt].parent = edge.caller
        s.loops.pop()  # the run just started is no loop of its own
        s.loop_of[pos] = edge.caller

    def _transfer_into(self, loop: Loop, read: SpanRead) -> int | None:
        """The transfer a top-level loop continues: a handoff span to its agent seen before it,
        else (OpenInference) the agent named by its `graph.node.parent_id`."""
        waiting = self.pending_transfers.get(loop.name)
        if waiting:
            return waiting.pop(0)
        if self.pending_any:
            pending = self.s.edges[self.pending_any[0]]
            handoff = self.s.index.spans[pending.tool_pos]
            after = handoff.start_ns <= self.s.index.spans[loop.pos].start_ns  # not a run it interrupts
            if after and (pending.caller is None or self.s.loops[pending.caller].name != loop.name):
                pending.target, pending.found = loop.name, "time containment"
                return self.pending_any.pop(0)
        if read.transfer_from is None:
            return None
        source = next((i for i, other in enumerate(self.s.loops) if other.name == read.transfer_from), None)
        edge = self._new_edge("transfer", NO_PARENT, source)
        self.s.edges[edge].target = loop.name
        return edge

    def _transfer(self, pos: int) -> None:
        s = self.s
        read = s.read(pos)
        caller = s.loop_of[pos]
        edge = self._new_edge("transfer", pos, caller if caller >= 0 else None)
        target = read.transfer_to or ""
        s.edges[edge].target = target
        if caller >= 0 and openinference.langgraph_handoff(s.index.spans[pos].attributes) is not None:
            self.langgraph_handoffs[s.loops[caller].name] = edge  # the latest, for `_resume`
        if target:
            self.pending_transfers.setdefault(target, []).append(edge)
        else:  # the span does not name its target (ADK, Strands swarm): the next agent that runs
            self.pending_any.append(edge)

    def _edge_for_tool(self, tool_pos: int, how: FoundBy = "tool nesting") -> int:
        found = self.edge_of_tool.get(tool_pos)
        if found is None:
            caller = self.s.loop_of[tool_pos]
            span = self.s.index.spans[tool_pos]
            kind: EdgeKind = "transfer" if is_janux_transfer(span) else "delegate"
            how = "recorded" if is_janux_delegating(span) else how
            found = self._new_edge(kind, tool_pos, caller if caller >= 0 else None, how)
            self.edge_of_tool[tool_pos] = found
        return found

    def _new_edge(
        self, kind: EdgeKind, tool_pos: int, caller: int | None, found: FoundBy = "recorded"
    ) -> int:
        s = self.s
        if caller == s.loose:
            caller = None
        edge = Edge(kind=kind, tool_pos=tool_pos, caller=caller, found=found)
        s.edges.append(edge)
        if caller is not None:
            s.loops[caller].edges.append(len(s.edges) - 1)
        return len(s.edges) - 1

    def _call(self, pos: int) -> None:
        s = self.s
        owner = s.loop_of[pos]
        if owner < 0:
            if s.loose < 0:
                s.loose = len(s.loops)
                s.loops.append(Loop(pos=NO_PARENT, name=LOOSE_AGENT))
            owner = s.loose
            s.loop_of[pos] = owner
        s.loops[owner].calls.append(pos)


def structure(index: SpanIndex) -> Structure:
    """Loops and edges of an indexed trace (see the module docstring for the rules)."""
    built = _Builder(index).run()
    split_segments(built)
    _parents_first(built)
    return built


def _parents_first(s: Structure) -> None:
    """Keep loops parents before children (every sum folds children into parents in one pass): a
    rule that placed a run below a loop found after it (time containment, a library's retry in a
    damaged trace) moves it; a parent link that still points forward closes a cycle and is cut."""
    if all(loop.parent is None or loop.parent < number for number, loop in enumerate(s.loops)):
        return
    _renumber(s, {})
    for number, loop in enumerate(s.loops):
        if loop.parent is not None and loop.parent >= number:
            loop.parent = None


# ------------------------------------------------------------------------------ agent segments
# A Janux loop that transferred the conversation is read as one loop per agent that held it (the
# contract's agent segments). The runtime runs a transfer inside the loop that received the turn:
# one `invoke_agent` span holds the caller's rounds, the `handoff.*` tool call, then the target's
# rounds (each `chat` span names its agent), and the span ends up named after the last holder. Read
# as one loop, the caller's rounds would be the target's and the caller would vanish from every
# per-agent figure. So:
# - a segment starts at the first model round after a completed transfer tool call of its loop (the
#   tools and delegations that round calls go with it); everything before is the caller's;
# - every segment after the first is a loop of its own (same span, `Loop.segment` > 0), the attempt
#   of the transfer edge, beside the loop it came from (same calling loop);
# - the first segment keeps the loop's place and is named after the agent that started the turn.
# The segments' rounds add up to the span's `janux.turn.*`, so nothing is counted twice. Other
# runtimes record each agent's run as a span of its own: their transfers need no split.

_SPAN_PREFIX = c.OP_INVOKE_AGENT + " "


@dataclass(slots=True)
class _Cut:
    """Where one completed transfer of a loop splits it."""

    edge: int
    """The transfer edge."""
    at_ns: int
    """The target's segment starts here: its first round's start (else the tool call's end)."""
    target: str
    """The agent that took the conversation over."""


def _agent_of_call(span: SpanRecord) -> str | None:
    return attr_str(span.attributes, c.GEN_AI_AGENT_NAME)


def first_agent(loop_span: SpanRecord, first_call: SpanRecord | None) -> str | None:
    """The agent that started a transferred turn: its first round's agent, else the span name
    (`invoke_agent {agent}` names the agent the turn was given to), else `janux.handoff.from`."""
    if first_call is not None:
        agent = _agent_of_call(first_call)
        if agent:
            return agent
    if loop_span.name.startswith(_SPAN_PREFIX) and len(loop_span.name) > len(_SPAN_PREFIX):
        return loop_span.name[len(_SPAN_PREFIX) :]
    return attr_str(loop_span.attributes, c.JANUX_HANDOFF_FROM)


def _cuts(s: Structure, loop: Loop) -> list[_Cut]:
    """The completed Janux transfers made by `loop` (tool calls of its own), in start order."""
    spans = s.index.spans
    calls = sorted(loop.calls, key=lambda p: spans[p].start_ns)
    found = []
    for number in loop.edges:
        edge = s.edges[number]
        if edge.kind != "transfer" or edge.tool_pos == NO_PARENT or edge.attempts:
            continue
        tool = spans[edge.tool_pos]
        if not is_completed_transfer(tool.attributes):
            continue  # a transfer that did not happen leaves the conversation where it was
        after = next((spans[p] for p in calls if spans[p].start_ns >= tool.start_ns), None)
        target = attr_str(tool.attributes, c.JANUX_HANDOFF_TARGET) or edge.target
        if not target and after is not None:
            target = _agent_of_call(after) or ""
        if not target:
            continue
        at = after.start_ns if after is not None else tool.start_ns + max(tool.duration_ns, 0)
        found.append(_Cut(number, at, target))
    found.sort(key=lambda cut: cut.at_ns)
    return found


def _edge_start(s: Structure, edge: Edge) -> int:
    if edge.tool_pos != NO_PARENT:
        return s.index.spans[edge.tool_pos].start_ns
    if edge.attempts:
        return s.index.spans[s.loops[edge.attempts[0]].pos].start_ns
    return 0


def _split(s: Structure, number: int, cuts: list[_Cut]) -> list[int]:
    """Split loop `number` at `cuts`; returns the new segments' loop numbers (appended)."""
    loop = s.loops[number]
    span = s.index.spans[loop.pos]
    loop.segmented = True
    loop.name = first_agent(span, s.index.spans[min(loop.calls, key=lambda p: s.index.spans[p].start_ns)]
                            if loop.calls else None) or loop.name  # fmt: skip
    loop.end_ns = cuts[0].at_ns
    owner_at: list[tuple[int, int]] = [(span.start_ns, number)]
    made = []
    for order, cut in enumerate(cuts, start=1):
        segment = len(s.loops)
        end = cuts[order].at_ns if order < len(cuts) else None
        s.loops.append(Loop(pos=loop.pos, name=cut.target, parent=loop.parent, via=cut.edge, segment=order,
                            segmented=True, start_ns=cut.at_ns, end_ns=end))  # fmt: skip
        s.edges[cut.edge].attempts.append(segment)
        s.edges[cut.edge].target = s.edges[cut.edge].target or cut.target
        owner_at.append((cut.at_ns, segment))
        made.append(segment)

    def owner(start_ns: int) -> int:
        found = number
        for at, segment in owner_at:
            if start_ns >= at:
                found = segment
        return found

    calls, loop.calls = loop.calls, []
    for pos in calls:
        s.loops[owner(s.index.spans[pos].start_ns)].calls.append(pos)
    edges, loop.edges = loop.edges, []
    for edge_number in edges:
        edge = s.edges[edge_number]
        # A transfer edge stays with the segment that made it, however its start compares.
        holder = number if edge_number == cuts[0].edge else owner(_edge_start(s, edge))
        for cut_order, cut in enumerate(cuts[1:], start=1):
            if edge_number == cut.edge:
                holder = made[cut_order - 1]
        s.loops[holder].edges.append(edge_number)
        edge.caller = holder
        for attempt in edge.attempts:
            if s.loops[attempt].parent == number and holder != number:
                s.loops[attempt].parent = holder
    for pos, owned in enumerate(s.loop_of):
        if owned == number and pos != loop.pos:
            s.loop_of[pos] = owner(s.index.spans[pos].start_ns)
    return made


def _renumber(s: Structure, placed_after: dict[int, list[int]]) -> None:
    """Put each loop's segments right after its subtree, so loops stay parents before children in
    depth-first start order, and rewrite every loop number."""
    children: dict[int | None, list[int]] = {}
    segment_loops = {seg for segs in placed_after.values() for seg in segs}
    for number, loop in enumerate(s.loops):
        if number not in segment_loops:
            children.setdefault(loop.parent, []).append(number)
    order: list[int] = []

    def visit(number: int) -> None:
        order.append(number)
        for child in children.get(number, []):
            visit(child)
        for segment in placed_after.get(number, []):
            visit(segment)

    for top in children.get(None, []):
        visit(top)
    seen = set(order)
    order += [n for n in range(len(s.loops)) if n not in seen]  # unreachable (cycles): kept as they were
    new = {old: position for position, old in enumerate(order)}
    s.loops = [s.loops[old] for old in order]
    for loop in s.loops:
        loop.parent = None if loop.parent is None else new[loop.parent]
    for edge in s.edges:
        edge.caller = None if edge.caller is None else new[edge.caller]
        edge.attempts = [new[a] for a in edge.attempts]
    s.loop_of = [new[n] if n >= 0 else n for n in s.loop_of]
    if s.loose >= 0:
        s.loose = new[s.loose]


def split_segments(s: Structure) -> None:
    """Split every Janux loop that completed a transfer into its agent segments (in place)."""
    placed_after: dict[int, list[int]] = {}
    for number in range(len(s.loops)):
        loop = s.loops[number]
        if loop.pos == NO_PARENT or loop.segmented:
            continue
        cuts = _cuts(s, loop)
        if cuts:
            placed_after[number] = _split(s, number, cuts)
    if placed_after:
        _renumber(s, placed_after)


# ------------------------------------------------------------------------------ trace facts


@dataclass(slots=True)
class AgentFacts:
    """One loop as every source and the CLI report it."""

    name: str
    """Agent name."""
    span_id: str
    """Its agent span ("" for the stand-in of loose model calls)."""
    depth: int
    """Depth in the handoff tree (0 at a root)."""
    status: str
    """`ok`, `error` or `open`."""
    input_tokens: int | None
    """Own input tokens read (None when none of its calls had usage read)."""
    output_tokens: int | None
    """Own output tokens read."""
    calls: int
    """Own inference spans."""
    unread_calls: int
    """Own inference spans whose usage could not be read (unknown, never zero)."""
    error: str | None = None
    """Error text (status message, else the exception event)."""
    via: int | None = None
    """Index (in `StructureFacts.edges`) of the edge it is an attempt of, None for a root."""
    parent_span_id: str = ""
    """Parent span id of its agent span."""
    segment: int = 0
    """Its agent segment within its span (`Loop.segment`): 0 unless a transfer came before it."""
    cost: float | None = None
    """USD its own rounds recorded (`janux.round.cost`); None when none did."""
    unpriced_tokens: int | None = None
    """Tokens of its own rounds with usage read but no recorded cost (None when none was read)."""

    @property
    def loop_id(self) -> str:
        """The id its rows are stored under (`loop_id`): its span id, made unique per segment."""
        return loop_id(self.span_id, self.segment)


@dataclass(slots=True)
class EdgeFacts:
    """One delegation or transfer as every source and the CLI report it."""

    kind: EdgeKind
    """Delegation or transfer."""
    caller: str | None
    """Calling agent (None when its spans are missing)."""
    target: str
    """Target agent."""
    tool: str
    """Tool (or handoff span) name; the target for an agent nested directly in another."""
    tool_span_id: str | None
    """The tool or handoff span, None for direct nesting."""
    attempts: int
    """Attempt loops that ran."""
    status: str
    """`completed`, `failed`, `open`, or Janux's recorded final status."""
    failed: bool
    """True when the final status is a failing one (`FAILING_STATUSES`)."""
    error: str | None = None
    """Why it failed: the tool span's or the last failed attempt's error text."""
    attempt_agents: list[int] = field(default_factory=list)
    """Indexes (in `StructureFacts.agents`) of its attempts."""
    shares_run: bool = False
    """Its attempts are counted under another edge (`Edge.shares_run`): no sum adds them again."""
    found: FoundBy = "recorded"
    """How the edge was found (`Edge.found`)."""


MODEL_CALLS_NOT_RECORDED: Final = "model calls not recorded"
"""Coverage of a trace whose agents ran without any model call or usage recorded."""

def coverage_notes(janux: bool, agents: int, calls: int, agent_usage: int, unplaced: int) -> list[str]:
    """What could not be read about a run, in words (empty when all was): `model calls not recorded`
    (agents ran, but no model call and no agent carries usage: the usage is unknown, never 0),
    `N agent runs not placed` (nothing in the trace says how they relate to the rest)."""
    notes = []
    if not janux and agents and not calls and not agent_usage:
        notes.append(MODEL_CALLS_NOT_RECORDED)
    if unplaced:
        notes.append(f"{unplaced} agent run{'s' if unplaced > 1 else ''} not placed")
    return notes


def coverage_of(s: Structure, janux: bool) -> list[str]:
    """`coverage_notes` of a built structure (what `facts_of(s).coverage` says, without the facts)."""
    kinds = enumerate(s.kinds)
    calls = sum(1 for pos, kind in kinds if kind[0] == "inference" and s.read(pos).usage != "failed")
    return coverage_notes(janux, len(s.loops), calls, len(s.agent_usage), len(unplaced_runs(s)))


@dataclass(slots=True)
class StructureFacts:
    """What one trace holds, read once for every consumer."""

    trace_id: str
    """The trace id."""
    agents: list[AgentFacts]
    """Loops in tree order (parents before children)."""
    edges: list[EdgeFacts]
    """Delegations and transfers in tree order."""
    inference_spans: int
    """Model calls (inference spans), failed calls without usage excluded."""
    usage_read_spans: int
    """Model calls whose usage was read."""
    unread_spans: int
    """Model calls whose usage is unknown: under names Janux does not read, or absent."""
    unrecognised_spans: int
    """Spans of a kind Janux does not recognise (an unknown declared kind, or usage-like
    attributes on a span that declares none)."""
    input_tokens: int | None
    """Input tokens summed over model calls with usage read (None when none was read)."""
    output_tokens: int | None
    """Output tokens summed likewise."""
    errors: int
    """Spans with status ERROR."""
    janux: bool
    """True when the trace carries Janux accounting (its own numbers then come from it)."""
    segmented: bool = False
    """True when a Janux loop of it transferred the conversation (`has_segments`): its per-agent
    rows then come from this reading of the whole trace, not span by span."""
    agent_usage_spans: int = 0
    """Agent runs whose usage is read off their own span (no model call below them carries any)."""
    unplaced_agents: int = 0
    """Agent runs below no loop and reached by no edge, the run's first agent excepted: nothing in
    the trace says how they relate to the rest."""

    @property
    def coverage(self) -> list[str]:
        """What could not be read about the run's structure and usage, in words (`coverage_notes`)."""
        return coverage_notes(
            self.janux, len(self.agents), self.inference_spans, self.agent_usage_spans, self.unplaced_agents
        )

    @property
    def delegations(self) -> int:
        """Delegation edges."""
        return sum(1 for e in self.edges if e.kind == "delegate")

    @property
    def transfers(self) -> int:
        """Transfer edges."""
        return sum(1 for e in self.edges if e.kind == "transfer")

    @property
    def attempts(self) -> int:
        """Attempt loops of delegations (a run several edges share counted once)."""
        return sum(e.attempts for e in self.edges if e.kind == "delegate" and not e.shares_run)

    @property
    def failed_handoffs(self) -> int:
        """Delegations and transfers whose final status is failing (a failed turn is not one)."""
        return sum(1 for e in self.edges if e.failed)

    @property
    def agent_path(self) -> tuple[str, ...]:
        """The agents that held the conversation in turn: the run's first agent, then the target of
        each transfer made by the agent holding it then (a transfer inside a delegation moves no
        conversation of the run). Empty when no agent runs at the top."""
        holder = next((n for n, a in enumerate(self.agents) if a.depth == 0 and a.span_id), None)
        if holder is None:
            return ()
        path = [holder]
        for edge in self.edges:
            if edge.kind == "transfer" and edge.caller == self.agents[holder].name and edge.attempt_agents:
                holder = edge.attempt_agents[-1]
                path.append(holder)
        return tuple(self.agents[n].name for n in path)

    @property
    def root_agent(self) -> str | None:
        """The run's first agent (`agent_path`'s first): the trace list's root agent when the root
        span names none (the OpenAI Agents SDK's workflow span, a framework's wrapper span)."""
        path = self.agent_path
        return path[0] if path else None

    @property
    def partly_unread(self) -> bool:
        """True when some usage could not be read (unknown, shown as such)."""
        return self.unread_spans > 0 or self.unrecognised_spans > 0




def loop_id(span_id: str, segment: int) -> str:
    """The id a loop's rows are kept under: its span id, and for an agent segment after the first
    (several loops of one span) the span id and the segment's number (`{span_id}:{segment}`)."""
    return span_id if segment == 0 else f"{span_id}:{segment}"


def span_of_loop_id(loop_ref: str) -> str:
    """The span id of a `loop_id` (what the Trace page selects)."""
    return loop_ref.split(":", 1)[0] if ":" in loop_ref and not loop_ref.startswith("loose:") else loop_ref


def _round_cost(s: Structure, pos: int) -> float | None:
    """The recorded `janux.round.cost` of a round whose usage was read (None: unpriced)."""
    value = s.index.spans[pos].attributes.get(c.JANUX_ROUND_COST)
    if value is None:  # the common case: other runtimes price nothing
        return None
    read = s.read(pos)
    cost = attr_float(s.index.spans[pos].attributes, c.JANUX_ROUND_COST)
    if read.usage != "read" or cost is None or not math.isfinite(cost):
        return None  # unknown usage, or a failed call: nothing to price
    return cost


def segment_time(span: SpanRecord, loop: Loop) -> tuple[int, int]:
    """(start, duration) of a loop: its span's, or of its agent segment within the span (an open
    span's last segment stays open: negative duration)."""
    start = span.start_ns if loop.start_ns is None else loop.start_ns
    if loop.end_ns is not None:
        return start, loop.end_ns - start
    if span.duration_ns < 0:
        return start, span.duration_ns
    return start, span.start_ns + span.duration_ns - start


def loop_status(s: Structure, loop: Loop) -> str:
    """`ok`, `error` or `open` of a loop: its span's, except that an attempt the library re-ran
    inside itself failed (`Loop.retried`)."""
    if loop.pos == NO_PARENT or (loop.segmented and loop.end_ns is not None):
        return "ok"  # (an agent segment that handed the conversation on: the span's outcome is a later one's)
    status = s.index.spans[loop.pos].status
    return "error" if loop.retried and status == "ok" else status


def loop_error(s: Structure, loop: Loop) -> str | None:
    """Why a loop failed (its span's error text, else `RETRIED_ERROR` for a re-run attempt), None
    when it did not."""
    if loop.pos == NO_PARENT or (loop.segmented and loop.end_ns is not None):
        return None
    span = s.index.spans[loop.pos]
    if span.status_code == STATUS_ERROR:
        return error_text(span)[0]
    return RETRIED_ERROR if loop.retried else None


def _agent_facts(s: Structure, depth: list[int]) -> list[AgentFacts]:
    found = []
    for number, loop in enumerate(s.loops):
        reads = [s.read(p) for p in loop.calls]
        span = s.index.spans[loop.pos] if loop.pos != NO_PARENT else None
        tokens_in = tokens_out = cost = None
        unpriced: int | None = None
        for pos, read in zip(loop.calls, reads, strict=True):
            tokens_in = plus(tokens_in, read.input_tokens)
            tokens_out = plus(tokens_out, read.output_tokens)
            if read.usage != "read":
                continue
            round_cost = _round_cost(s, pos)
            cost = plus(cost, round_cost)
            tokens = (read.input_tokens or 0) + (read.output_tokens or 0)
            unpriced = plus(unpriced, tokens if round_cost is None else 0)
        found.append(
            AgentFacts(
                name=loop.name, span_id=span.span_id if span else "", depth=depth[number],
                status=loop_status(s, loop), input_tokens=tokens_in, output_tokens=tokens_out,
                calls=sum(1 for p, r in zip(loop.calls, reads, strict=True)
                          if r.usage != "failed" and p != loop.pos),  # the agent's own usage is no call
                unread_calls=sum(1 for r in reads if r.usage in ("unread", "absent")),
                error=loop_error(s, loop),
                via=loop.via, parent_span_id=span.parent_span_id if span else "",
                segment=loop.segment, cost=cost, unpriced_tokens=unpriced,
            )
        )
    return found


def edge_status(s: Structure, edge: Edge) -> tuple[str, str | None]:
    """(status, error) of an edge: Janux's recorded final status, else the last attempt's (an edge
    without attempts failed when its tool or handoff span did)."""
    tool = s.index.spans[edge.tool_pos] if edge.tool_pos != NO_PARENT else None
    recorded = attr_str(tool.attributes, c.JANUX_HANDOFF_STATUS) if tool is not None else None
    error = error_text(tool)[0] if tool is not None else None
    if recorded:
        return recorded, attr_str(tool.attributes, c.JANUX_HANDOFF_ERROR) if tool else error
    if not edge.attempts:
        failed = tool is not None and tool.status_code == STATUS_ERROR
        return (c.STATUS_FAILED if failed else c.STATUS_COMPLETED), error
    last = s.index.spans[s.loops[edge.attempts[-1]].pos]
    status = last.status
    if status == "open":
        return "open", error
    if status == "error":
        return c.STATUS_FAILED, error or error_text(last)[0]
    return c.STATUS_COMPLETED, None


def _edge_facts(s: Structure) -> list[EdgeFacts]:
    found = []
    for edge in s.edges:
        tool = s.index.spans[edge.tool_pos] if edge.tool_pos != NO_PARENT else None
        first = s.loops[edge.attempts[0]].name if edge.attempts else ""
        recorded = attr_str(tool.attributes, c.JANUX_HANDOFF_TARGET) if tool is not None else None
        target = edge.target or recorded or first
        status, error = edge_status(s, edge)
        found.append(
            EdgeFacts(
                kind=edge.kind, caller=s.loops[edge.caller].name if edge.caller is not None else None,
                target=target, tool=(s.read(edge.tool_pos).tool or "") if tool else target,
                tool_span_id=tool.span_id if tool else None, attempts=len(edge.attempts), status=status,
                failed=status in c.FAILING_STATUSES, error=error, attempt_agents=list(edge.attempts),
                shares_run=edge.shares_run, found=edge.found,
            )
        )
    return found


def _depths(s: Structure) -> list[int]:
    depth = [0] * len(s.loops)
    for number, loop in enumerate(s.loops):  # parents come before children
        if loop.parent is not None:
            depth[number] = depth[loop.parent] + 1
    return depth


JANUX_LOOP_MARKERS = (c.JANUX_AGENT_DEPTH, *c.TURN_USAGE_KEYS)
"""Attributes that make an agent span a Janux loop."""


_BILL_KEYS = frozenset(c.BILL_KEYS)
_LOOP_KEYS = frozenset(JANUX_LOOP_MARKERS)


def is_janux_span(operation: object, attributes: dict[str, object]) -> bool:
    """True for a span carrying Janux accounting: a Janux loop, a root with `janux.bill.*`, or a
    Janux delegation tool with its final `janux.handoff.status` (attributes elsewhere prove nothing)."""
    keys = attributes.keys()
    if operation == c.OP_INVOKE_AGENT and not keys.isdisjoint(_LOOP_KEYS):
        return True
    if operation == c.OP_EXECUTE_TOOL and c.JANUX_HANDOFF_STATUS in attributes:
        return True
    return not keys.isdisjoint(_BILL_KEYS)


def is_janux_trace(spans: Iterable[SpanRecord]) -> bool:
    """True when the trace carries Janux accounting (some span does: `is_janux_span`)."""
    return any(is_janux_span(s.attributes.get(c.GEN_AI_OPERATION_NAME), s.attributes) for s in spans)


def facts_of(s: Structure, janux: bool | None = None) -> StructureFacts:
    """The facts of a built structure (`janux`: whether the trace carries Janux accounting, when
    the caller knows; else read from the spans)."""
    calls = [s.read(pos) for pos, kind in enumerate(s.kinds) if kind[0] == "inference"]
    tokens_in = tokens_out = None
    for read in [*calls, *(s.read(pos) for pos in s.agent_usage)]:
        tokens_in = plus(tokens_in, read.input_tokens)
        tokens_out = plus(tokens_out, read.output_tokens)
    return StructureFacts(
        trace_id=s.index.trace_id,
        agents=_agent_facts(s, _depths(s)),
        edges=_edge_facts(s),
        inference_spans=sum(1 for r in calls if r.usage != "failed"),
        usage_read_spans=sum(1 for r in calls if r.usage == "read"),
        unread_spans=sum(1 for r in calls if r.usage in ("unread", "absent")),
        unrecognised_spans=sum(1 for kind in s.kinds if not kind[2]),
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        errors=sum(1 for span in s.index.spans if span.status_code == STATUS_ERROR),
        janux=is_janux_trace(s.index.spans) if janux is None else janux,
        segmented=has_segments(s),
        agent_usage_spans=len(s.agent_usage),
        unplaced_agents=len(unplaced_runs(s)),
    )


def is_read_whole(spans: Iterable[SpanRecord]) -> bool:
    """True when the trace's per-agent figures (usage rows, agent map rows) come from reading it
    whole: another runtime's trace, or a Janux trace where a transfer completed (its loop holds
    agent segments that no single span records). Every source routes a trace by this one rule; the
    ClickHouse source's SQL mirrors it (`clickhouse.source._READ_WHOLE`)."""
    found_janux = False
    for span in spans:
        attributes = span.attributes
        if is_completed_transfer(attributes):
            return True
        found_janux = found_janux or is_janux_span(attributes.get(c.GEN_AI_OPERATION_NAME), attributes)
    return not found_janux


def is_completed_transfer(attributes: dict[str, object]) -> bool:
    """A Janux transfer tool span whose transfer completed (`gen_ai.tool.type` = handoff and the
    final `janux.handoff.status` = completed): its loop is split into agent segments there."""
    return (
        attributes.get(c.GEN_AI_TOOL_TYPE) == c.TOOL_TYPE_HANDOFF
        and attributes.get(c.JANUX_HANDOFF_STATUS) == c.STATUS_COMPLETED
    )


def has_segments(s: Structure) -> bool:
    """True when a loop of the trace was split into agent segments (a Janux loop that transferred):
    such a trace is read whole, like another runtime's, wherever per-agent figures are made."""
    return any(loop.segmented for loop in s.loops)


def structure_facts(spans: Iterable[SpanRecord], janux: bool | None = None) -> StructureFacts:
    """Read one trace's spans (any order, duplicates allowed); see `facts_of` for `janux`."""
    return facts_of(structure(build_index(spans)), janux)
