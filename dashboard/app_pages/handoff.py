"""Failed handoff: one delegation's failure explained in one screen (`?trace_id=&span_id=`)."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from janux.dashboard.ui import headline, nav
from janux.dashboard.ui.map_data import bucket_for, cached_map, cached_refs
from janux.dashboard.ui.state import active_source, get_views
from janux.dashboard.ui.table import show_table
from janux.dashboard.views.handoff_story import (
    RULE_DOC_REF,
    HandoffStory,
    burn_frame,
    handoff_story,
    reproduction,
)
from janux.tracing.analysis import figures, outcomes
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.sources.protocol import TraceFilter


def _record(story: HandoffStory) -> None:
    d = story.delegation
    st.subheader(fmt.markdown_text(f"{d.caller or '(caller missing)'} → {d.target} ({d.kind}): {d.status}"))
    cols = st.columns(4)
    cols[0].metric("Attempts", f"{d.attempt_count}")
    cols[1].metric("Duration", fmt.ms(d.duration_ms))
    cols[2].caption("Started (UTC)")  # a time is written out (wrapped when long), never cut like a metric
    cols[2].text(fmt.utc(d.start_ns))
    headline.cost(cols[3], "Cost carried", d.cost)
    if story.decision is not None:  # one banner for every kind: rule, budget line, error, no end
        st.error(fmt.markdown_text(story.decision.text))
        if story.rule_doc:
            st.caption(fmt.markdown_text(f"{story.rule_doc} (documented in {RULE_DOC_REF})"))
    elif d.error or d.error_type:
        st.text(f"Error: {d.error_type or ''} {d.error or ''}".strip())
    st.caption(
        fmt.markdown_text(f"Tool {d.tool} · handoff id {d.handoff_id or '—'} · span {d.tool_span_id or '—'}")
    )
    show_table(story.attempts, key="handoff_attempts")


def _work(story: HandoffStory) -> None:
    st.subheader("The task it was given")
    st.text(story.task)
    st.subheader("Its last model round before it failed")
    r = story.last_round
    if r is None:
        st.info("The subagent made no model round (denied or cut before it ran).")
    else:
        if r.input_tokens is None and r.output_tokens is None:  # a failed call: a round, usage unknown
            tokens = f"tokens: {outcomes.NO_USAGE_REPORTED}"
        else:
            tokens_in = figures.page_text(figures.tokens(r.input_tokens, unknown=True))
            tokens_out = figures.page_text(figures.tokens(r.output_tokens, unknown=True))
            tokens = f"tokens in {tokens_in} · out {tokens_out}"
        st.text(f"model {r.model or '—'} · {tokens}")
        st.text(f"finish reasons {r.finish_reasons or '—'} · status {r.status}")
        st.text(r.output)
    if story.tool_results:
        st.subheader("Its tool calls")
        frame = pd.DataFrame(
            [{"tool": t.tool, "status": t.status, "duration": t.duration, "result": t.result}
             for t in story.tool_results]
        )  # fmt: skip
        show_table(frame, key="handoff_tools")


def _exceptions_and_budget(story: HandoffStory) -> None:
    st.subheader("Exceptions")
    if not story.exceptions:
        st.caption("No exception event was recorded on these spans.")
    for e in story.exceptions:
        st.text(f"{e.type}: {e.message} (span {e.span})")
        if e.stacktrace:
            st.code(e.stacktrace, language=None)
    st.subheader("Budget burn at the cut")
    if not story.budgets:
        st.caption("No budget was recorded on the attempts.")
    else:
        show_table(burn_frame(story.budgets), key="handoff_budget")


def _reproduce(story: HandoffStory, view: TraceView) -> None:
    """The replay command and the test file it writes (docs/replay.md)."""
    offer = reproduction(view, story.delegation)
    with st.expander("Reproduce offline"):
        st.caption("Run this trace again without a model and compare the outcome (docs/replay.md):")
        st.code(offer.command, language="bash")
        if offer.test_file is None:
            st.info(fmt.markdown_text(f"This trace cannot be replayed: {offer.problem}"))
            return
        st.download_button(
            "Download the test file", data=offer.test_file, file_name=offer.file_name,
            mime="text/x-python", key="handoff_test_file",
        )  # fmt: skip
        st.caption("It passes as written (the recorded outcome); edit the agents to check a fix.")


def _same_way(story: HandoffStory, view: TraceView) -> None:
    """Other traces where the same edge failed with the same reason (over every stored trace)."""
    d = story.delegation
    failure = next((f for f in view.failures if f.delegation == d.index), None)
    st.subheader("The same edge, failing the same way")
    if failure is None:
        st.caption("This handoff did not fail.")
        return
    active = active_source()
    if active is None:
        return
    key, source = active
    flt = TraceFilter()
    edge = cached_map(key, source, flt, bucket_for(flt, time.time_ns())).edge(
        d.caller or "", d.target, d.kind
    )
    newest = cached_refs(key, source, flt, edge.key).failures if edge else []
    same = [f for f in newest if f.reason == failure.reason]
    total = edge.reasons.get(failure.reason, 0) if edge else 0
    st.metric(
        fmt.markdown_text(f"{failure.kind}: {failure.reason}"), f"{total:,} of {edge.count if edge else 0:,}"
    )
    if st.button("All failures of this edge ›", key="handoff_edge_failures"):
        nav.go(nav.FAILURES, caller=d.caller or "", target=d.target)
    others = [f for f in same if f.trace_id != view.trace_id]
    if not others:
        st.caption("No other failures of this edge with this reason in the stored traces.")
        return
    rows = [{"started (UTC)": fmt.utc(f.start_ns), "trace": f.trace_id} for f in others]
    st.caption("Click a row to explain that failure.")
    picked = show_table(
        pd.DataFrame(rows, columns=["started (UTC)", "trace"]), key="handoff_same", selectable=True
    )
    if picked is not None:
        nav.open_handoff(others[picked].trace_id, others[picked].span_id)


def main() -> None:
    """Draw the page."""
    st.title("Failed handoff")
    if active_source() is None:
        return
    trace_id = str(st.query_params.get("trace_id", "")).strip().lower()
    span_id = str(st.query_params.get("span_id", "")).strip().lower()
    if not trace_id or not span_id:
        st.info("Open a failed handoff from the Failures page, the agent map or a trace's delegations.")
        return
    view = get_views([trace_id])[trace_id]
    story = handoff_story(view, span_id) if view.index.spans else None
    if story is None:
        st.warning("No delegation with this span in this trace.")
        return
    back, whole, _ = st.columns([1, 1, 3])
    with back:
        nav.back_link(nav.FAILURES)
    if whole.button("Open the whole trace ›", key="handoff_open_trace"):
        nav.open_trace(trace_id, span_id)
    _record(story)
    _work(story)
    _exceptions_and_budget(story)
    _reproduce(story, view)
    _same_way(story, view)


main()
