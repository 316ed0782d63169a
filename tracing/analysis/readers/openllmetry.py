"""OpenLLMetry (Traceloop), read side.

- `llm.request.type`: chat, completion, embedding = inference.
- `traceloop.span.kind`: agent = agent loop; tool = tool; workflow, task = plain.
- `traceloop.entity.name`: agent or tool name.
- `gen_ai.usage.prompt_tokens` / `completion_tokens` (the older GenAI names): usage.
- `llm.usage.total_tokens`: never read as input or output.
- LangChain instrumentation (0.62): a graph run inside a tool gets an `invoke_agent NAME` span
  with no children beside, not around, its workflow's task span (`traceloop.span.kind` task,
  `traceloop.entity.name` NAME): that task is the agent's body (`task_name`).
"""

from __future__ import annotations

from typing import Any, Final

from janux.tracing import conventions as c

_REQUEST_TYPES: Final = frozenset({"chat", "completion", "embedding"})
_KINDS: Final = {"agent": "agent", "tool": "tool", "workflow": "plain", "task": "plain"}


def role(attributes: dict[str, Any]) -> str | None:
    """The role an OpenLLMetry span declares, None when it declares none this mapping knows."""
    request = attributes.get(c.LLM_REQUEST_TYPE)
    if isinstance(request, str) and request.lower() in _REQUEST_TYPES:
        return "inference"
    kind = attributes.get(c.TRACELOOP_SPAN_KIND)
    if isinstance(kind, str):
        return _KINDS.get(kind.lower())
    return None


def declares_kind(attributes: dict[str, Any]) -> bool:
    """True when the span carries an OpenLLMetry kind attribute (known or not)."""
    return c.LLM_REQUEST_TYPE in attributes or c.TRACELOOP_SPAN_KIND in attributes


def entity_name(attributes: dict[str, Any]) -> str | None:
    """`traceloop.entity.name`."""
    value = attributes.get(c.TRACELOOP_ENTITY_NAME)
    return value if isinstance(value, str) and value else None


def task_name(attributes: dict[str, Any]) -> str | None:
    """The entity name of an OpenLLMetry task span, None for any other span."""
    if attributes.get(c.TRACELOOP_SPAN_KIND) != "task":
        return None
    return entity_name(attributes)
