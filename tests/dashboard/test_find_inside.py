"""Find traces by what happened inside them (issue 19, item 7): the rule and the Traces page."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from janux.dashboard.ui.state import SOURCE_OVERRIDE
from janux.tracing import conventions as c
from janux.tracing.analysis import reconstruct
from janux.tracing.analysis.trace_find import TraceQuery, matches
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import APP, TIMEOUT_S
from tests.dashboard.shown import rendered

Demo = tuple[list[Any], dict[str, str]]


def _found(demo: Demo, query: TraceQuery) -> set[str]:
    spans, ids = demo
    names = {trace_id: name for name, trace_id in ids.items()}
    by_trace: dict[str, list[Any]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    return {names[t] for t, trace in by_trace.items() if matches(reconstruct(trace), query)}


def test_each_find_field(demo: Demo) -> None:
    assert _found(demo, TraceQuery(reason="rate_limit")) == {"failed_delegation", "denied_rate_limited"}
    assert _found(demo, TraceQuery(reason="model_error")) == {"retry_then_success"}
    assert _found(demo, TraceQuery(error="503 SERVICE")) == {"retry_then_success"}
    with_checker = _found(demo, TraceQuery(agent="fact_checker"))
    assert "nested_delegation" in with_checker and "plain_answer" not in with_checker
    assert _found(demo, TraceQuery(attribute=f"{c.JANUX_STOP_REASON}=max_turns")) == {"cut_max_turns"}
    everything = _found(demo, TraceQuery())
    assert _found(demo, TraceQuery(attribute=c.GEN_AI_AGENT_NAME)) == everything
    assert _found(demo, TraceQuery(reason="rate_limited", error="exceeded")) == {"failed_delegation"}


def test_traces_page_finds_inside_and_keeps_it_in_the_url(demo: Demo) -> None:
    spans, ids = demo
    # A shared link: a new session opened on `/?reason=rate_limited`.
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.session_state[SOURCE_OVERRIDE] = MemoryTraceSource(spans)
    at.query_params["reason"] = "rate_limited"
    at.run()
    assert not at.exception
    table = next(e.value for e in at.dataframe if "checks" in e.value.columns)
    assert set(table["trace"]) == {ids["failed_delegation"], ids["denied_rate_limited"]}
    assert set(table["failure"]) == {"failed: rate_limited", "denied: rate_limited"}
    assert at.text_input(key="traces_find_reason").value == "rate_limited"
    at.text_input(key="traces_find_reason").set_value("").run()
    at.text_input(key="traces_find_error").set_value("503").run()
    table = next(e.value for e in at.dataframe if "checks" in e.value.columns)
    assert list(table["trace"]) == [ids["retry_then_success"]]
    assert at.query_params["error"] == "503" and "reason" not in at.query_params


def test_bad_find_input_says_what_to_write_and_keeps_the_input(demo: Demo) -> None:
    spans, _ids = demo
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT_S)
    at.session_state[SOURCE_OVERRIDE] = MemoryTraceSource(spans)
    at.query_params["attribute"] = "janux.handoff.status="
    at.run()
    assert not at.exception
    assert [rendered(e.value) for e in at.error] == [
        "Find inside traces: Span attribute 'janux.handoff.status=': no value after '='; write "
        "key=value, or the key alone (traces where the attribute is set)"
    ]
    assert at.text_input(key="traces_find_attribute").value == "janux.handoff.status="
    assert not [e for e in at.dataframe if "checks" in e.value.columns]  # no list that would mislead
    at.text_input(key="traces_find_attribute").set_value("janux.handoff.status=failed").run()
    assert not at.error
    table = next(e.value for e in at.dataframe if "checks" in e.value.columns)
    assert len(table) >= 1 and set(table["failure"]) == {"failed: rate_limited"}
