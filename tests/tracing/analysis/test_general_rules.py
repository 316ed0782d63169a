"""The general rules of reading another runtime's trace, on synthetic traces that name no library:
an agent re-run inside itself (retries), usage at the finest level that carries it, containment and
order, span links, and how each edge was found."""

from __future__ import annotations

from typing import Any

from janux.tracing import conventions as c
from janux.tracing.analysis.readers.structure import RETRIED_ERROR, structure_facts
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import STATUS_ERROR, LinkRecord, SpanRecord
from tests.support.otlp_build import TRACE_A, record

AGENT = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT}
TOOL = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL}


def agent(span_id: str, parent: str, name: str, start: int, end: int, **kw: Any) -> SpanRecord:
    """An agent span named `name` from `start` to `end`."""
    attrs = {**AGENT, c.GEN_AI_AGENT_NAME: name, **kw.pop("attrs", {})}
    return record(span_id * 16, parent * 16 if parent else "", f"invoke_agent {name}", attrs, start=start,
                  duration=end - start, **kw)  # fmt: skip


def chat(
    span_id: str, parent: str, start: int, tokens: tuple[int, int] | None = (10, 2), **kw: Any
) -> SpanRecord:
    """A model call with usage `tokens` (None: without usage)."""
    attrs: dict[str, Any] = {c.GEN_AI_OPERATION_NAME: c.OP_CHAT}
    if tokens is not None:
        attrs |= {c.GEN_AI_USAGE_INPUT_TOKENS: tokens[0], c.GEN_AI_USAGE_OUTPUT_TOKENS: tokens[1]}
    return record(span_id * 16, parent * 16, "chat m", attrs, start=start, duration=10, **kw)


def tool(span_id: str, parent: str, name: str, start: int, end: int) -> SpanRecord:
    """A tool call named `name`."""
    return record(span_id * 16, parent * 16, f"execute_tool {name}", {**TOOL, c.GEN_AI_TOOL_NAME: name},
                  start=start, duration=end - start)  # fmt: skip


def edges(spans: list[SpanRecord]) -> list[tuple[str | None, str, str, str, int, str]]:
    """(caller, target, kind, status, attempts, found) of every edge."""
    facts = structure_facts(spans)
    return [(e.caller, e.target, e.kind, e.status, e.attempts, e.found) for e in facts.edges]


# ------------------------------------------------------------------ an agent re-run inside itself


def _retried(between: bool = False) -> list[SpanRecord]:
    """lead delegates through a tool to worker; worker's run fails twice, and the library re-runs it
    inside the failed run each time (optionally with a task span between)."""
    spans = [
        agent("a", "", "lead", 0, 1000),
        chat("b", "a", 10),
        tool("c", "a", "ask_worker", 100, 900),
        agent("d", "c", "worker", 110, 890, status=STATUS_ERROR),
        chat("e", "d", 120, None, status=STATUS_ERROR),
        agent("f", "d", "worker", 200, 880, status=STATUS_ERROR),
        chat("g", "f", 210, None, status=STATUS_ERROR),
        agent("h", "f", "worker", 300, 870),
        chat("i", "h", 310, (7, 3)),
    ]
    if between:  # a task span between each run and its retry
        spans[5] = agent("f", "t", "worker", 200, 880, status=STATUS_ERROR)
        spans.append(record("t" * 16, "d" * 16, "task", {}, start=190, duration=700))
    return spans


def test_an_agent_rerun_inside_itself_is_attempts_of_one_delegation() -> None:
    for between in (False, True):
        facts = structure_facts(_retried(between))
        assert edges(_retried(between)) == [("lead", "worker", "delegate", "completed", 3, "tool nesting")]
        assert [a.status for a in facts.agents] == ["ok", "error", "error", "ok"]
        assert [a.depth for a in facts.agents] == [0, 1, 1, 1]
        assert (facts.input_tokens, facts.agents[3].input_tokens) == (17, 7)


def test_a_rerun_that_is_the_same_operation_again_is_an_attempt_and_the_rerun_ones_failed() -> None:
    # Each run ends ok (the re-run inside it answered), did nothing of its own before it, and is the
    # same operation again (same span name): the library's retries, the re-run ones failed.
    spans = [agent("a", "", "lead", 0, 1000), chat("b", "a", 10), agent("c", "a", "worker", 100, 900),
             agent("d", "c", "worker", 200, 890), agent("e", "d", "worker", 300, 880),
             chat("f", "e", 310)]  # fmt: skip
    facts = structure_facts(spans)
    assert edges(spans) == [("lead", "worker", "delegate", "completed", 3, "recorded")]
    assert [a.status for a in facts.agents] == ["ok", "error", "error", "ok"]
    assert facts.agents[1].error == RETRIED_ERROR and facts.agents[3].error is None
    view = reconstruct(spans)
    assert [a.status for a in view.delegations[0].attempts] == ["error", "error", "ok"]


def test_an_agent_wrapped_twice_is_one_run_and_a_self_delegation_by_tool_stays_one() -> None:
    # Another layer (another span name) around the same run, nothing done between: one run.
    named = {**AGENT, c.GEN_AI_AGENT_NAME: "lead"}
    outer = record("a" * 16, "x" * 16, "invoke_agent lead", named, start=10, duration=100)
    inner = record("b" * 16, "a" * 16, "lead.workflow", named, start=11, duration=98)
    wrapped = [agent("x", "", "boss", 0, 200), outer, inner, chat("c", "b", 15)]
    facts = structure_facts(wrapped)
    assert ([a.name for a in facts.agents], facts.attempts) == (["boss", "lead"], 1)
    recursive = [agent("a", "", "lead", 0, 100), chat("b", "a", 1), tool("c", "a", "again", 20, 90),
                 agent("d", "c", "lead", 21, 89), chat("e", "d", 22)]  # fmt: skip
    assert edges(recursive) == [("lead", "lead", "delegate", "completed", 1, "tool nesting")]


# ------------------------------------------------------------------ usage at the finest level


def test_usage_an_agent_span_reports_is_its_own_only_where_nothing_below_carries_usage() -> None:
    usage = {c.GEN_AI_USAGE_INPUT_TOKENS: 500, c.GEN_AI_USAGE_OUTPUT_TOKENS: 50, c.GEN_AI_REQUEST_MODEL: "m"}
    # No model call recorded: the agent span's usage is the run's, once.
    alone = structure_facts([agent("a", "", "lead", 0, 100, attrs=usage), tool("b", "a", "search", 10, 20)])
    assert (alone.input_tokens, alone.output_tokens, alone.agent_usage_spans) == (500, 50, 1)
    assert (alone.agents[0].input_tokens, alone.agents[0].calls, alone.coverage) == (500, 0, [])
    # A model call below carries usage: the agent's figure sums it and is never added.
    summed = structure_facts([agent("a", "", "lead", 0, 100, attrs=usage), chat("b", "a", 10, (500, 50))])
    assert (summed.input_tokens, summed.agent_usage_spans) == (500, 0)
    # A sub-agent below carries usage: the parent's figure sums it; only the sub-agent's counts.
    sub = {**usage, c.GEN_AI_USAGE_INPUT_TOKENS: 200, c.GEN_AI_USAGE_OUTPUT_TOKENS: 20}
    nested = structure_facts([agent("a", "", "lead", 0, 100, attrs=usage), tool("b", "a", "ask", 10, 90),
                              agent("c", "b", "helper", 11, 89, attrs=sub)])  # fmt: skip
    assert (nested.input_tokens, [a.input_tokens for a in nested.agents]) == (200, [None, 200])


def test_where_nothing_carries_usage_it_is_unknown_and_the_coverage_says_so() -> None:
    named = {c.GEN_AI_REQUEST_MODEL: "m"}  # names a model, records no call and no usage
    facts = structure_facts([agent("a", "", "lead", 0, 100, attrs=named), tool("b", "a", "search", 10, 20)])
    assert (facts.input_tokens, facts.output_tokens) == (None, None)  # unknown, never 0
    assert facts.coverage == ["model calls not recorded"]


# ------------------------------------------------------------------ containment and order


def _flat(root: str = "w") -> list[SpanRecord]:
    """Every agent span directly under the run's root span: lead's two tool calls in parallel each
    ran an agent beside them; helper's own tool call ran a third agent (a chain)."""
    return [
        record(root * 16, "", "run", {}, start=0, duration=2000),
        agent("a", root, "lead", 10, 1900),
        chat("b", "a", 20),
        tool("c", "a", "ask_helper", 100, 900),
        tool("d", "a", "ask_writer", 101, 700),
        agent("e", root, "helper", 150, 880),
        chat("f", "e", 160),
        tool("g", "e", "ask_checker", 300, 600),
        agent("h", root, "checker", 310, 590, status=STATUS_ERROR),
        agent("i", root, "writer", 151, 690),
        chat("j", "i", 170),
    ]


def test_a_run_inside_a_tool_calls_window_is_its_attempt_where_nothing_recorded_says_otherwise() -> None:
    assert sorted(edges(_flat())) == [
        ("helper", "checker", "delegate", "failed", 1, "time containment"),
        ("lead", "helper", "delegate", "completed", 1, "time containment"),
        ("lead", "writer", "delegate", "completed", 1, "time containment"),
    ]
    facts = structure_facts(_flat())
    assert ([a.depth for a in facts.agents], facts.root_agent, facts.coverage) == ([0, 1, 1, 2], "lead", [])
    # Without a root span the same holds (the runs' parents are missing).
    assert len(structure_facts([s for s in _flat() if s.span_id != "w" * 16]).edges) == 3
    # A run below another span missing from the trace is not placed by time (it may belong anywhere).
    lost = [s for s in _flat() if s.span_id not in ("w" * 16, "i" * 16)]
    lost.append(agent("i", "z", "writer", 151, 690))
    facts = structure_facts(lost)
    assert (len(facts.edges), facts.coverage) == (2, ["1 agent run not placed"])


def test_a_recorded_parent_relation_wins_over_time() -> None:
    # The run hangs below a plain span of lead's own loop (not above lead): lead's direct delegation.
    step = record("p" * 16, "a" * 16, "step", {}, start=50, duration=900)
    spans = [agent("a", "", "lead", 0, 1000), tool("b", "a", "search", 100, 900), step,
             agent("c", "p", "helper", 150, 800)]  # fmt: skip
    assert edges(spans) == [("lead", "helper", "delegate", "completed", 1, "recorded")]
    # A run after the tool call's window is not its attempt: nothing places it, and the trace says so.
    late = [agent("a", "", "lead", 0, 1000), chat("x", "a", 10), tool("b", "a", "search", 100, 200)]
    late += [agent("c", "", "helper", 300, 800)]  # fmt: skip
    facts = structure_facts(late)
    assert (facts.edges, facts.coverage) == ([], ["1 agent run not placed"])


def test_a_handoff_without_target_is_resolved_by_the_next_run_after_it() -> None:
    handoff = {c.GEN_AI_OPERATION_NAME: c.OP_AGENT_HANDOFF, c.GEN_AI_HANDOFF_FROM_AGENT: "lead"}
    spans = [
        record("w" * 16, "", "run", {}, start=0, duration=2000),
        agent("a", "w", "lead", 10, 500),
        tool("b", "a", "ask_helper", 20, 200),
        agent("c", "w", "helper", 30, 190),  # inside the tool call, before the handoff: not its target
        record("d" * 16, "a" * 16, "handoff", handoff, start=300, duration=10),
        agent("e", "w", "billing", 510, 900),
    ]
    assert sorted(edges(spans)) == [
        ("lead", "billing", "transfer", "completed", 1, "time containment"),
        ("lead", "helper", "delegate", "completed", 1, "time containment"),
    ]
    assert structure_facts(spans).agent_path == ("lead", "billing")


def test_real_libraries_retries_nested_and_model_calls_not_recorded() -> None:
    from tests.support.foreign.load import cases

    nested = [case for case in cases() if case.fixture == "crewai_openllmetry"]
    assert {case.truth["scenario"] for case in nested} == {"delegation", "retry"}
    for case in nested:  # agent spans name their model; no model span, no usage anywhere
        facts = structure_facts(case.spans)
        assert (facts.input_tokens, facts.coverage) == (None, ["model calls not recorded"])
    retry = next(case for case in nested if case.truth["scenario"] == "retry")
    assert [a.status for a in structure_facts(retry.spans).agents] == ["ok", "error", "error", "ok"]


# ------------------------------------------------------------------ how each edge was found, shown


def test_how_an_edge_was_found_is_in_the_report_the_text_and_the_span_detail() -> None:
    from janux.dashboard.views.span_detail import span_detail
    from janux.tracing.analysis.report import render_tree, trace_report

    spans = _flat()
    view = reconstruct(spans)
    report = trace_report(view)
    assert {e["found"] for e in report["tree"]["edges"]} == {"time containment"}
    assert report["coverage"] == []
    assert "delegate via ask_helper (completed, time containment) -> helper" in render_tree(report)
    tool_span = next(s for s in spans if s.name == "execute_tool ask_helper")
    assert ("found by", "time containment") in span_detail(view, tool_span, None).usage
    helper = next(s for s in spans if s.name == "invoke_agent helper")
    assert ("reached by", "delegate, found by time containment") in span_detail(view, helper, None).usage


def test_a_run_nothing_places_and_calls_not_recorded_are_said_in_the_report() -> None:
    from janux.tracing.analysis.report import render_tree, trace_report

    spans = [agent("a", "", "lead", 0, 100), agent("b", "", "helper", 200, 300)]
    report = trace_report(reconstruct(spans))
    assert report["coverage"] == ["model calls not recorded", "1 agent run not placed"]
    assert (report["input_tokens"], report["cost_usd"], report["cost_kind"]) == (None, None, "unknown")
    text = render_tree(report)
    assert "usage unknown" in text and "not read: model calls not recorded; 1 agent run not placed" in text


# ------------------------------------------------------------------ workflow edges and span links


def _workflow(edges_recorded: bool = True, link: bool = True) -> list[SpanRecord]:
    """Two executors in a row under a workflow run; each runs one agent. The first sends its message
    to the second (recorded as workflow edge spans when `edges_recorded`); the second executor's span
    links to the sending span when `link`."""
    executor = c.WORKFLOW_EXECUTOR_ID if edges_recorded else "step.name"
    sent = {c.WORKFLOW_MESSAGE_DESTINATION: "billing"} if edges_recorded else {}
    edge = {c.WORKFLOW_MESSAGE_SOURCE_ID: "triage", c.WORKFLOW_MESSAGE_TARGET_ID: "billing"}
    second = record("e" * 16, "w" * 16, "executor.process billing", {executor: "billing"}, start=400,
                    duration=400)  # fmt: skip
    if link:
        second.links = [LinkRecord(TRACE_A, "s" * 16)]
    spans = [
        record("w" * 16, "", "workflow.run", {}, start=0, duration=1000),
        record("x" * 16, "w" * 16, "executor.process triage", {executor: "triage"}, start=10, duration=390),
        agent("a", "x", "triage", 20, 300),
        chat("b", "a", 30),
        record("s" * 16, "x" * 16, "message.send", sent, start=310, duration=10),
        second,
        agent("f", "e", "billing", 410, 790),
        chat("g", "f", 420),
    ]
    if edges_recorded:
        spans.append(record("q" * 16, "w" * 16, "edge_group.process", edge, start=330, duration=10))
    return spans


def test_a_workflow_edge_between_executors_is_a_transfer_between_their_agents() -> None:
    found = edges(_workflow(link=False))
    assert found == [("triage", "billing", "transfer", "completed", 1, "workflow edge")]
    facts = structure_facts(_workflow(link=False))
    assert (facts.agent_path, facts.coverage) == (("triage", "billing"), [])
    assert [a.depth for a in facts.agents] == [0, 0]


def test_a_span_link_to_another_agents_run_is_an_edge_and_its_kind_follows_the_times() -> None:
    assert edges(_workflow(edges_recorded=False)) == [
        ("triage", "billing", "transfer", "completed", 1, "span link")
    ]
    # Nothing links: nothing places the second run, and the trace says so.
    assert structure_facts(_workflow(edges_recorded=False, link=False)).coverage == ["1 agent run not placed"]
    # A run linking to an agent's span that outlives it: a delegation.
    helper = agent("h", "", "helper", 100, 200)
    helper.links = [LinkRecord(TRACE_A, "a" * 16)]
    spans = [agent("a", "", "lead", 0, 1000), chat("b", "a", 10), helper, chat("c", "h", 110)]
    assert edges(spans) == [("lead", "helper", "delegate", "completed", 1, "span link")]
    assert [a.depth for a in structure_facts(spans).agents] == [0, 1]


def test_real_library_handoff_recorded_only_by_workflow_spans() -> None:
    from tests.support.foreign.load import cases

    (case,) = [case for case in cases() if case.fixture == "agent_framework"]
    assert edges(list(case.spans)) == [("triage", "billing", "transfer", "completed", 1, "workflow edge")]


def test_a_run_placed_by_time_may_hold_delegations_of_its_own() -> None:
    # helper runs beside lead's tool call, and itself delegates to deep through a nested tool call.
    spans = [
        record("w" * 16, "", "run", {}, start=0, duration=2000),
        agent("a", "w", "lead", 10, 1900),
        tool("c", "a", "ask_helper", 100, 900),
        agent("e", "w", "helper", 150, 880),
        tool("g", "e", "ask_deep", 300, 600),
        agent("h", "g", "deep", 310, 590),
    ]
    assert sorted(edges(spans)) == [
        ("helper", "deep", "delegate", "completed", 1, "tool nesting"),
        ("lead", "helper", "delegate", "completed", 1, "time containment"),
    ]
