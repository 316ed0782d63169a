"""The sections of the Trace page, one function each (all trace values go through safe widgets)."""

from __future__ import annotations

from itertools import islice

import pandas as pd
import streamlit as st

from janux.dashboard.ui.links import handoff_link
from janux.dashboard.ui.table import show_table
from janux.dashboard.views import tables
from janux.dashboard.views.graph import DEFAULT_MAX_NODES, handoff_dot
from janux.dashboard.views.span_price import round_price_text
from janux.dashboard.views.timeline import DEFAULT_MAX_ROWS, waterfall, waterfall_chart
from janux.tracing import conventions as c
from janux.tracing.analysis import formatting as fmt
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
MAX_INSPECTOR_CHOICES = 500
SHOWN_VALUE_CHARS = 2_000
"""Characters of one attribute value shown in the span inspector (the full value is a download)."""
SHOWN_CONTENT_CHARS = 20_000
"""Characters of one captured message or task shown (the full text is a download)."""
SHOWN_ITEMS = 100
"""Items of one array attribute shown."""


def headline(view: TraceView) -> None:
    """Metrics across the top: total cost, tokens, loops, delegations, attempts, failures, checks."""
    total = view.total
    top = st.columns([2, 2, 1])
    label = "Total cost (estimated)" if total.is_estimated else "Total cost"
    top[0].metric(label, fmt.usage_cost(total))
    top[1].metric("Tokens in / out", fmt.token_pair(total))
    top[2].metric("Unpriced tokens", f"{total.unpriced_tokens:,}")
    counts = st.columns(5)
    counts[0].metric("Agent loops", f"{len(view.nodes):,}")
    counts[1].metric("Delegations", f"{len(view.delegations):,}")
    counts[2].metric("Attempts", f"{sum(len(d.attempts) for d in view.delegations):,}")
    # A handoff whose attempt timed out but which then completed did not fail: counted apart; a
    # failed turn (no delegation) is not a handoff at all.
    failed = sum(1 for f in view.failures if f.delegation is not None and f.status != c.STATUS_COMPLETED)
    counts[3].metric("Failed handoffs", f"{failed:,}")
    counts[4].metric("Timed-out attempts", f"{sum(f.timeouts for f in view.failures):,}")
    unread = total.unread_rounds
    if unread:
        st.warning(
            f"{unread:,} of {total.rounds:,} model call(s) carry usage Janux could not read (under names it "
            "does not read, or none at all): their tokens and cost are unknown, not counted as 0."
        )
    broken = view.failed_checks
    if broken:
        st.error(f"{len(broken)} reconciliation check(s) failed: see the Checks tab.")
    elif view.is_janux:
        st.success("All reconciliation checks pass.")
    if total.is_estimated:
        st.caption(fmt.markdown_text(estimate_note(view)))


def estimate_note(view: TraceView) -> str:
    """What the total's estimate is made of and where it comes from (plain text: escape to show)."""
    total = view.total
    recorded = "" if total.cost is None else f"recorded {fmt.usd(total.cost)} + "
    sources = "; ".join(view.price_sources) or "a price table"
    return (
        f"Total: {recorded}estimated {fmt.usd(total.estimated_cost, estimated=True)} for "
        f"{total.estimated_tokens:,} tokens without a recorded price (list prices from {sources}), "
        "never counted as recorded cost."
    )


def issues(view: TraceView) -> None:
    """The incomplete-trace marker and every kind of damage, with counts."""
    rows = tables.issues_rows(view)
    if not rows:
        return
    orphans = len(view.issues.orphans) + len(view.issues.cycles)
    title = f"Incomplete trace: {orphans} span(s) with a missing parent" if orphans else "Trace data problems"
    st.warning(title)
    frame = pd.DataFrame([{"problem": p, "count": n, "shown as": what} for p, n, what in rows])
    show_table(frame, key="trace_issues")


def tree(view: TraceView) -> None:
    """The handoff tree as a graph, collapsed beyond a node budget."""
    if not view.nodes:
        st.info("No agent loops in this trace.")
        return
    count = len(view.nodes)
    limit = DEFAULT_MAX_NODES
    if count > DEFAULT_MAX_NODES:
        limit = int(
            st.number_input(
                f"Agent loops drawn (of {count:,}; the rest are collapsed)",
                min_value=10,
                max_value=max(count, 10),
                value=DEFAULT_MAX_NODES,
                step=50,
                key="trace_tree_limit",
            )
        )
    st.graphviz_chart(handoff_dot(view, max_nodes=limit))
    st.caption(
        "Edges: delegations (solid), transfers (bold), failed attempts (dashed); labels: tool, "
        "status, attempt, duration. Notes: handoffs that never ran."
    )


def timeline(view: TraceView) -> None:
    """Waterfall of spans (handoff level by default)."""
    left, right = st.columns(2)
    mode = left.radio("Spans", ["handoffs", "all"], horizontal=True, key="trace_tl_mode")
    rows = int(right.number_input("Rows", 10, 5000, DEFAULT_MAX_ROWS, step=100, key="trace_tl_rows"))
    fall = waterfall(view, mode="all" if mode == "all" else "handoffs", max_rows=rows)
    if fall.rows.empty:
        st.info("No spans to draw.")
        return
    chart = waterfall_chart(fall)
    st.altair_chart(chart, width="stretch")
    note = "Red outline: the span ended with an error; faded: no end yet."
    if fall.hidden:
        note += f" {fall.hidden:,} span(s) not drawn (switch to all spans or raise the row limit)."
    st.caption(note)


def _table_or_note(frame: pd.DataFrame, key: str, note: str) -> bool:
    """Draw the table, or the note when it has no rows; True when a table was drawn."""
    if frame.empty:
        st.info(note)
        return False
    show_table(frame, key=key)
    return True


def delegations(view: TraceView) -> None:
    """Every delegation, then the attempts of the chosen one."""
    if not _table_or_note(
        tables.delegations_frame(view), "trace_delegations", "No delegations in this trace."
    ):
        return
    labels = [
        f"{i + 1}. {d.tool} → {d.target} ({d.status}, {fmt.count(d.attempt_count, 'attempt')})"
        for i, d in enumerate(view.delegations)
    ]
    default = next((i for i, d in enumerate(view.delegations) if len(d.attempts) > 1), 0)
    chosen = st.selectbox(
        "Attempts of",
        range(len(labels)),
        index=default,
        format_func=labels.__getitem__,
        key="trace_attempts_of",
    )
    picked = view.delegations[int(chosen)]
    failed = next((f for f in view.failures if f.delegation == picked.index), None)
    if failed is not None:  # the failed-handoff screen (issue 14)
        st.link_button("Explain this failed handoff ›", handoff_link(view.trace_id, failed.span_id))
    if picked.attempts:
        show_table(tables.attempts_frame(view, int(chosen)), key="trace_attempts")
    else:
        st.info(fmt.markdown_text(tables.no_attempts_note(picked)))
    task = picked.task
    if task is not None:
        st.text("Task (captured):")
        st.code(fmt.clipped(task, SHOWN_CONTENT_CHARS)[0], language=None)


def costs(view: TraceView) -> None:
    """Own vs inclusive cost per agent loop."""
    show_table(tables.nodes_frame(view), key="trace_nodes")
    if view.price_sources:
        sources = "; ".join(view.price_sources)
        note = f"Estimated costs (≈) come from {sources}; models no table knows stay unpriced."
        st.caption(fmt.markdown_text(note))


def budgets(view: TraceView) -> None:
    """Budget burn per delegated loop."""
    _table_or_note(tables.budgets_frame(view), "trace_budgets", "No loop in this trace recorded a budget.")


def checks(view: TraceView) -> None:
    """The reconciliation checks, failures first."""
    note = "Nothing to reconcile: this trace carries no janux accounting."
    _table_or_note(tables.checks_frame(view), "trace_checks", note)


def _inspector_choices(view: TraceView) -> list[str]:
    spans = view.index.spans
    loops = {n.span_id for n in view.nodes}
    tools = {d.tool_span_id for d in view.delegations}
    first = [s.span_id for s in spans if s.span_id in loops or s.span_id in tools or s.status_code == "Error"]
    if len(first) >= MAX_INSPECTOR_CHOICES:
        return first[:MAX_INSPECTOR_CHOICES]
    chosen = set(first)  # built once: a set per span made this quadratic (0.5 s at 10k spans)
    rest = (s.span_id for s in spans if s.span_id not in chosen)
    return first + list(islice(rest, MAX_INSPECTOR_CHOICES - len(first)))


def inspector(view: TraceView) -> None:
    """Attributes and events of one span; captured content only when present."""
    choices = _inspector_choices(view)
    typed = st.text_input("Span id (any span of the trace)", key="trace_span_id").strip().lower()
    names = {s.span_id: s.name for s in view.index.spans}
    picked = st.selectbox(
        "Or pick a span",
        choices,
        format_func=lambda i: f"{names.get(i, '')}  [{i[:8]}]",
        key="trace_span_pick",
    )
    span_id = typed or picked
    span = view.span(span_id) if span_id else None
    if span is None:
        if typed:
            st.warning("No span with that id in this trace.")
        return
    _show_span(span)
    price = round_price_text(view, span)
    if price is not None:
        st.caption(fmt.markdown_text(price))


def _shown_value(value: object) -> tuple[object, bool]:
    """An attribute value as shown (long strings and arrays cut), and whether it was cut."""
    if isinstance(value, str):
        text, left_out = fmt.clipped(value, SHOWN_VALUE_CHARS)
        return text, bool(left_out)
    if isinstance(value, (list, tuple)):
        items = [_shown_value(v) for v in value[:SHOWN_ITEMS]]
        shown = [v for v, _ in items]
        if len(value) > SHOWN_ITEMS:
            shown.append(f"… [{len(value) - SHOWN_ITEMS:,} more items]")
        return shown, len(value) > SHOWN_ITEMS or any(cut for _, cut in items)
    if isinstance(value, bytes):
        return _shown_value(value.decode("utf-8", "replace"))
    return value, False


def _full_text(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return "\n".join(str(v) for v in value)
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _full_value_button(span: SpanRecord, key: str, where: str) -> None:
    """A download of one full value, made only when clicked (the page never holds a second copy)."""
    value = span.attributes.get(key)
    st.download_button(
        f"Full value of {key}",
        data=lambda: _full_text(value).encode(),
        file_name=f"span-{span.span_id}-{key}.txt",
        mime="text/plain",
        key=f"trace_full_{where}_{span.span_id}_{key}",
        on_click="ignore",
    )


def _show_span(span: SpanRecord) -> None:
    duration = fmt.ms(None if span.duration_ns < 0 else span.duration_ns / 1e6)
    message = fmt.clipped(span.status_message, SHOWN_VALUE_CHARS)[0]
    st.text(
        f"{fmt.clipped(span.name, SHOWN_VALUE_CHARS)[0]}\n"
        f"span {span.span_id}  parent {span.parent_span_id or '(root)'}\n"
        f"kind {span.kind}  status {span.status_code} {message}\n"
        f"duration {duration}  service {span.service_name}"
    )
    plain: dict[str, object] = {}
    cut: list[str] = []
    for key, value in span.attributes.items():
        if key in CONTENT_KEYS:
            continue
        plain[key], was_cut = _shown_value(value)
        if was_cut:
            cut.append(key)
    st.json(plain, expanded=True)
    for key in cut:
        _full_value_button(span, key, "attr")
    if span.events:
        st.text("Events")
        shown_events = [
            {"name": e.name, "time_ns": e.timestamp_ns,
             "attributes": {k: _shown_value(v)[0] for k, v in e.attributes.items()}}
            for e in span.events[:SHOWN_ITEMS]
        ]  # fmt: skip
        st.json(shown_events)
        if len(span.events) > SHOWN_ITEMS:
            st.caption(f"{len(span.events) - SHOWN_ITEMS:,} more event(s) not shown.")
    _show_content(span)


def _show_content(span: SpanRecord) -> None:
    content = {k: v for k, v in span.attributes.items() if k in CONTENT_KEYS}
    if not content:
        st.caption("Content not captured for this span.")
        return
    st.text("Captured content")
    for key, value in content.items():
        st.text(key)
        text, left_out = fmt.clipped(_full_text(value), SHOWN_CONTENT_CHARS)
        st.code(text, language=None)
        if left_out:
            _full_value_button(span, key, "content")
