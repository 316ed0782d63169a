"""The shapes of one trace read: agent loops, the edges between them and how each was found.

`structure` builds them (`structure.structure`); `containment` places runs by time. Kept apart so
that the rules that refine a built structure import the shapes, not the builder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from janux.tracing.analysis.readers.spans import SpanRead, read_span
from janux.tracing.analysis.span_index import SpanIndex

EdgeKind = Literal["delegate", "transfer"]
"""A delegation to a subagent, or a transfer of the conversation."""

FoundBy = Literal["recorded", "tool nesting", "time containment", "workflow edge", "span link"]
"""How an edge was found, in the order of trust: `recorded` (the trace says it: Janux's contract, a
handoff span naming its target, an agent span nested in another's, a parent id naming the agent
handed from), `tool nesting` (an agent run below a tool call of another agent's loop), `workflow edge`
(a workflow's or graph's recorded edge between executors or nodes), `span link` (a span link from
one agent's span to another's), `time containment` (an agent run inside a tool call's time window
without a parent relation saying so, or the next run after a handoff that names no target)."""
FOUND_BY: Final[tuple[FoundBy, ...]] = (
    "recorded", "tool nesting", "workflow edge", "span link", "time containment",
)  # fmt: skip
"""Every `FoundBy` value, most trusted first."""



@dataclass(slots=True)
class Loop:
    """One agent loop (a node of the handoff tree)."""

    pos: int
    """Position of its agent span in the index (-1 for the stand-in holding loose model calls)."""
    name: str
    """Agent name (`(unnamed agent)` when the span has none)."""
    parent: int | None = None
    """The calling loop, None at a root."""
    via: int | None = None
    """The edge that started it, None when nothing did."""
    calls: list[int] = field(default_factory=list)
    """Positions of its own inference spans."""
    edges: list[int] = field(default_factory=list)
    """Edges it started, in start order."""
    retried: bool = False
    """True when the library ran the same agent again inside this run (`structure`'s retries): this
    attempt failed, whatever its span's status says."""
    segment: int = 0
    """Which agent segment of its span it is: 0 for the first (or only), n after the n-th transfer."""
    segmented: bool = False
    """True when its span holds several agent segments (a Janux loop that transferred): its own
    usage is then its rounds', not the span's `janux.turn.*` (which covers every segment)."""
    start_ns: int | None = None
    """Start of a segment after the first (its first round); None: its span's start."""
    end_ns: int | None = None
    """End of a segment followed by another (the next one's start); None: its span's end."""


@dataclass(slots=True)
class Edge:
    """One delegation or transfer: from a calling loop to its attempts."""

    kind: EdgeKind
    """Delegation or transfer."""
    tool_pos: int
    """Position of the tool (or handoff) span, -1 for an agent nested directly in another."""
    caller: int | None
    """The calling loop, None when unknown."""
    target: str = ""
    """Target agent (recorded, else the first attempt's name)."""
    attempts: list[int] = field(default_factory=list)
    """Loops that ran it, in start order."""
    shares_run: bool = False
    """True when its attempts are another edge's (a Strands graph node fed by several nodes runs
    once for all of them): that edge owns the run (it is the loop's `via`) and counts it; this
    one reads its status from it but adds no attempt, usage or cost to any sum."""
    found: FoundBy = "recorded"
    """How the edge was found (`FoundBy`)."""


@dataclass(slots=True)
class Structure:
    """Loops and edges of one indexed trace, with each span's loop."""

    index: SpanIndex
    """The indexed spans."""
    kinds: list[tuple[str, str, bool]]
    """`spans.classify` of each span, by position: (role, convention, recognised)."""
    loops: list[Loop] = field(default_factory=list)
    """Loops in depth-first start order (parents before children)."""
    edges: list[Edge] = field(default_factory=list)
    """Edges in depth-first start order."""
    loop_of: list[int] = field(default_factory=list)
    """Per span: the loop it belongs to (-1 when none)."""
    loose: int = -1
    """The stand-in loop holding model calls outside any loop (-1 when there is none)."""
    agent_usage: list[int] = field(default_factory=list)
    """Agent spans whose own usage is their loop's (nothing below them carries usage: `agent_usage`);
    each is in its loop's `calls` too."""
    _reads: dict[int, SpanRead] = field(default_factory=dict)

    def read(self, pos: int) -> SpanRead:
        """`read_span` of the span at `pos` (read once, when first needed)."""
        found = self._reads.get(pos)
        if found is None:
            found = self._reads[pos] = read_span(self.index.spans[pos])
        return found

    def role(self, pos: int) -> str:
        """The role of the span at `pos`."""
        return self.kinds[pos][0]


RETRIED_ERROR: Final = "run again by the library (this attempt failed)"
"""Error text of an attempt the library re-ran inside itself and whose span records no error."""

UNNAMED_AGENT = "(unnamed agent)"
"""Name of an agent loop whose span carries no agent name."""
LOOSE_AGENT = "(no agent)"
"""Name of the stand-in loop holding model calls that run outside any agent loop."""
