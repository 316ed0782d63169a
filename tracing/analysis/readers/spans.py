"""One span read with every convention Janux knows: role, names, usage, transfer ends, error.

The conventions are tried in a fixed order: `gen_ai.operation.name` (GenAI, Janux's own),
`openinference.span.kind`, OpenLLMetry's kinds, then the first word of the span name when it is a
GenAI operation. Usage is read only on inference spans, under any convention's names; what looks
like usage but cannot be read is reported as `unread`, never as zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final, Literal

from janux.tracing import conventions as c
from janux.tracing.analysis.readers import genai, openinference, openllmetry
from janux.tracing.records import STATUS_ERROR, SpanRecord

Role = Literal["agent", "inference", "tool", "transfer", "plain"]
"""What a span is: an agent loop, one model call, a tool call, a transfer of the conversation, or
plain structure (anything else, including the kinds a convention declares as structural)."""

UsageState = Literal["read", "unread", "absent", "failed", "none"]
"""Usage of an inference span: `read` (tokens under a known name), `unread` (usage-like attributes
under names Janux does not read), `absent` (no usage at all: unknown), `failed` (the call failed
and returned none), `none` (not an inference span)."""

Convention = Literal["genai", "openinference", "openllmetry", "span name", ""]
"""Which convention decided the role ("" for a span that declares none)."""

INPUT_KEYS: Final = genai.INPUT_KEYS + openinference.INPUT_KEYS
"""Every input-token name read, in order of preference."""
OUTPUT_KEYS: Final = genai.OUTPUT_KEYS + openinference.OUTPUT_KEYS
"""Every output-token name read, in order of preference."""
MODEL_KEYS: Final = genai.MODEL_KEYS + openinference.MODEL_KEYS
"""Every model name read (requested model first)."""
PROVIDER_KEYS: Final = genai.PROVIDER_KEYS + openinference.PROVIDER_KEYS
"""Every provider name read."""
MAX_COUNT: Final = 2**40
"""Largest token count believed (larger or infinite values count as absent)."""
_SPAN_NAME_OPS: Final = frozenset({c.OP_INVOKE_AGENT, c.OP_EXECUTE_TOOL}) | c.READ_INFERENCE_OPERATIONS


@dataclass(slots=True)
class SpanRead:
    """What Janux reads off one span."""

    role: Role
    """Agent loop, inference, tool, transfer or plain."""
    convention: Convention
    """The convention that decided the role."""
    recognised: bool
    """False when the span declares a kind Janux does not know, or carries usage-like attributes
    without any kind (counted in a trace's coverage as spans of a kind not recognised)."""
    agent: str | None = None
    """Agent name of an agent span (None when it has none: then it is no agent's loop)."""
    tool: str | None = None
    """Tool name of a tool span."""
    model: str = ""
    """Requested model (else the response model) of an inference span."""
    provider: str = ""
    """Provider of an inference span."""
    usage: UsageState = "none"
    """Whether usage was read (inference spans only)."""
    input_tokens: int | None = None
    """Input tokens read (None unless `usage` is `read`)."""
    output_tokens: int | None = None
    """Output tokens read (None unless `usage` is `read`)."""
    transfer_from: str | None = None
    """A transfer's source agent (handoff spans; OpenInference agents reached by a handoff)."""
    transfer_to: str | None = None
    """A transfer's target agent."""


def _count(attributes: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    """The first of `keys` holding a believable token count."""
    for key in keys:
        value = attributes.get(key)
        if value is None or isinstance(value, bool):
            continue
        try:
            number = value if type(value) is int else int(float(value))
        except (TypeError, ValueError, OverflowError):
            continue
        if -MAX_COUNT <= number <= MAX_COUNT and not (isinstance(value, float) and math.isnan(value)):
            return number
    return None


def first_text(attributes: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The first non-empty string among `keys`, else ""."""
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def looks_like_usage(attributes: dict[str, Any]) -> bool:
    """True when some attribute name speaks of tokens (usage under a name Janux may not read)."""
    return any("token" in key.lower() for key in attributes)


_IN, _OUT = c.GEN_AI_USAGE_INPUT_TOKENS, c.GEN_AI_USAGE_OUTPUT_TOKENS


def read_usage(attributes: dict[str, Any], status_code: str) -> tuple[UsageState, int | None, int | None]:
    """(state, input, output) of an inference span's attributes."""
    fast_in, fast_out = attributes.get(_IN), attributes.get(_OUT)
    if type(fast_in) is int and type(fast_out) is int and max(abs(fast_in), abs(fast_out)) <= MAX_COUNT:
        return "read", fast_in, fast_out  # the current GenAI names, as Janux writes them
    tokens_in = _count(attributes, INPUT_KEYS)
    tokens_out = _count(attributes, OUTPUT_KEYS)
    if tokens_in is not None or tokens_out is not None:
        return "read", tokens_in or 0, tokens_out or 0
    if looks_like_usage(attributes):
        return "unread", None, None
    return ("failed" if status_code == STATUS_ERROR else "absent"), None, None


_GENAI_KINDS: Final[dict[str, tuple[Role, Convention, bool]]] = {
    operation: (genai.role(operation), "genai", True)  # type: ignore[misc]
    for operation in genai.KNOWN_OPERATIONS
}

_ROLES: Final[dict[str, Role]] = {
    "agent": "agent", "inference": "inference", "tool": "tool", "transfer": "transfer", "plain": "plain",
}  # fmt: skip


def _declared(attributes: dict[str, Any], span_name: str) -> tuple[str | None, Convention] | None:
    """(role or None when the declared kind is unknown, convention) of the kind the span declares."""
    operation = attributes.get(c.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str) and operation:
        return genai.role(operation), "genai"
    kind = attributes.get(c.OI_SPAN_KIND)
    if isinstance(kind, str) and kind:
        return openinference.role(kind, span_name, attributes), "openinference"
    if openllmetry.declares_kind(attributes):
        return openllmetry.role(attributes), "openllmetry"
    head = span_name.split(" ", 1)[0]
    if head in _SPAN_NAME_OPS:
        return genai.role(head), "span name"
    return None


def classify(attributes: dict[str, Any], span_name: str) -> tuple[Role, Convention, bool]:
    """(role, deciding convention, recognised) of a span."""
    operation = attributes.get(c.GEN_AI_OPERATION_NAME)
    if type(operation) is str:  # the common case: the GenAI conventions (Janux's own spans)
        known = _GENAI_KINDS.get(operation)
        if known is not None:
            if known[0] == "tool" and genai.is_transfer_tool(attributes):
                return "transfer", "genai", True
            return known
    declared = _declared(attributes, span_name)
    if declared is None:
        return "plain", "", not looks_like_usage(attributes)
    role, convention = declared
    if role is None:
        return "plain", convention, False
    return _ROLES[role], convention, True


def _agent_name(attributes: dict[str, Any], span_name: str, convention: Convention) -> str | None:
    if convention == "openinference":
        return openinference.agent_name(attributes, span_name) or genai.agent_name(attributes, "")
    if convention == "openllmetry":
        return openllmetry.entity_name(attributes) or genai.agent_name(attributes, span_name)
    return genai.agent_name(attributes, span_name)


def _tool_name(attributes: dict[str, Any], span_name: str) -> str:
    for key in (c.GEN_AI_TOOL_NAME, c.OI_TOOL_NAME, c.TRACELOOP_ENTITY_NAME):
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    head, _, rest = span_name.partition(" ")
    return rest if head == c.OP_EXECUTE_TOOL and rest else span_name


def read_span(span: SpanRecord) -> SpanRead:
    """Everything Janux reads off `span`."""
    attrs = span.attributes
    role, convention, recognised = classify(attrs, span.name)
    if role == "agent":
        handed = openinference.handed_off_from(attrs) if convention == "openinference" else None
        return SpanRead(role, convention, recognised, agent=_agent_name(attrs, span.name, convention),
                        transfer_from=handed)  # fmt: skip
    if role == "inference":
        state, tokens_in, tokens_out = read_usage(attrs, span.status_code)
        model, provider = first_text(attrs, MODEL_KEYS), first_text(attrs, PROVIDER_KEYS)
        return SpanRead(role, convention, recognised, model=model, provider=provider, usage=state,
                        input_tokens=tokens_in, output_tokens=tokens_out)  # fmt: skip
    if role == "transfer":
        if convention == "openinference":
            source, target = openinference.transfer_ends(attrs, span.name)
        else:
            source, target = genai.transfer_ends(attrs)
        explicit = attrs.get(c.GEN_AI_TOOL_NAME)
        tool = explicit if isinstance(explicit, str) and explicit else f"{c.OI_HANDOFF_PREFIX}{target or '?'}"
        return SpanRead(role, convention, recognised, tool=tool, transfer_from=source,
                        transfer_to=target)  # fmt: skip
    if role == "tool":
        return SpanRead(role, convention, recognised, tool=_tool_name(attrs, span.name))
    return SpanRead(role, convention, recognised)


def error_text(span: SpanRecord) -> tuple[str | None, str | None]:
    """(error text, stack trace) of a failed span: the status message, else its `exception` event
    (`type: message`); (None, None) when the span did not fail or says nothing."""
    stack = None
    text = span.status_message or None
    for event in span.events:
        if event.name != c.EVENT_EXCEPTION:
            continue
        attrs = event.attributes
        kind, message = attrs.get(c.EXCEPTION_TYPE), attrs.get(c.EXCEPTION_MESSAGE)
        trace = attrs.get(c.EXCEPTION_STACKTRACE)
        stack = str(trace) if trace else stack
        if text is None and (kind or message):
            text = ": ".join(str(part) for part in (kind, message) if part)
    if span.status_code != STATUS_ERROR and text is None:
        return None, None
    return text, stack
