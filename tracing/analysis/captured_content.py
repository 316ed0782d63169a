"""Which span and event attributes hold captured content, and spans with that content taken out.

Captured content is what an instrumentation records only when content capture is on: prompts and
system instructions, model outputs, tool arguments and results, the task given to an agent, a
delegation's output. The names come from the Janux contract, the OTel GenAI conventions (current
attributes and the older per-message events) and the conventions of the foreign libraries we read.
Structure some readers take from content (an OpenInference handoff's `input.value`, a LlamaIndex
handoff's arguments, a Strands graph's inputs) is lost with it: that is what redaction means.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from janux.tracing import conventions as c
from janux.tracing.records import EventRecord, SpanRecord

CONTENT_ATTRIBUTES: Final = frozenset({
    # Janux contract and OTel GenAI (span attributes; also the inference-details event's)
    c.GEN_AI_INPUT_MESSAGES, c.GEN_AI_OUTPUT_MESSAGES, c.GEN_AI_SYSTEM_INSTRUCTIONS,
    c.GEN_AI_TOOL_CALL_ARGUMENTS, c.GEN_AI_TOOL_CALL_RESULT, c.JANUX_HANDOFF_OUTPUT,
    "gen_ai.task.input", "gen_ai.task.output", "gen_ai.prompt", "gen_ai.completion",
    # OpenInference
    c.OI_INPUT_VALUE, c.OI_OUTPUT_VALUE,
    # OpenLLMetry
    "traceloop.entity.input", "traceloop.entity.output",
    # Pydantic AI / Logfire
    "final_result", "pydantic_ai.all_messages", "all_messages_events", "tool_arguments", "tool_response",
    # Google ADK
    "gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response",
    "gcp.vertex.agent.tool_call_args", "gcp.vertex.agent.tool_response",
    # CrewAI (the task text) and AutoGen (the message sent between agents)
    "task_description", "task_expected_output", "crew_tasks", "message",
})  # fmt: skip
"""Attributes (of a span or an event) whose value is captured content."""

CONTENT_PREFIXES: Final = (
    "llm.input_messages.", "llm.output_messages.", "llm.prompts.",  # OpenInference, flattened
    "gen_ai.prompt.", "gen_ai.completion.",  # OpenLLMetry and GenAI before 1.28, flattened
)  # fmt: skip
"""Prefixes of flattened message attributes (`llm.input_messages.0.message.content`)."""

MESSAGE_EVENT_CONTENT: Final = frozenset({"content", "message", "tool_calls", "tool.result"})
"""Attributes of the older GenAI message events (`gen_ai.user.message`, `gen_ai.choice`, ...) that
hold the message itself; their `role`, `id` and `finish_reason` stay."""


def is_content_attribute(key: str) -> bool:
    """Whether a span or event attribute named `key` holds captured content."""
    return key in CONTENT_ATTRIBUTES or key.startswith(CONTENT_PREFIXES)


def _is_message_event(name: str) -> bool:
    """`gen_ai.{system,user,assistant,tool}.message` and `gen_ai.choice`."""
    return name == "gen_ai.choice" or (name.startswith("gen_ai.") and name.endswith(".message"))


@dataclass(slots=True)
class Redacted:
    """Spans with captured content removed, and how many values were removed."""

    spans: list[SpanRecord]
    """The spans, each a copy where something was removed (others as given)."""
    removed: int = 0
    """Attribute values removed, over spans and events."""


def _kept(attributes: dict[str, Any], message_event: bool = False) -> dict[str, Any]:
    return {
        key: value
        for key, value in attributes.items()
        if not (is_content_attribute(key) or (message_event and key in MESSAGE_EVENT_CONTENT))
    }


def redact_span(span: SpanRecord) -> tuple[SpanRecord, int]:
    """`span` without captured content (the same object when it had none), and the values removed."""
    attributes = _kept(span.attributes)
    removed = len(span.attributes) - len(attributes)
    events = []
    for event in span.events:
        kept = _kept(event.attributes, _is_message_event(event.name))
        removed += len(event.attributes) - len(kept)
        unchanged = len(kept) == len(event.attributes)
        events.append(event if unchanged else EventRecord(event.timestamp_ns, event.name, kept))
    if not removed:
        return span, 0
    return replace(span, attributes=attributes, events=events), removed


def redact(spans: list[SpanRecord]) -> Redacted:
    """Every span of `spans` without captured content."""
    result = Redacted([])
    for span in spans:
        kept, removed = redact_span(span)
        result.spans.append(kept)
        result.removed += removed
    return result
