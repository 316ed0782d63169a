"""Agents where no span says "agent": a structural span that names an agent and holds its work.

Some instrumentations write no agent span at all: a task, chain or workflow span names the agent
and holds its model calls and tool calls, and a sub-agent is such a span below a tool call. Such a
span is that agent's loop. A span names an agent by an attribute whose meaning is an agent's name:

- `gen_ai.agent.name` (GenAI semantic conventions: the name of the agent the span belongs to), on a
  span of any operation that is neither an agent, a model call nor a tool call (`execute_task`,
  `invoke_workflow`, none at all);
- OpenInference `agent.name`, else `graph.node.id` (the agent or node of the agent graph), on a span
  of a structural kind (CHAIN and the like);
- the span name of an OpenInference CHAIN span that is a graph's run (its children are graph nodes,
  their metadata names the node) and not the graph library's default name: the agent's name as the
  application gave it to the graph;
- OpenLLMetry: `traceloop.entity.name` of an `agent` span is already an agent; of a `workflow` or
  `task` span it names an entity (a chain, a step), not an agent, and is not read as one.

Such a span is a loop only where it is no step of a loop already: at the top of the trace (below no
agent span), or below a tool call (a sub-agent run by that tool). Inside a loop with no tool call
between, it is a stretch of that loop's own work (a workflow node, a task), not another agent. And
it must hold model calls or tool calls of its own (below it, with no agent span between): a span
that only names an agent (`create_agent`, a configuration step) runs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, Final

from janux.tracing import conventions as c
from janux.tracing.analysis.span_index import NO_PARENT, SpanIndex

_WORK: Final = frozenset({"inference", "tool", "transfer"})
"""Roles of the spans that are an agent's own work (model calls, tool calls, handoffs)."""
_OI_NAME_KEYS: Final = (c.OI_AGENT_NAME, c.OI_GRAPH_NODE_ID)


def _text(attributes: dict[str, Any], key: str) -> str | None:
    value = attributes.get(key)
    return value if isinstance(value, str) and value.strip() else None


def named_agent(attributes: dict[str, Any], convention: str) -> str | None:
    """The agent a structural span (role `plain`, decided by `convention`) names by attribute,
    None when it names none."""
    name = _text(attributes, c.GEN_AI_AGENT_NAME)
    if name is not None:
        return name
    if convention != "openinference":
        return None
    return next((found for key in _OI_NAME_KEYS if (found := _text(attributes, key))), None)


def _holds_work(index: SpanIndex, kinds: Sequence[tuple[str, str, bool]]) -> list[bool]:
    """Per span: True when a model call, tool call or handoff lies below it with no agent span
    between (children before parents: the index's order reversed)."""
    holds = [False] * len(index.spans)
    for pos in reversed(index.order):
        parent = index.parent[pos]
        if parent == NO_PARENT:
            continue
        kind = kinds[pos][0]
        if kind in _WORK or (kind != "agent" and holds[pos]):
            holds[parent] = True
    return holds


def loop_spans(
    index: SpanIndex,
    kinds: Sequence[tuple[str, str, bool]],
    graph_name: Callable[[int], str | None],
    skip: Collection[int] = (),
    unnamed: Collection[int] = (),
) -> dict[int, str]:
    """Structural spans to read as agent loops (position -> agent name), by the rules above.

    `kinds`: each span's `spans.classify` (role, convention, recognised); `graph_name`: the name a
    span has as a graph's run (None when it is none); `skip`: spans another rule already placed;
    `unnamed`: the agent spans without a name, read as the run's wrapper (the OpenAI Agents SDK's
    workflow root): a span naming an agent below one is not taken for a step of it."""
    names: dict[int, str] = {}
    for pos, kind in enumerate(kinds):
        if kind[0] != "plain" or pos in skip:  # (a Janux trace has no plain span: nothing more to do)
            continue
        name = named_agent(index.spans[pos].attributes, kind[1]) or graph_name(pos)
        if name is not None:
            names[pos] = name
    if not names:
        return {}
    holds = _holds_work(index, kinds)
    in_loop = [False] * len(index.spans)  # below an agent (or a loop found here) with no tool between
    found: dict[int, str] = {}
    for pos in index.order:
        parent = index.parent[pos]
        above = in_loop[parent] if parent != NO_PARENT else False
        role = kinds[pos][0]
        if role == "agent":
            in_loop[pos] = above if pos in unnamed else True
        elif role in ("tool", "transfer"):
            in_loop[pos] = False
        elif pos in names and holds[pos] and not above:
            found[pos] = names[pos]
            in_loop[pos] = True
        else:
            in_loop[pos] = above
    return found
