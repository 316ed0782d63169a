"""Conversations: sessions (`gen_ai.conversation.id`) with their turns in order; a click on a
conversation lists its turns, a click on a turn opens its trace in this tab."""

from __future__ import annotations

import streamlit as st

from janux.dashboard.ui import nav
from janux.dashboard.ui.filters import trace_filter
from janux.dashboard.ui.state import active_source
from janux.dashboard.ui.table import show_table
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.conversations import Conversation, conversations, conversations_frame, turns_frame

MAX_TRACES = 5_000  # newest traces read to group into conversations


def _turns(conversation: Conversation) -> None:
    st.subheader(fmt.markdown_text(f"Turns of {conversation.conversation_id}"))
    st.caption("Click a turn to open its trace.")
    frame = turns_frame(conversation)
    picked = show_table(frame, key="conversation_turns", selectable=True)
    if picked is not None:
        nav.remember_list(nav.CONVERSATIONS, list(frame["trace"]))
        nav.open_trace(str(frame["trace"].iloc[picked]))


def main() -> None:
    """Draw the page."""
    nav.restore_list(nav.CONVERSATIONS)
    st.title("Conversations")
    active = active_source()
    if active is None:
        return
    _, source = active
    flt = trace_filter("conversations", source, full=False)
    summaries = source.list_traces(flt, limit=MAX_TRACES)
    found = conversations(summaries)
    note = f"{len(found):,} conversations in the newest {len(summaries):,} traces of the range."
    st.caption(note)
    if not found:
        st.info("No trace in this range carries a conversation id (gen_ai.conversation.id).")
        return
    picked = show_table(conversations_frame(found), key="conversations_table", selectable=True)
    wanted = str(st.query_params.get("conversation", ""))
    chosen = (
        found[picked] if picked is not None else next((c for c in found if c.conversation_id == wanted), None)
    )
    if chosen is None:
        st.caption("Click a conversation to list its turns.")
        return
    st.query_params["conversation"] = chosen.conversation_id
    _turns(chosen)


main()
