"""Find traces by what happened inside them: a failure reason, an agent anywhere in the tree, a
piece of error text, or a span attribute `key=value` (the Traces list's "Find inside traces")."""

from __future__ import annotations

from dataclasses import dataclass

from janux.tracing.analysis import outcomes
from janux.tracing.analysis.trace_view import TraceView


@dataclass(slots=True)
class TraceQuery:
    """What to look for inside a trace; an empty field matches every trace."""

    reason: str = ""
    """A failure reason (`rate_limited`, `max_turns`, `model_error`), retried attempts included."""
    agent: str = ""
    """An agent that ran anywhere in the trace (exact name)."""
    error: str = ""
    """Text inside any error message or status message (any case)."""
    attribute: str = ""
    """`key=value` (a span attribute equal to the value), or `key` alone (the attribute is set)."""

    @property
    def active(self) -> bool:
        """True when any field is set."""
        return bool(self.reason or self.agent or self.error or self.attribute)


def _has_reason(view: TraceView, reason: str) -> bool:
    wanted = outcomes.reason_name(reason)
    return any(f.reason == wanted for f in view.failures)


def _has_error(view: TraceView, text: str) -> bool:
    needle = text.lower()
    messages = [f.error or "" for f in view.failures] + [s.status_message for s in view.index.spans]
    return any(needle in message.lower() for message in messages)


def _has_attribute(view: TraceView, attribute: str) -> bool:
    key, sep, value = attribute.partition("=")
    key, value = key.strip(), value.strip()
    for span in view.index.spans:
        if key in span.attributes and (not sep or str(span.attributes[key]) == value):
            return True
    return False


def matches(view: TraceView, query: TraceQuery) -> bool:
    """True when the rebuilt trace has everything `query` asks for."""
    if query.reason and not _has_reason(view, query.reason.strip()):
        return False
    if query.agent and all(n.agent != query.agent.strip() for n in view.nodes):
        return False
    if query.error and not _has_error(view, query.error.strip()):
        return False
    return not (query.attribute and not _has_attribute(view, query.attribute))
