"""The sections of the Trace page, one function each (all trace values go through safe widgets)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from janux.dashboard.ui import headline as headline_figures
from janux.dashboard.ui import nav
from janux.dashboard.ui.copy_text import copy_text
from janux.dashboard.ui.filters import trace_link
from janux.dashboard.ui.table import show_table
from janux.dashboard.views import tables
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import outcomes, trace_outline
from janux.tracing.analysis.trace_links import continuation_text
from janux.tracing.analysis.trace_list import CHECKS_HELP, badge
from janux.tracing.analysis.trace_view import TraceView

_STATUS_COLOURS = {"failed": "red", "open": "violet"}
"""The colour of a trace's status in the header (`ok` is plain)."""


def _coloured(text: str, colour: str | None) -> str:
    """`text` shown literally (escaped), in `colour` when one is given."""
    escaped = fmt.markdown_text(text)
    return f":{colour}[{escaped}]" if colour else escaped


def header_lines(view: TraceView) -> tuple[str, str]:
    """The header's two lines (markdown, every value escaped): who, when, how long and how it
    ended; then what it cost (unpriced tokens beside the bill), its tokens, its checks and counts."""
    root, conversation, started, duration, status = (value for _, value in trace_outline.headline(view))
    who = " · ".join(
        [
            f"**{fmt.markdown_text(root)}**",
            f"conversation {fmt.markdown_text(conversation)}",
            f"started {fmt.markdown_text(started)} UTC",
            fmt.markdown_text(duration),
            _coloured(status, _STATUS_COLOURS.get(status)),
        ]
    )
    total = view.total
    bill = "estimated cost" if total.is_estimated else "cost"
    failed = sum(1 for d in view.delegations if outcomes.is_failed_handoff(d))
    figures = " · ".join(
        [
            f"{bill} **{fmt.markdown_text(fmt.usage_cost_full(total))}**",
            f"tokens {fmt.markdown_text(fmt.tokens(total))}",
            f"checks {_coloured(badge(view), 'red' if view.failed_checks else None)}",
            fmt.markdown_text(fmt.count(len(view.nodes), "loop")),
            fmt.markdown_text(fmt.count(len(view.delegations), "delegation")),
        ]
        + ([_coloured(fmt.count(failed, "failed handoff"), "red")] if failed else [])
    )
    return who, figures


def headline(view: TraceView) -> None:
    """The header, in two lines beside the trace id with a copy button (the tree starts in the top
    half of the window); every figure of the trace below the explorer, on demand (`more_figures`)."""
    text, copy = st.columns([13, 7], vertical_alignment="center")
    who, figures = header_lines(view)
    # One caption (every value escaped: no value from the trace becomes markup), two lines.
    text.caption(f"{who}  \n{figures}")
    with copy:
        copy_text(view.trace_id, label="Copy trace id", key="trace_copy_id")
    unread = view.total.unread_rounds
    if unread:
        st.warning(
            f"{unread:,} of {view.total.rounds:,} model call(s) carry usage Janux could not read (under "
            "names it does not read, or none at all): their tokens and cost are unknown, not counted as 0."
        )


def linked_traces(view: TraceView, asked: str) -> None:
    """"Continued from / continues in" with a link to each other trace of a run split across traces
    (joined by span links: the page draws the whole run, handoffs across traces included)."""
    if not view.index.linked_trace_ids:
        return
    joined = {view.trace_id, *view.index.linked_trace_ids}
    run = [span for span in view.index.spans if span.trace_id in joined]
    before, after = continuation_text(run, asked)
    parts = []
    if before:
        parts.append("continued from " + ", ".join(f"[{t[:12]}…]({trace_link(t)})" for t in before))
    if after:
        parts.append("continues in " + ", ".join(f"[{t[:12]}…]({trace_link(t)})" for t in after))
    count = len(view.index.linked_trace_ids) + 1
    st.caption(f"One run across {count} traces joined by span links: " + "; ".join(parts))


def more_figures(view: TraceView) -> None:
    """Every figure of the trace (cost, tokens, checks, counts), in an expander below the explorer."""
    total = view.total
    with st.expander("All figures of this trace"):
        top = st.columns([3, 2, 1.3, 1.3, 1.3])  # the cost may read "≈ $0.001234 (est.) + unknown"
        label = "Total cost (estimated)" if total.is_estimated else "Total cost"
        top[0].metric(label, fmt.usage_cost(total), help=fmt.usage_cost_full(total))
        headline_figures.usage_tokens(top[1], "Tokens in / out", total)
        top[2].metric("Checks", badge(view), help=CHECKS_HELP)
        failed = sum(1 for d in view.delegations if outcomes.is_failed_handoff(d))
        top[3].metric("Failed handoffs", f"{failed:,}", help=outcomes.is_failed_handoff.__doc__)
        top[4].metric("Timed-out attempts", f"{sum(f.timeouts for f in view.failures):,}")
        counts = st.columns([1, 1, 1, 1, 2])
        counts[0].metric("Agent loops", f"{len(view.nodes):,}")
        counts[1].metric("Delegations", f"{len(view.delegations):,}")
        counts[2].metric("Attempts", f"{view.attempts:,}")
        counts[3].metric("Unpriced tokens", f"{total.unpriced_tokens:,}")
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


def _table_or_note(frame: pd.DataFrame, key: str, note: str) -> bool:
    """Draw the table, or the note when it has no rows; True when a table was drawn."""
    if frame.empty:
        st.info(note)
        return False
    show_table(frame, key=key)
    return True


ATTEMPT_PICKS = 200
"""Delegations the "Attempts of" picker lists at most: a drop-down of thousands (2,138 in a
10,000-span trace) cost the browser a tenth of a second or more to build on every page load."""


def attempt_picks(view: TraceView) -> list[int]:
    """Positions of the delegations the "Attempts of" picker lists: all of them, in order, up to
    `ATTEMPT_PICKS`; of more, the retried and failed ones first (their attempts are the ones to
    read), then the others in order, `ATTEMPT_PICKS` in all."""
    every = range(len(view.delegations))
    if len(every) <= ATTEMPT_PICKS:
        return list(every)
    worth = [
        i
        for i in every
        if len(view.delegations[i].attempts) > 1 or outcomes.is_failed_handoff(view.delegations[i])
    ]
    chosen = set(worth)
    return (worth + [i for i in every if i not in chosen])[:ATTEMPT_PICKS]


def delegations(view: TraceView) -> None:
    """Every delegation, then the attempts of the chosen one."""
    if not _table_or_note(
        tables.delegations_frame(view), "trace_delegations", "No delegations in this trace."
    ):
        return

    def label(i: int) -> str:
        d = view.delegations[i]
        return f"{i + 1}. {d.tool} → {d.target} ({d.status}, {fmt.count(d.attempt_count, 'attempt')})"

    picks = attempt_picks(view)
    default = next((n for n, i in enumerate(picks) if len(view.delegations[i].attempts) > 1), 0)
    chosen = st.selectbox("Attempts of", picks, index=default, format_func=label, key="trace_attempts_of")
    if len(picks) < len(view.delegations):
        st.caption(
            f"{len(picks):,} of {len(view.delegations):,} delegations listed: the retried and failed "
            "ones first, then in order (the table above lists them all)."
        )
    picked = view.delegations[int(chosen)]
    # A retried handoff completed: there is no failed handoff to explain (its attempts are listed).
    failed = next((f for f in view.failures if f.delegation == picked.index and f.kind != "retried"), None)
    # The failed-handoff screen (issue 14), in this tab.
    if failed is not None and st.button("Explain this failed handoff ›", key="trace_explain"):
        nav.open_handoff(view.trace_id, failed.span_id)
    if picked.kind == "transfer" or not picked.attempts:  # a transfer's target took over: no attempt
        st.info(fmt.markdown_text(tables.no_attempts_note(picked)))
    else:
        show_table(tables.attempts_frame(view, int(chosen)), key="trace_attempts")
    task = picked.task
    if task is not None:
        st.text("Task (captured):")
        st.code(task, language=None)


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


SECTIONS: dict[str, Callable[[TraceView], None]] = {
    "Delegations & attempts": delegations,
    "Cost per loop": costs,
    "Budgets": budgets,
    "Checks": checks,
}
"""The sections below the Trace page's explorer, by title, each drawn by its function."""
SECTION_KEY = "trace_section"
"""Widget key (and URL parameter, `?trace_section=Budgets`) of the section shown below the explorer."""


def chosen_section(view: TraceView) -> None:
    """The sections' picker, and below it the one chosen (none until asked for; a second click on
    it closes it again).

    The page opens without them: a person reads the header, the tree and the selected span first,
    and the delegations table alone (a data grid of every delegation, 2,138 of them in a
    10,000-span trace, and the grid's script, loaded on first use) was about a third of the
    browser's work on a big trace's first visit. A link naming a section opens it."""
    chosen = st.segmented_control(
        "More about this trace", list(SECTIONS), default=None, key=SECTION_KEY, bind="query-params"
    )
    if chosen in SECTIONS:
        SECTIONS[chosen](view)
