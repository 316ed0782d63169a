"""The OpenTelemetry GenAI semantic conventions, read side (current and older names).

- `gen_ai.operation.name`: chat, text_completion, generate_content, embeddings = inference;
  invoke_agent = agent loop; execute_tool = tool; agent_handoff (OpenLLMetry: handoff) = transfer;
  create_agent and unknown (the OTel OpenAI Agents bridge's task/turn spans), invoke_workflow (Google ADK),
  invoke_swarm / invoke_graph / execute_event_loop_cycle (Strands), execute_task (OpenLLMetry's
  LangChain tasks) = plain structure.
- `execute_tool` of `transfer_to_agent` (Google ADK, `gen_ai.tool.type` TransferToAgentTool) or
  `handoff_to_agent` (Strands swarm): a transfer to the next agent that runs; of
  `transfer_to_{agent}` on AutoGen's spans (`gen_ai.system` autogen: AgentChat handoffs): a
  transfer to that agent.
- `gen_ai.agent.name` (agent spans only; else the `invoke_agent {name}` span name): agent name.
- `gen_ai.tool.name`, `gen_ai.tool.type` (`handoff` = a transfer tool): the tool.
- `gen_ai.usage.input_tokens` / `output_tokens`, older `prompt_tokens` / `completion_tokens`:
  usage of an inference span, never of an agent span.
- `gen_ai.aggregated_usage.*` (Pydantic AI) and `gen_ai.usage.*` on agent spans (Strands):
  accumulated usage, never added to the rounds.
- `gen_ai.request.model` / `gen_ai.response.model`, `gen_ai.provider.name` (older `gen_ai.system`).
- `gen_ai.handoff.from_agent` / `to_agent`: transfer ends (the OTel OpenAI Agents bridge).
- A Strands graph's edges are in no attribute: a node agent's recorded input names the nodes it
  depends on (`Inputs from previous nodes:` then `From NODE:` each), read by `graph_inputs`.
"""

from __future__ import annotations

import re
from typing import Any, Final

from janux.tracing import conventions as c
from janux.tracing.records import SpanRecord

AGENT_OPERATIONS: Final = frozenset({c.OP_INVOKE_AGENT})
"""Operations of an agent loop."""
TURN_OPERATIONS: Final = frozenset({c.OP_INVOKE_WORKFLOW, c.OP_INVOKE_SWARM, c.OP_INVOKE_GRAPH})
"""Spans around a whole multi-agent run (Google ADK's workflow, Strands' swarm and graph): the turn,
read as plain structure so that the agents below it are its top-level loops."""
PLAIN_OPERATIONS: Final = (
    frozenset({c.OP_CREATE_AGENT, c.OP_UNKNOWN, c.OP_EXECUTE_EVENT_LOOP_CYCLE, c.OP_EXECUTE_TASK})
    | TURN_OPERATIONS
)
"""Operations read as plain structure (known, but neither a loop, a call nor a tool)."""
KNOWN_OPERATIONS: Final = c.READ_INFERENCE_OPERATIONS | AGENT_OPERATIONS | PLAIN_OPERATIONS | frozenset(
    {c.OP_EXECUTE_TOOL, c.OP_AGENT_HANDOFF, c.OP_HANDOFF}
)
"""Every `gen_ai.operation.name` value this mapping understands."""

INPUT_KEYS: Final = (c.GEN_AI_USAGE_INPUT_TOKENS, c.GEN_AI_USAGE_PROMPT_TOKENS)
"""Input-token names, current first."""
OUTPUT_KEYS: Final = (c.GEN_AI_USAGE_OUTPUT_TOKENS, c.GEN_AI_USAGE_COMPLETION_TOKENS)
"""Output-token names, current first."""
MODEL_KEYS: Final = (c.GEN_AI_REQUEST_MODEL, c.GEN_AI_RESPONSE_MODEL)
"""Model names, requested first (the key usage is grouped by)."""
PROVIDER_KEYS: Final = (c.GEN_AI_PROVIDER_NAME, c.GEN_AI_SYSTEM_DEPRECATED)
"""Provider names, current first."""


_ROLE_OF_OPERATION: Final = {
    **dict.fromkeys(c.READ_INFERENCE_OPERATIONS, "inference"), **dict.fromkeys(AGENT_OPERATIONS, "agent"),
    c.OP_EXECUTE_TOOL: "tool", c.OP_AGENT_HANDOFF: "transfer", c.OP_HANDOFF: "transfer",
    **dict.fromkeys(PLAIN_OPERATIONS, "plain"),
}  # fmt: skip


def role(operation: str) -> str | None:
    """The role of a span with this `gen_ai.operation.name`, None when the value is unknown."""
    return _ROLE_OF_OPERATION.get(operation)


def agent_name(attributes: dict[str, Any], span_name: str) -> str | None:
    """`gen_ai.agent.name`, else the subject of an `invoke_agent {name}` span name; None when neither."""
    name = attributes.get(c.GEN_AI_AGENT_NAME)
    if isinstance(name, str) and name:
        return name
    head, _, rest = span_name.partition(" ")
    return rest if head == c.OP_INVOKE_AGENT and rest else None


def is_transfer_tool(attributes: dict[str, Any]) -> bool:
    """A tool call that hands the conversation over (Google ADK's `transfer_to_agent`, a Strands
    swarm's `handoff_to_agent`): a transfer whose target is the next agent that runs."""
    if attributes.get(c.GEN_AI_TOOL_TYPE) == c.ADK_TRANSFER_TOOL_TYPE:
        return True
    name = attributes.get(c.GEN_AI_TOOL_NAME)
    if not isinstance(name, str):
        return False
    return name in c.TRANSFER_TOOL_NAMES or _autogen_handoff(attributes, name)


def _autogen_handoff(attributes: dict[str, Any], tool: str) -> bool:
    autogen = attributes.get(c.GEN_AI_SYSTEM_DEPRECATED) == c.AUTOGEN_SYSTEM
    return autogen and tool.startswith(c.TRANSFER_TOOL_PREFIX)


def transfer_ends(attributes: dict[str, Any]) -> tuple[str | None, str | None]:
    """(from, to) of an `agent_handoff` span; of a transfer tool, the agent its name ends with
    (`transfer_to_billing`: billing), else None (the next agent that runs)."""
    source, target = attributes.get(c.GEN_AI_HANDOFF_FROM_AGENT), attributes.get(c.GEN_AI_HANDOFF_TO_AGENT)
    tool = attributes.get(c.GEN_AI_TOOL_NAME)
    if not isinstance(target, str) and isinstance(tool, str) and _autogen_handoff(attributes, tool):
        target = tool.removeprefix(c.TRANSFER_TOOL_PREFIX)
    return (source if isinstance(source, str) else None, target)


_GRAPH_SOURCE: Final = re.compile(r'(?:\\n|\n)From ([^:"\\\n]+):')
"""`From NODE:` at the start of a line (escaped inside JSON text, or not)."""


def graph_inputs(span: SpanRecord) -> tuple[str, ...]:
    """The Strands graph nodes whose results feed the agent of `span` (an `invoke_agent` span below
    `invoke_graph`), in the order its input lists them; () when its input names none or was not
    recorded."""
    texts = [span.attributes.get(key) for key in c.STRANDS_CONTENT_KEYS]
    texts += [event.attributes.get(key) for event in span.events for key in c.STRANDS_CONTENT_KEYS]
    for text in texts:
        if isinstance(text, str) and c.STRANDS_GRAPH_INPUTS in text:
            after = text[text.index(c.STRANDS_GRAPH_INPUTS) + len(c.STRANDS_GRAPH_INPUTS) :]
            return tuple(dict.fromkeys(_GRAPH_SOURCE.findall(after)))
    return ()
