"""OpenInference (Arize Phoenix, smolagents, the OpenInference OpenAI Agents bridge), read side.

- `openinference.span.kind`: AGENT = agent loop; LLM, EMBEDDING = inference; TOOL = tool (named
  `handoff to {agent}`: a transfer); CHAIN, RETRIEVER, GUARDRAIL, RERANKER, EVALUATOR, PROMPT = plain.
- LlamaIndex's `{model}._prepare_chat_with_tools` LLM spans prepare a call: plain structure.
- `llm.token_count.prompt` / `completion`: usage of an LLM span; on AGENT and CHAIN spans
  (cumulative, smolagents style) never added to the LLM spans.
- `llm.token_count.total`: never read as input or output (an LLM span with only a total is unread).
- `llm.model_name`, `llm.provider` (else `llm.system`): model, provider.
- `tool.name`: tool name. `agent.name`, else `graph.node.id`, else a smolagents `{name}.run` span
  name: agent name (an AGENT span with none of them is the run, not an agent).
- LangGraph (the LangChain instrumentation): every node whose name says "agent" is an AGENT span
  without a name, one per ReAct step; the CHAIN span of the graph that runs such steps with model
  calls is the agent loop, named after the graph (`graph_loops`), and the steps are its rounds.
  A handoff tool of langgraph-swarm / langgraph-supervisor (`__handoff_destination` in its
  metadata, or a `Command(goto=..., graph=PARENT)` output) is a transfer to that agent.
- smolagents: a managed agent that raised is never exported (its span is never ended); the
  manager's step records `AgentToolExecutionError` naming the team member (`failed_team_member`).
- LlamaIndex agent workflows: no AGENT span, and one run's steps are sibling CHAIN spans whatever
  agent runs them; a `setup_agent` / `run_agent_step` step names its agent in its input
  (`current_agent_name='NAME'`, recorded content). A run of one agent is its loop; in a run whose
  agents hand over, each stretch of one agent's steps is a loop (`workflow_loops`). The `handoff`
  tool (argument `to_agent`) is a transfer.
- LangChain agents (`create_agent`): no AGENT span; the graph's run is a CHAIN span named after the
  agent whose children are graph nodes (`graph_run_name`), read as the agent's loop (`named_agents`).
- `graph.node.parent_id` on an AGENT span: the agent that handed off to it (a transfer).
- `input.value` / `output.value` on a handoff span: the transfer's ends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Final

from janux.tracing import conventions as c
from janux.tracing.records import EventRecord, SpanRecord

_ROLES: Final = {
    c.OI_KIND_AGENT: "agent", c.OI_KIND_LLM: "inference", c.OI_KIND_EMBEDDING: "inference",
    c.OI_KIND_TOOL: "tool",
}  # fmt: skip

INPUT_KEYS: Final = (c.LLM_TOKEN_COUNT_PROMPT,)
"""Input-token names."""
OUTPUT_KEYS: Final = (c.LLM_TOKEN_COUNT_COMPLETION,)
"""Output-token names."""
MODEL_KEYS: Final = (c.LLM_MODEL_NAME,)
"""Model names."""
PROVIDER_KEYS: Final = (c.LLM_PROVIDER, c.LLM_SYSTEM)
"""Provider names."""


def role(kind: str, span_name: str, attributes: dict[str, Any] | None = None) -> str | None:
    """The role of a span of this `openinference.span.kind`, None when the kind is unknown."""
    found = _ROLES.get(kind.upper())
    if found == "tool" and span_name.startswith(c.OI_HANDOFF_PREFIX):
        return "transfer"
    if found == "tool" and attributes is not None and _handoff_target(attributes):
        return "transfer"
    if found == "inference" and span_name.endswith(c.LLAMA_INDEX_PREPARE_SUFFIX):
        return "plain"
    if found is not None:
        return found
    return "plain" if kind.upper() in c.OI_STRUCTURAL_KINDS else None


def agent_name(attributes: dict[str, Any], span_name: str = "") -> str | None:
    """`agent.name`, else `graph.node.id`, else the NAME of a smolagents `NAME.run` span (not an
    agent class's name); None when none of them names it (the run's root span)."""
    for key in (c.OI_AGENT_NAME, c.OI_GRAPH_NODE_ID):
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    if span_name.endswith(c.SMOLAGENTS_RUN_SUFFIX):
        name = span_name.removesuffix(c.SMOLAGENTS_RUN_SUFFIX)
        if name and name not in c.SMOLAGENTS_AGENT_CLASSES:
            return name
    return None


def graph_loops(
    spans: Sequence[SpanRecord], parents: Sequence[int], unnamed: set[int]
) -> dict[int, str | None]:
    """LangGraph: the CHAIN spans that run unnamed AGENT spans of graph nodes (their metadata names
    the node), with the graph's name (None for LangGraph's default name). `parents` are the parent
    positions (negative at a root), `unnamed` the positions of OpenInference AGENT spans without
    a name."""
    found: dict[int, str | None] = {}
    for pos in unnamed:
        parent = parents[pos]
        if parent < 0 or parent in found:
            continue
        graph = spans[parent]
        if graph.attributes.get(c.OI_SPAN_KIND) != c.OI_KIND_CHAIN or not _is_graph_node(spans[pos]):
            continue
        found[parent] = graph.name if graph.name and graph.name != c.LANGGRAPH_DEFAULT_NAME else None
    return found


def graph_run_name(spans: Sequence[SpanRecord], children: Sequence[int], pos: int) -> str | None:
    """The name of a CHAIN span that is a graph's run (a child of it is a CHAIN or AGENT span whose
    metadata names its graph node), None for any other span or a graph under the library's default
    name: the name the application gave its graph (LangChain's `create_agent(name=...)` agents)."""
    span = spans[pos]
    if span.attributes.get(c.OI_SPAN_KIND) != c.OI_KIND_CHAIN or span.name in ("", c.LANGGRAPH_DEFAULT_NAME):
        return None
    for child in children:
        node = spans[child]
        if node.attributes.get(c.OI_SPAN_KIND) in _NODE_KINDS and _is_graph_node(node):
            return span.name
    return None


_NODE_KINDS: Final = frozenset({c.OI_KIND_CHAIN, c.OI_KIND_AGENT})
"""Kinds of a graph node's span (a node named like an agent is an AGENT span)."""


def langgraph_handoff(attributes: dict[str, Any]) -> str | None:
    """The agent a LangGraph handoff tool hands over to: its metadata's `__handoff_destination`
    (langgraph-swarm, langgraph-supervisor), else the `goto` of the `Command` it returned to the
    parent graph (its output, when content is recorded); None for any other tool."""
    metadata = _json_object(attributes.get(c.OI_METADATA), c.LANGGRAPH_HANDOFF_KEY)
    target = metadata.get(c.LANGGRAPH_HANDOFF_KEY)
    if isinstance(target, str) and target:
        return target
    command = _json_object(attributes.get(c.OI_OUTPUT_VALUE), '"goto"')
    goto = command.get("goto")
    if command.get("graph") == c.LANGGRAPH_PARENT_GRAPH and isinstance(goto, str) and goto:
        return goto
    return None


def _handoff_target(attributes: dict[str, Any]) -> str | None:
    """The target of a LangGraph or LlamaIndex handoff tool span, None for any other tool."""
    return langgraph_handoff(attributes) or llama_index_handoff(attributes)


def llama_index_handoff(attributes: dict[str, Any]) -> str | None:
    """The agent a LlamaIndex `AgentWorkflow` handoff tool call hands over to: the `to_agent`
    argument in its input (recorded content); None for any other tool."""
    if attributes.get(c.OI_TOOL_NAME) != c.LLAMA_INDEX_HANDOFF_TOOL:
        return None
    kwargs = _json_object(attributes.get(c.OI_INPUT_VALUE), c.LLAMA_INDEX_HANDOFF_ARG).get("kwargs")
    target = kwargs.get(c.LLAMA_INDEX_HANDOFF_ARG) if isinstance(kwargs, dict) else None
    return target if isinstance(target, str) and target else None


def llama_index_step_agent(span: SpanRecord) -> str | None:
    """The agent running a LlamaIndex agent-workflow step span (`setup_agent`, `run_agent_step`): the
    last `current_agent_name='NAME'` in its input, as the step's event ends its repr with it (an
    earlier one is chat content); None for any other span, or when the input was not recorded."""
    if not span.name.endswith(c.LLAMA_INDEX_AGENT_STEPS):
        return None
    text = span.attributes.get(c.OI_INPUT_VALUE)
    if span.attributes.get(c.OI_SPAN_KIND) != c.OI_KIND_CHAIN or not isinstance(text, str):
        return None
    at = text.rfind(c.LLAMA_INDEX_AGENT_FIELD)
    if at < 0:
        return None
    start = at + len(c.LLAMA_INDEX_AGENT_FIELD)
    end = text.find("'", start)
    return text[start:end] or None if end > start else None


def workflow_loops(
    parents: Sequence[int], children: Sequence[Sequence[int]], named: dict[int, str]
) -> tuple[dict[int, str], dict[int, int]]:
    """LlamaIndex agent workflows, whose steps are sibling spans below the run span whatever agent
    runs them: (agent loops: position -> agent name, joined steps: position -> the span of the
    loop they belong to). `named` maps each named step span (`llama_index_step_agent`) to its
    agent. A run whose steps are all one agent's is that agent's loop (its run span); in a run
    whose agents hand over, each stretch of steps of one agent is a loop started by its first
    step, and the later steps of the stretch (tool calls, results) join it."""
    loops: dict[int, str] = {}
    joined: dict[int, int] = {}
    for run in {parents[pos] for pos in named if parents[pos] >= 0}:
        stretches: list[list[int]] = []
        for child in children[run]:
            name = named.get(child)
            if name is not None and (not stretches or named[stretches[-1][0]] != name):
                stretches.append([child])
            elif stretches:
                stretches[-1].append(child)
        if len(stretches) == 1:
            loops[run] = named[stretches[0][0]]
            continue
        for first, *rest in stretches:
            loops[first] = named[first]
            joined.update(dict.fromkeys(rest, first))
    return loops, joined


def _json_object(value: object, needle: str) -> dict[str, Any]:
    """`value` parsed as a JSON object when it is text holding `needle` (cheap test first), else {}."""
    if not isinstance(value, str) or needle not in value:
        return {}
    try:
        parsed = json.loads(value)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _is_graph_node(span: SpanRecord) -> bool:
    """A LangGraph node's span: its metadata names the node."""
    metadata = span.attributes.get(c.OI_METADATA)
    return isinstance(metadata, str) and f'"{c.LANGGRAPH_NODE_KEY}"' in metadata


_TEAM_MEMBER: Final = re.compile(r"team member '([^']+)'")


def _team_member(event: EventRecord) -> str | None:
    kind = str(event.attributes.get(c.EXCEPTION_TYPE) or "")
    if event.name != c.EVENT_EXCEPTION or not kind.endswith(c.SMOLAGENTS_TOOL_ERROR):
        return None
    found = _TEAM_MEMBER.search(str(event.attributes.get(c.EXCEPTION_MESSAGE) or ""))
    return found.group(1) if found else None


def failed_team_member(span: SpanRecord) -> str | None:
    """The managed agent a failed smolagents step called when that agent raised, else None."""
    if span.attributes.get(c.OI_SPAN_KIND) != c.OI_KIND_CHAIN:
        return None
    return next((name for name in map(_team_member, span.events) if name), None)


def transfer_ends(attributes: dict[str, Any], span_name: str) -> tuple[str | None, str | None]:
    """(from, to) of a handoff TOOL span: a LangGraph handoff's destination (its source is the loop
    that called it); else `input.value` / `output.value`, else the span name."""
    destination = _handoff_target(attributes)
    if destination is not None:
        return None, destination
    source, target = attributes.get(c.OI_INPUT_VALUE), attributes.get(c.OI_OUTPUT_VALUE)
    if not isinstance(target, str) or not target:
        target = span_name[len(c.OI_HANDOFF_PREFIX) :] or None
    return (source if isinstance(source, str) and source else None, target)


def handed_off_from(attributes: dict[str, Any]) -> str | None:
    """`graph.node.parent_id` of an AGENT span: the agent that transferred to it."""
    value = attributes.get(c.OI_GRAPH_NODE_PARENT_ID)
    return value if isinstance(value, str) and value else None
