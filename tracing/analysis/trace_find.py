"""Find traces by what happened inside them: a failure reason, an agent anywhere in the tree, a
piece of error text, or a span attribute `key=value` (the Traces list's "Find inside traces").

The rules are defined here once; every source answers them over the whole filtered range:
- the failure reasons of a trace are `TraceView.failures`' reasons (retried attempts included),
  and only a trace with a failed handoff or an ERROR span has one (`may_have_reason`);
- the agents of a trace are its agent loops' names, at any depth;
- the error text of a span is `span_error_texts` (status message, exception events, the handoff's
  recorded error, `error.type`); error text is found in any case;
- an attribute matches when its `attribute_text` equals the value; a source that indexes values
  compares `term_value`s (long values by their hash), which gives the same answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from janux.errors import JanuxError
from janux.tracing import conventions as c
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.facts import TraceSummary
from janux.tracing.analysis.failures import trace_failures
from janux.tracing.analysis.handoff_tree import build_tree
from janux.tracing.analysis.span_index import build_index
from janux.tracing.analysis.trace_parts import Failure
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.records import SpanRecord

MAX_TERM_CHARS = 256
"""Longest attribute value kept as is in an index (`term_value`); a longer one is kept as its hash."""
MAX_KEY_CHARS = 256
"""Longest attribute key accepted in a query."""


class FindError(JanuxError, ValueError):
    """A find field that cannot be read; the message names the field and what to write instead."""

    error_type = "bad_find_input"


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

    def checked(self) -> TraceQuery:
        """The query with its fields trimmed and the reason under its one name; raises `FindError`
        (naming the field) for input no trace could match as meant, such as `key=`."""
        if self.attribute.strip():
            parse_attribute(self.attribute)
        return TraceQuery(
            reason=outcomes.reason_name(self.reason.strip()) if self.reason.strip() else "",
            agent=self.agent.strip(),
            error=self.error.strip(),
            attribute=self.attribute.strip(),
        )


def parse_attribute(text: str) -> tuple[str, str | None]:
    """(key, value) of a `key=value` field, (key, None) for a key alone; raises `FindError`."""
    key, sep, value = text.strip().partition("=")
    key, value = key.strip(), value.strip()
    shown = text.strip()
    if not key:
        raise FindError(f"Span attribute {shown!r}: no key before '='; write key=value, or a key alone")
    if sep and not value:
        raise FindError(
            f"Span attribute {shown!r}: no value after '='; write key=value, or the key alone "
            "(traces where the attribute is set)"
        )
    if len(key) > MAX_KEY_CHARS or any(ch.isspace() for ch in key):
        raise FindError(
            f"Span attribute {shown!r}: the key must be one word of at most {MAX_KEY_CHARS} characters "
            "(such as gen_ai.request.model)"
        )
    return key, (value if sep else None)


def attribute_text(value: Any) -> str:
    """An attribute value as find compares it: booleans as `true`/`false` (as OTLP JSON and
    ClickHouse write them), arrays as a list's `str`, everything else as `str`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):  # an array reads the same however it was decoded (list or tuple)
        return str(list(value))
    return str(value)


def term_value(text: str) -> str:
    """What an index keeps of an attribute value's text: the text, or `sha256:<hex>` above
    `MAX_TERM_CHARS` (equality needs no more, and prompt-sized values stay out of the index)."""
    if len(text) <= MAX_TERM_CHARS:
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def attribute_terms(attributes: Mapping[str, Any], trace_id: str) -> list[tuple[str, str, str]]:
    """(key, `term_value` of its `attribute_text`, trace id) of each attribute of a span: the rows
    of an index of attribute values (the embedded store's write path: kept cheap on purpose)."""
    return [
        (key, value if type(value) is str and len(value) <= MAX_TERM_CHARS else _term(value), trace_id)
        for key, value in attributes.items()
    ]


def _term(value: Any) -> str:
    return term_value(attribute_text(value))


def span_error_texts(span: SpanRecord) -> list[str]:
    """The error text of one span: its status message, each exception event (`type: message`), the
    handoff's recorded error and its `error.type`; empty for a span that says nothing of an error."""
    texts = [span.status_message] if span.status_message else []
    for event in span.events:
        if event.name == c.EVENT_EXCEPTION:
            parts = (event.attributes.get(c.EXCEPTION_TYPE), event.attributes.get(c.EXCEPTION_MESSAGE))
            text = ": ".join(str(part) for part in parts if part)
            if text:
                texts.append(text)
    for key in (c.JANUX_HANDOFF_ERROR, c.ERROR_TYPE):
        value = span.attributes.get(key)
        if value:
            texts.append(str(value))
    return texts


def may_have_reason(summary: TraceSummary) -> bool:
    """True when a trace can have a failure reason: it has a failed handoff, an ERROR span (a
    retried attempt, a timeout or a failed loop is one), or more delegation attempts than delegations
    (a library that re-runs a failed agent may record no error: the re-run attempt failed). A source
    reads reasons of these only."""
    return bool(summary.failed_handoffs or summary.error_spans or summary.attempts > summary.delegations)


@dataclass(slots=True, frozen=True)
class FindFacts:
    """What find reads of one trace besides its attributes (kept per trace by the sources)."""

    agents: frozenset[str]
    """Names of its agent loops, at any depth."""
    reasons: frozenset[str]
    """Reasons of its failures (`TraceView.failures`), retried attempts included."""
    errors: tuple[str, ...]
    """Error texts of its spans (`span_error_texts`), lower case."""


def _facts(spans: Iterable[SpanRecord], agents: Iterable[str], failures: Iterable[Failure]) -> FindFacts:
    errors = [text.lower() for span in spans for text in span_error_texts(span)]
    return FindFacts(
        agents=frozenset(agents),
        reasons=frozenset(f.reason for f in failures),
        errors=tuple(dict.fromkeys(errors)),
    )


def find_facts(view: TraceView) -> FindFacts:
    """The find facts of a rebuilt trace."""
    return _facts(view.index.spans, (node.agent for node in view.nodes), view.failures)


def find_facts_of(spans: Iterable[SpanRecord]) -> FindFacts:
    """The find facts of a trace's spans, reading only its tree and failures (what `find_facts` of
    the rebuilt trace says, without costs, checks and budgets)."""
    index = build_index(spans)
    tree = build_tree(index)
    return _facts(index.spans, (node.agent for node in tree.nodes), trace_failures(index.trace_id, tree))


def facts_match(facts: FindFacts, query: TraceQuery) -> bool:
    """True when `facts` have the reason, agent and error text of a `checked` query."""
    if query.reason and query.reason not in facts.reasons:
        return False
    if query.agent and query.agent not in facts.agents:
        return False
    needle = query.error.lower()
    return not needle or any(needle in text for text in facts.errors)


def spans_have_attribute(spans: Iterable[SpanRecord], attribute: str) -> bool:
    """True when a span carries the attribute of a `key=value` (or `key`) field."""
    key, value = parse_attribute(attribute)
    for span in spans:
        if key in span.attributes and (value is None or attribute_text(span.attributes[key]) == value):
            return True
    return False


def matches(view: TraceView, query: TraceQuery) -> bool:
    """True when the rebuilt trace has everything `query` asks for (raises `FindError` on bad input)."""
    query = query.checked()
    if not facts_match(find_facts(view), query):
        return False
    return not query.attribute or spans_have_attribute(view.index.spans, query.attribute)


@dataclass(slots=True)
class FoundTraces:
    """One page of the traces a find matched, and how many matched over the whole filtered range."""

    total: int
    """Traces of the filter that have everything the query asks for."""
    summaries: list[TraceSummary]
    """The page asked for, newest first."""
