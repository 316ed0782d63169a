"""What the Trace page shows beside the tree for the selected span: what it is, how it ended, its
usage and cost, its budget lines, attributes and events (HANDOFF_START/END included)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from janux.tracing import conventions as c
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import outcomes
from janux.tracing.analysis import spanread as sr
from janux.tracing.analysis.readers.structure import loop_id
from janux.tracing.analysis.trace_outline import OutlineRow
from janux.tracing.analysis.trace_parts import AgentNode, Delegation
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.records import SpanRecord

CONTENT_KEYS = (
    c.GEN_AI_INPUT_MESSAGES,
    c.GEN_AI_OUTPUT_MESSAGES,
    c.GEN_AI_SYSTEM_INSTRUCTIONS,
    c.GEN_AI_TOOL_CALL_ARGUMENTS,
    c.GEN_AI_TOOL_CALL_RESULT,
    c.JANUX_HANDOFF_OUTPUT,
)
"""Attributes that hold captured content (present only when content capture was on)."""
SHOWN_VALUE_CHARS = 2_000
"""Characters of one attribute value, span name or error shown (the whole value is a download)."""
SHOWN_CONTENT_CHARS = 20_000
"""Characters of one captured message or task shown (the whole text is a download)."""
SHOWN_EVENTS = 100
"""Events of one span shown (a span may carry thousands)."""


@dataclass(slots=True)
class SpanDetail:
    """The detail panel of one span, as plain text and tables."""

    title: str
    """`attempt 2/2 · researcher (attempt)`."""
    facts: list[tuple[str, str]]
    """(label, value): outcome, duration, start, span and parent ids, service."""
    error: str | None
    """`model_error: upstream returned 503`: error type and full message, None when it did not fail."""
    usage: list[tuple[str, str]] = field(default_factory=list)
    """(label, value): own and inclusive cost and tokens of a loop, a delegation's carried cost."""
    budget: pd.DataFrame | None = None
    """Budget lines of the loop (used / limit), None without a budget."""
    attributes: pd.DataFrame = field(default_factory=pd.DataFrame)
    """key, value (money as dollars), captured content left out."""
    events: pd.DataFrame = field(default_factory=pd.DataFrame)
    """event, at (ms since the span start), attribute, value: one row per attribute of an event."""
    content: dict[str, str] = field(default_factory=dict)
    """Captured content, only when capture was on (each text cut to `SHOWN_CONTENT_CHARS`)."""
    cut: list[str] = field(default_factory=list)
    """Attributes shown cut (a hostile or huge value): the page offers each whole, on demand."""


def full_value(span: SpanRecord, key: str) -> bytes:
    """The whole value of one attribute, as the download of a cut one (built only when asked)."""
    value = span.attributes.get(key)
    if isinstance(value, (list, tuple)):
        return "\n".join(str(v) for v in value).encode()
    return value if isinstance(value, bytes) else str(value).encode()


def _error(span: SpanRecord) -> str | None:
    etype = str(span.attributes.get(c.ERROR_TYPE, "") or "")
    message = str(span.attributes.get(c.JANUX_HANDOFF_ERROR, "") or "") or span.status_message
    if not etype and not message and span.status_code != "Error":
        return None
    etype = outcomes.reason_name(etype) if etype else "error"
    message = fmt.clipped(message, SHOWN_CONTENT_CHARS)[0]
    return f"{etype}: {message}" if message else etype


def _reached_by(edge: Delegation) -> str:
    """How a loop's edge reached it: `delegate, found by tool nesting`."""
    return f"{edge.kind}, found by {edge.found}"


def _own_tokens(view: TraceView, node: AgentNode) -> str:
    """A loop's own tokens, saying so when failed rounds reported no usage: a failed round is a
    round, and its missing usage is not "0 in / 0 out"."""
    silent = sum(1 for pos in node.chat_spans if sr.round_usage(view.index.spans[pos])[0] == "failed")
    if not silent:
        return fmt.tokens(node.own)
    rounds = f"{silent:,} failed round{'s' if silent > 1 else ''}"
    if silent == len(node.chat_spans) and not node.own.total_tokens:
        return f"{outcomes.NO_USAGE_REPORTED} ({rounds})"
    return f"{fmt.tokens(node.own)} · {rounds}: {outcomes.NO_USAGE_REPORTED}"


def _usage(view: TraceView, span: SpanRecord, row_id: str) -> list[tuple[str, str]]:
    # A loop that transferred is one node per agent segment, all on one span: the row picked says which.
    node = next((n for n in view.nodes if loop_id(n.span_id, n.segment) == row_id), None)
    if node is not None:
        return [
            ("own cost", fmt.usage_cost(node.own)),
            ("inclusive cost", fmt.usage_cost(node.inclusive)),
            ("own tokens", _own_tokens(view, node)),
            ("inclusive tokens", fmt.tokens(node.inclusive)),
            ("model rounds", f"{node.own.rounds:,}"),
            *([] if node.via is None else [("reached by", _reached_by(view.delegations[node.via]))]),
        ]
    d = next((d for d in view.delegations if d.tool_span_id == span.span_id), None)
    if d is not None:
        return [
            ("cost carried", fmt.usage_cost(d.cost)),
            ("tokens carried", fmt.tokens(d.cost)),
            ("attempts", f"{d.attempt_count:,}"),
            ("handoff duration", fmt.ms(d.duration_ms)),
            ("found by", d.found),
        ]
    return []


def _budget(view: TraceView, row_id: str) -> pd.DataFrame | None:
    node = next((n.index for n in view.nodes if loop_id(n.span_id, n.segment) == row_id), None)
    burn = next((b for b in view.budgets if b.node == node), None)
    if burn is None:
        return None
    lines = [("turns", burn.turns_used, burn.max_turns), ("tokens", burn.tokens_used, burn.max_tokens),
             ("ms", burn.ms_used, burn.max_ms)]  # fmt: skip
    rows = [{"line": name, "used / limit": outcomes.budget_cell(used, limit)} for name, used, limit in lines]
    rows.append({"line": "cut by", "used / limit": burn.stop_reason or outcomes.NONE_SHOWN})
    return pd.DataFrame(rows)


EVENT_COLUMNS = ["event", "at", "attribute", "value"]
"""The events table's columns: one row per attribute of an event, its name and time on the first."""


def _events(span: SpanRecord) -> pd.DataFrame:
    """One row per attribute of each event (HANDOFF_START's ten attributes read as ten rows, not as
    one cell of `key=value, ...`), the event's name and time on its first row; an event without
    attributes is one row."""
    rows: list[list[str]] = []
    for event in span.events[:SHOWN_EVENTS]:
        at = fmt.ms((event.timestamp_ns - span.start_ns) / 1e6)
        first = [event.name, at]
        for key, value in event.attributes.items() or [("", "")]:
            rows.append([*first, key, fmt.clipped(fmt.attribute_text(key, value), SHOWN_VALUE_CHARS)[0]])
            first = ["", ""]
    if len(span.events) > SHOWN_EVENTS:
        rows.append([f"{len(span.events) - SHOWN_EVENTS:,} more events not shown", "", "", ""])
    return pd.DataFrame(rows, columns=EVENT_COLUMNS)


def span_detail(view: TraceView, span: SpanRecord, row: OutlineRow | None) -> SpanDetail:
    """The detail panel of `span` (with its tree row, when the tree has one)."""
    kind = row.kind if row is not None else "span"
    title = f"{row.label if row is not None else span.name} ({kind})"
    outcome = row.outcome if row is not None else span.status_code
    facts = [
        ("outcome", outcome),
        ("duration", fmt.ms(None if span.duration_ns < 0 else span.duration_ns / 1e6)),
        ("started (UTC)", fmt.utc(span.start_ns)),
        ("span name", fmt.clipped(span.name, SHOWN_VALUE_CHARS)[0]),
        ("span id", span.span_id),
        ("parent", span.parent_span_id or "(root)"),
        ("service", span.service_name or outcomes.NONE_SHOWN),
    ]
    plain: list[tuple[str, str]] = []
    cut: list[str] = []
    for key, value in span.attributes.items():
        limit = SHOWN_CONTENT_CHARS if key in CONTENT_KEYS else SHOWN_VALUE_CHARS
        text, left_out = fmt.clipped(str(value), limit)
        if left_out:
            cut.append(key)
        if key not in CONTENT_KEYS:
            plain.append((key, text if left_out else fmt.attribute_text(key, value)))
    captured = ((k, v) for k, v in span.attributes.items() if k in CONTENT_KEYS)
    row_id = row.span_id if row is not None else span.span_id  # an agent segment's row: its own figures
    content = {k: fmt.clipped(str(v), SHOWN_CONTENT_CHARS)[0] for k, v in captured}
    return SpanDetail(
        title=title,
        facts=facts,
        error=_error(span),
        usage=_usage(view, span, row_id),
        budget=_budget(view, row_id),
        attributes=pd.DataFrame(plain, columns=["attribute", "value"]),
        events=_events(span),
        content=content,
        cut=cut,
    )
