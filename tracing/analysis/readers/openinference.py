"""OpenInference (Arize Phoenix, smolagents, the OpenInference OpenAI Agents bridge), read side.

- `openinference.span.kind`: AGENT = agent loop; LLM, EMBEDDING = inference; TOOL = tool (named
  `handoff to {agent}`: a transfer); CHAIN, RETRIEVER, GUARDRAIL, RERANKER, EVALUATOR, PROMPT = plain.
- `llm.token_count.prompt` / `completion`: usage of an LLM span; on AGENT and CHAIN spans
  (cumulative, smolagents style) never added to the LLM spans.
- `llm.token_count.total`: never read as input or output (an LLM span with only a total is unread).
- `llm.model_name`, `llm.provider` (else `llm.system`): model, provider.
- `tool.name`: tool name. `agent.name`, else `graph.node.id`: agent name (an AGENT span with
  neither is the run, not an agent).
- `graph.node.parent_id` on an AGENT span: the agent that handed off to it (a transfer).
- `input.value` / `output.value` on a handoff span: the transfer's ends.
"""

from __future__ import annotations

from typing import Any, Final

from janux.tracing import conventions as c

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


def role(kind: str, span_name: str) -> str | None:
    """The role of a span of this `openinference.span.kind`, None when the kind is unknown."""
    found = _ROLES.get(kind.upper())
    if found == "tool" and span_name.startswith(c.OI_HANDOFF_PREFIX):
        return "transfer"
    if found is not None:
        return found
    return "plain" if kind.upper() in c.OI_STRUCTURAL_KINDS else None


def agent_name(attributes: dict[str, Any]) -> str | None:
    """`agent.name`, else `graph.node.id`; None when neither (the run's root span)."""
    for key in (c.OI_AGENT_NAME, c.OI_GRAPH_NODE_ID):
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def transfer_ends(attributes: dict[str, Any], span_name: str) -> tuple[str | None, str | None]:
    """(from, to) of a handoff TOOL span: `input.value` / `output.value`, else the span name."""
    source, target = attributes.get(c.OI_INPUT_VALUE), attributes.get(c.OI_OUTPUT_VALUE)
    if not isinstance(target, str) or not target:
        target = span_name[len(c.OI_HANDOFF_PREFIX) :] or None
    return (source if isinstance(source, str) and source else None, target)


def handed_off_from(attributes: dict[str, Any]) -> str | None:
    """`graph.node.parent_id` of an AGENT span: the agent that transferred to it."""
    value = attributes.get(c.OI_GRAPH_NODE_PARENT_ID)
    return value if isinstance(value, str) and value else None
