"""A Strands graph node fed by several nodes (the `strands_graph_fanin` fixture): an edge from each
feeding node, and the node's one run counted once wherever a trace is summed."""

from __future__ import annotations

import pytest

from janux.tracing.analysis.agentmap.foreign_rows import foreign_links, resolved_trace
from janux.tracing.analysis.readers.structure import structure_facts
from janux.tracing.analysis.summary import failed_edge_spans
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.analysis.trace_view import reconstruct
from tests.support.foreign.load import Case, cases

FAN_IN = [case for case in cases() if case.fixture == "strands_graph_fanin"]


def _total(usages: list[Usage]) -> tuple[int, int]:
    return sum(u.input_tokens for u in usages), sum(u.output_tokens for u in usages)


@pytest.mark.parametrize("case", FAN_IN, ids=[case.id for case in FAN_IN])
def test_the_planners_run_is_counted_once(case: Case) -> None:
    facts = structure_facts(case.spans)
    planner = next(n for n, agent in enumerate(facts.agents) if agent.name == "planner")
    assert sorted((e.caller, e.attempt_agents, e.shares_run) for e in facts.edges) == [
        ("flights", [planner], False), ("hotels", [planner], True)
    ]  # fmt: skip
    assert [a.name for a in facts.agents].count("planner") == 1
    # The Trace page: each edge draws to the one run; their costs add up to the run's, not twice.
    view = reconstruct(case.spans, estimate=False)
    planner_node = next(node for node in view.nodes if node.agent == "planner")
    assert [[a.node for a in d.attempts] for d in view.delegations] == [[planner_node.index]] * 2
    assert len({d.key for d in view.delegations}) == 2
    assert _total([d.cost for d in view.delegations]) == _total([planner_node.inclusive])
    truth = (case.truth["input_tokens"], case.truth["output_tokens"])
    assert _total([node.own for node in view.nodes]) == truth
    # The agent map: two edges (both rows name the run's span), the run's cost carried once.
    loops, delegations = resolved_trace(foreign_links(case.trace_id, list(case.spans)))
    assert sorted((d.caller, d.target, d.kind, d.status, d.attempts) for d in delegations) == sorted(
        (e["caller"], e["target"], e["kind"], e["status"], e["attempts"]) for e in case.truth["edges"]
    )
    assert {d.span_id for d in delegations} == {planner_node.span_id}
    runs = [loop for loop in loops if loop.agent == "planner"]
    assert len(runs) == 1
    assert sum(d.cost.input_tokens for d in delegations) == runs[0].inclusive_input
    assert sum(loop.own_input for loop in loops) == case.truth["input_tokens"]


def test_a_failed_fan_in_is_a_failed_handoff_per_edge_on_its_one_run() -> None:
    case = next(case for case in FAN_IN if case.truth["scenario"] == "graph_fan_in_failed")
    facts = structure_facts(case.spans)
    assert facts.failed_handoffs == 2  # flights -> planner and hotels -> planner both failed
    spans = failed_edge_spans(facts, {span.span_id: span for span in case.spans})
    assert [span.name for span in spans] == ["invoke_agent planner"] * 2
    assert [a.name for a in facts.agents if a.status == "error"] == ["planner"]


def test_no_other_fixture_shares_a_run() -> None:
    # Every single-input edge keeps its own attempts: the fan-in rule changes no other fixture.
    others = [case for case in cases() if case.fixture != "strands_graph_fanin"]
    assert not any(edge.shares_run for case in others for edge in structure_facts(case.spans).edges)
