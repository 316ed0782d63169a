"""The Conversations page (issue 19, item 6): conversations with their turns in order, each turn's
cost, handoffs and failures, one click from a turn to its trace."""

from __future__ import annotations

from janux.tracing.analysis.conversations import conversations
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from tests.dashboard.app_helpers import OpenPage
from tests.support.demo_traces import demo_traces


def test_turns_of_a_conversation_in_order_with_their_numbers() -> None:
    first = demo_traces()
    second = demo_traces()  # the same scenarios again: other conversations, other traces
    source = MemoryTraceSource(list(first.spans) + list(second.spans))
    summaries = source.list_traces(TraceFilter(), limit=100)
    found = conversations(summaries)
    assert len(found) == len({s.conversation_id for s in summaries if s.conversation_id})
    for conversation in found:
        starts = [t.start_ns for t in conversation.turns]
        assert starts == sorted(starts)
        assert conversation.cost == sum(t.bill_cost or 0.0 for t in conversation.turns)


def test_page_lists_turns_and_opens_a_turns_trace(open_page: OpenPage) -> None:
    traces = demo_traces()
    source = MemoryTraceSource(list(traces.spans))
    at = open_page(source, "conversations.py")
    table = next(e.value for e in at.dataframe if "turns" in e.value.columns)
    summaries = source.list_traces(TraceFilter(), limit=100)
    failed = next(s for s in summaries if s.trace_id == dict(traces.trace_ids)["failed_delegation"])
    row = list(table["conversation"]).index(failed.conversation_id)
    assert table["failed handoffs"].iloc[row] == failed.failed_handoffs == 1
    at.session_state["conversations_table"] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    turns = next(e.value for e in at.dataframe if "turn" in e.value.columns)
    assert list(turns["trace"]) == [failed.trace_id]
    assert at.query_params["conversation"] == failed.conversation_id
    at.session_state["conversation_turns"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert not at.exception and at.title[0].value == "Trace"
    assert at.query_params["trace_id"] == failed.trace_id
