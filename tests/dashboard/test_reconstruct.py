"""Reconstruction of contract-shaped and plain GenAI traces: tree, attempts, costs, checks, failures."""

from __future__ import annotations

import dataclasses

import pytest

from janux.tracing import conventions as c
from janux.tracing.analysis import TraceView, reconstruct
from janux.tracing.records import SpanRecord
from tests.support.contract_traces import (
    DENY_RULE,
    TASK_TEXT,
    TOTAL_COST,
    TOTAL_INPUT,
    TOTAL_OUTPUT,
    TOTAL_UNPRICED,
    contract_trace,
    plain_trace,
    stringify,
)


def _by_target(view: TraceView) -> dict[str, int]:
    return {d.target: d.index for d in view.delegations}


def test_tree_has_one_node_per_loop_and_one_edge_per_delegation() -> None:
    view = reconstruct(contract_trace())
    agents = [n.agent for n in view.nodes]
    assert agents == ["planner", "researcher", "researcher", "writer", "translator"]
    assert [n.agent for n in view.roots] == ["planner"]
    assert view.incomplete_roots == []
    targets = [d.target for d in view.delegations]
    assert targets == ["researcher", "coder", "writer", "translator", "billing"]
    assert all(d.parent_node == 0 for d in view.delegations)
    kinds = {d.target: d.kind for d in view.delegations}
    assert kinds["billing"] == "transfer" and kinds["researcher"] == "delegate"


def test_attempts_numbered_with_status_and_error_type() -> None:
    view = reconstruct(contract_trace())
    researcher = view.delegations[_by_target(view)["researcher"]]
    assert researcher.status == c.STATUS_COMPLETED
    assert [(a.number, a.status, a.error_type) for a in researcher.attempts] == [
        (1, "error", c.ERROR_TIMEOUT),
        (2, "ok", None),
    ]
    assert all(a.duration_ms is not None and a.duration_ms > 0 for a in researcher.attempts)
    assert researcher.recorded_attempts == 2
    assert researcher.task == TASK_TEXT
    coder = view.delegations[_by_target(view)["coder"]]
    assert coder.attempts == [] and coder.attempt_count == 0


def test_own_and_inclusive_costs_follow_the_accounting_rule() -> None:
    view = reconstruct(contract_trace())
    planner = view.nodes[0]
    assert planner.own_source == "recorded"
    assert (planner.own.input_tokens, planner.own.output_tokens, planner.own.cost) == (1500, 150, 0.375)
    assert planner.inclusive.input_tokens == TOTAL_INPUT
    assert planner.inclusive.output_tokens == TOTAL_OUTPUT
    assert planner.inclusive.cost == pytest.approx(TOTAL_COST)
    assert planner.inclusive.unpriced_tokens == TOTAL_UNPRICED
    researcher = view.delegations[_by_target(view)["researcher"]]
    assert researcher.cost.cost == pytest.approx(0.5625)
    translator = view.delegations[_by_target(view)["translator"]]
    assert translator.cost.cost is None and translator.cost.unpriced_tokens == 100
    assert view.bill is not None
    assert view.total.cost == pytest.approx(TOTAL_COST)
    assert view.computed.input_tokens == view.bill.input_tokens


def test_all_contract_checks_pass_on_a_correct_trace() -> None:
    view = reconstruct(contract_trace())
    assert view.failed_checks == []
    names = {chk.name for chk in view.checks}
    assert names == {"turn_vs_rounds", "bill_vs_turns"}
    assert sum(1 for chk in view.checks if chk.name == "turn_vs_rounds") == len(view.nodes)


def _edit(spans: list[SpanRecord], agent: str, key: str, value: object) -> list[SpanRecord]:
    out = []
    done = False
    for span in spans:
        if (
            not done
            and span.attributes.get(c.GEN_AI_AGENT_NAME) == agent
            and span.name.startswith(c.OP_INVOKE_AGENT)
        ):
            span = dataclasses.replace(span, attributes={**span.attributes, key: value})
            done = True
        out.append(span)
    assert done
    return out


def test_turn_mismatch_is_named() -> None:
    spans = _edit(contract_trace(), "writer", c.JANUX_TURN_INPUT_TOKENS, 999)
    failed = reconstruct(spans).failed_checks
    names = {(chk.name, chk.subject.split(" ")[0]) for chk in failed}
    assert ("turn_vs_rounds", "writer") in names
    assert ("bill_vs_turns", "planner") in names
    turn = next(chk for chk in failed if chk.name == "turn_vs_rounds")
    assert "input_tokens" in turn.message


def test_bill_mismatch_is_named() -> None:
    spans = _edit(contract_trace(), "planner", c.JANUX_BILL_COST, 99.0)
    failed = reconstruct(spans).failed_checks
    assert [(chk.name, "cost" in chk.message) for chk in failed] == [("bill_vs_turns", True)]


def test_usage_on_janux_agent_span_is_an_error() -> None:
    spans = _edit(contract_trace(), "researcher", c.GEN_AI_USAGE_INPUT_TOKENS, 5)
    failed = reconstruct(spans).failed_checks
    assert [(chk.name, chk.severity) for chk in failed] == [("usage_on_agent_span", "error")]


def test_failures_name_rule_budget_line_and_timeout() -> None:
    view = reconstruct(contract_trace())
    rows = {(f.kind, f.target): f for f in view.failures}
    assert set(rows) == {
        ("timeout", "researcher"),
        ("denied", "coder"),
        ("cut", "writer"),
        ("fallback", "billing"),
    }
    assert rows[("denied", "coder")].reason == DENY_RULE
    assert rows[("cut", "writer")].reason == c.STOP_MAX_TURNS
    assert rows[("timeout", "researcher")].attempts == 2
    assert rows[("timeout", "researcher")].timeouts == 1
    assert rows[("timeout", "researcher")].task == TASK_TEXT
    assert rows[("fallback", "billing")].reason == c.DENY_RATE_LIMITED
    assert all(f.caller == "planner" and f.trace_id == view.trace_id for f in view.failures)


def test_budget_burn_against_limits() -> None:
    view = reconstruct(contract_trace())
    burns = {(b.agent, b.attempt): b for b in view.budgets}
    writer = burns[("writer", 1)]
    assert (writer.turns_used, writer.max_turns, writer.stop_reason) == (2, 2, c.STOP_MAX_TURNS)
    assert writer.fraction("turns") == 1.0 and writer.fraction("tokens") is None
    second = burns[("researcher", 2)]
    assert (second.tokens_used, second.max_tokens) == (340, 5000)
    assert second.ms_used is not None and second.max_ms == 2000.0


def test_string_attributes_from_clickhouse_give_the_same_result() -> None:
    typed = reconstruct(contract_trace())
    strings = reconstruct(stringify(contract_trace()))
    assert strings.failed_checks == []
    assert strings.total == typed.total
    assert [(n.agent, n.own, n.inclusive) for n in strings.nodes] == [
        (n.agent, n.own, n.inclusive) for n in typed.nodes
    ]
    assert [(d.status, len(d.attempts), d.recorded_attempts) for d in strings.delegations] == [
        (d.status, len(d.attempts), d.recorded_attempts) for d in typed.delegations
    ]


# --- traces from other runtimes ---------------------------------------------------------------


def test_plain_trace_does_not_double_count_aggregated_agent_usage() -> None:
    view = reconstruct(plain_trace())
    assert view.bill is None and not view.is_janux
    # The root span claims 2200 input tokens (aggregated); the inference spans say the same
    # in total, and only they are summed: the total must not be 4400.
    root = view.nodes[0]
    assert root.own.input_tokens == 1500 and root.own.output_tokens == 300
    assert view.total.input_tokens == 1500 + 400 + 300
    assert view.total.output_tokens == 300 + 60
    info = [chk for chk in view.checks if chk.name == "usage_on_agent_span"]
    assert [(chk.ok, chk.severity) for chk in info] == [(False, "info")]
    assert view.failed_checks == []


def test_plain_trace_costs_are_estimated_and_unknown_models_unpriced() -> None:
    view = reconstruct(plain_trace())
    root = view.nodes[0]
    assert root.own_source == "estimated"
    assert root.own.cost is None and root.own.estimated_cost is not None and root.own.estimated_cost > 0
    unknown = view.nodes[1]
    assert unknown.own.estimated_cost is None and unknown.own.total_cost is None
    assert unknown.own.unpriced_tokens == 400
    assert view.total.unpriced_tokens == 400
    assert view.total.is_estimated


def _unfinished_handoffs() -> list[SpanRecord]:
    """Another runtime's turn: a handoff span that failed before its target ran, and a tool whose
    only attempt failed with an exception (the tool span itself ended fine)."""
    from janux.tracing.records import EventRecord
    from tests.support.otlp_build import record

    t = "9" * 32
    boom = EventRecord(1_031, c.EVENT_EXCEPTION, {c.EXCEPTION_TYPE: "Boom", c.EXCEPTION_MESSAGE: "kaput"})
    agent = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT}
    handoff = {
        c.GEN_AI_OPERATION_NAME: c.OP_AGENT_HANDOFF,
        c.GEN_AI_HANDOFF_FROM_AGENT: "boss",
        c.GEN_AI_HANDOFF_TO_AGENT: "ghost",
    }
    tool = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: "ask"}
    helper = {**agent, c.GEN_AI_AGENT_NAME: "helper"}
    return [
        record("a1", "", "invoke_agent boss", {**agent, c.GEN_AI_AGENT_NAME: "boss"}, trace_id=t),
        record("h1", "a1", "agent_handoff", handoff, trace_id=t, start=1_010, status="Error"),
        record("t1", "a1", "execute_tool ask", tool, trace_id=t, start=1_020),
        record("a2", "t1", "invoke_agent helper", helper, trace_id=t, start=1_030, status="Error",
               events=[boom]),
    ]


def test_foreign_delegations_fail_as_their_facts_say_on_every_page() -> None:
    """The Trace and Failures pages, the trace list and the agent map count the same failed
    handoffs of a trace without Janux accounting, for the same reasons."""
    from janux.tracing.analysis.agentmap.from_spans import agent_map_of_traces
    from janux.tracing.analysis.readers.structure import structure_facts
    from janux.tracing.analysis.summary import summarize
    from tests.support.agent_map_expect import actual, expected

    spans = _unfinished_handoffs()
    view = reconstruct(spans)
    facts = structure_facts(spans)
    assert [(d.kind, d.target, d.status) for d in view.delegations] == [
        (e.kind, e.target, e.status) for e in facts.edges
    ] == [("transfer", "ghost", c.STATUS_FAILED), ("delegate", "helper", c.STATUS_FAILED)]
    assert [(f.kind, f.reason) for f in view.failures] == [("failed", "failed"), ("failed", "Boom: kaput")]
    assert summarize(spans[0].trace_id, spans).failed_handoffs == 2
    agent_map = agent_map_of_traces([(spans[0].trace_id, spans)])
    assert actual(agent_map) == expected([spans])
    assert sum(e.failed for e in agent_map.edges) == 2


def test_plain_trace_attempts_from_repeated_siblings() -> None:
    view = reconstruct(plain_trace())
    assert len(view.delegations) == 1
    delegation = view.delegations[0]
    assert delegation.target == "researcher" and delegation.recorded_attempts is None
    assert [(a.number, a.status) for a in delegation.attempts] == [(1, "error"), (2, "ok")]
    assert delegation.status == c.STATUS_COMPLETED
    assert [(f.kind, f.timeouts) for f in view.failures] == [("timeout", 1)]


def test_estimate_off_leaves_other_runtimes_unpriced() -> None:
    view = reconstruct(plain_trace(), estimate=False)
    assert view.total.estimated_cost is None
    assert view.total.unpriced_tokens == view.total.total_tokens


def test_direct_agent_nesting_is_a_delegation() -> None:
    spans = plain_trace()
    tool = next(s for s in spans if s.name.startswith(c.OP_EXECUTE_TOOL))
    planner = next(s for s in spans if not s.parent_span_id)
    rewired = [
        dataclasses.replace(s, parent_span_id=planner.span_id) if s.parent_span_id == tool.span_id else s
        for s in spans
        if s is not tool
    ]
    view = reconstruct(rewired)
    assert len(view.delegations) == 2
    assert all(d.key.startswith("direct:") and d.parent_node == 0 for d in view.delegations)


def test_inference_spans_outside_any_agent_get_a_stand_in_node() -> None:
    spans = [s for s in plain_trace() if not s.name.startswith(c.OP_INVOKE_AGENT)]
    view = reconstruct(spans)
    assert any(n.synthetic for n in view.nodes)
    assert view.computed.input_tokens == 1500 + 400 + 300


def test_empty_trace() -> None:
    view = reconstruct([])
    assert view.nodes == [] and view.total.total_cost is None and view.checks == []
