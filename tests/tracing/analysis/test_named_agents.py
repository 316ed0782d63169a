"""Agents where no span says "agent" (issue 29, item 5), on synthetic traces that name no library: a
task, chain or workflow span that names an agent and holds its model calls or tool calls is that
agent's loop, at the top of a trace or below a tool call (a sub-agent); then the real library."""

from __future__ import annotations

from typing import Any

from janux.tracing import conventions as c
from janux.tracing.analysis.readers.structure import structure_facts
from janux.tracing.analysis.report import trace_report
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import STATUS_ERROR, SpanRecord
from tests.support.otlp_build import record
from tests.tracing.analysis.test_general_rules import chat, edges, tool

TASK = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TASK}
WORKFLOW = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_WORKFLOW}
BUILD = {c.GEN_AI_OPERATION_NAME: c.OP_CREATE_AGENT}
LEAD = {c.GEN_AI_AGENT_NAME: "lead"}


def task(span_id: str, parent: str, agent: str | None, start: int, end: int, **kw: Any) -> SpanRecord:
    """A task span (GenAI `execute_task`) naming `agent` by `gen_ai.agent.name` (None: naming none)."""
    attrs = {**TASK, **({c.GEN_AI_AGENT_NAME: agent} if agent else {}), **kw.pop("attrs", {})}
    return record(span_id * 16, parent * 16 if parent else "", f"execute_task {agent or 'step'}", attrs,
                  start=start, duration=end - start, **kw)  # fmt: skip


def chain(span_id: str, parent: str, name: str, start: int, end: int, **attrs: Any) -> SpanRecord:
    """An OpenInference CHAIN span named `name` with `attrs`."""
    attributes = {c.OI_SPAN_KIND: c.OI_KIND_CHAIN, **attrs}
    return record(span_id * 16, parent * 16 if parent else "", name, attributes, start=start,
                  duration=end - start)  # fmt: skip


def _team(failing: bool = False) -> list[SpanRecord]:
    """No agent span anywhere: lead's task holds its model calls and a tool call, and the tool runs
    helper as a task span (helper's model fails when `failing`)."""
    status = STATUS_ERROR if failing else "Unset"
    return [
        task("a", "", "lead", 0, 1000),
        chat("b", "a", 10, (100, 10)),
        tool("c", "a", "ask_helper", 100, 800),
        task("d", "c", "helper", 110, 790, status=status),
        chat("e", "d", 120, None if failing else (40, 4), status=status),
        tool("f", "d", "search", 200, 300),
        chat("g", "a", 900, (30, 3)),
    ]


def test_a_task_that_names_an_agent_and_holds_its_work_is_its_loop_and_a_sub_agent_under_a_tool() -> None:
    facts = structure_facts(_team())
    assert [(a.name, a.depth, a.input_tokens, a.output_tokens, a.calls) for a in facts.agents] == [
        ("lead", 0, 130, 13, 2),
        ("helper", 1, 40, 4, 1),
    ]
    assert edges(_team()) == [("lead", "helper", "delegate", "completed", 1, "tool nesting")]
    assert (facts.root_agent, facts.input_tokens, facts.coverage) == ("lead", 170, [])


def test_a_sub_agent_task_that_failed_fails_its_delegation() -> None:
    facts = structure_facts(_team(failing=True))
    assert edges(_team(failing=True)) == [("lead", "helper", "delegate", "failed", 1, "tool nesting")]
    assert [a.status for a in facts.agents] == ["ok", "error"]


def test_per_agent_cost_and_the_tree_exist_in_the_report() -> None:
    report = trace_report(reconstruct(_team()))
    assert [(e["caller"], e["target"], e["found"]) for e in report["tree"]["edges"]] == [
        ("lead", "helper", "tool nesting")
    ]
    assert report["input_tokens"] == 170


def test_inside_a_loop_without_a_tool_call_between_a_naming_span_is_a_step_not_an_agent() -> None:
    # A workflow naming lead wraps lead's task steps, one of which names another agent: all lead's.
    spans = [
        record("w" * 16, "", "invoke_workflow team", WORKFLOW | LEAD, start=0, duration=1000),
        task("a", "w", "lead", 10, 400),
        chat("b", "a", 20),
        task("d", "w", "writer", 500, 900),
        chat("e", "d", 510),
    ]
    facts = structure_facts(spans)
    assert [(a.name, a.calls) for a in facts.agents] == [("lead", 2)]
    assert facts.edges == []


def test_below_an_unnamed_agent_span_that_wraps_the_run_a_naming_span_is_the_loop() -> None:
    # The run's wrapper is an agent span with no name; the agent is named only by its task span.
    root = record("r" * 16, "", "Agent workflow", {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT}, start=0,
                  duration=2000)  # fmt: skip
    spans = [root, *(_team()[:3]), *(_team()[6:])]
    spans[1] = task("a", "r", "lead", 0, 1000)
    facts = structure_facts(spans)
    assert [(a.name, a.input_tokens) for a in facts.agents] == [("lead", 130)]
    assert facts.root_agent == "lead"


def test_a_span_that_only_names_an_agent_or_names_none_is_no_loop() -> None:
    # `create_agent`-like: names lead, runs nothing (lead's task beside it is the loop); an unnamed
    # task holding a call makes no agent.
    spans = [
        record("k" * 16, "", "create_agent lead", BUILD | LEAD, start=0, duration=5),
        task("a", "", "lead", 10, 400),
        chat("b", "a", 20),
    ]
    assert [(a.name, a.span_id, a.calls) for a in structure_facts(spans).agents] == [("lead", "a" * 16, 1)]
    unnamed = [task("a", "", None, 10, 400), chat("b", "a", 20)]
    assert [a.name for a in structure_facts(unnamed).agents] == ["(no agent)"]


def test_usage_the_naming_span_reports_is_never_added_to_its_model_calls() -> None:
    spans = _team()
    spans[0] = task("a", "", "lead", 0, 1000, attrs={c.GEN_AI_USAGE_INPUT_TOKENS: 170,
                                                       c.GEN_AI_USAGE_OUTPUT_TOKENS: 17})  # fmt: skip
    facts = structure_facts(spans)
    assert [(a.name, a.input_tokens) for a in facts.agents] == [("lead", 130), ("helper", 40)]
    assert facts.input_tokens == 170


def test_a_naming_span_with_tools_but_no_model_call_says_model_calls_not_recorded() -> None:
    spans = [task("a", "", "lead", 0, 1000), tool("c", "a", "search", 100, 200)]
    facts = structure_facts(spans)
    assert ([a.name for a in facts.agents], facts.input_tokens) == (["lead"], None)
    assert facts.coverage == ["model calls not recorded"]


def test_a_naming_span_beside_a_tool_call_is_placed_by_time_containment() -> None:
    # A flattened trace: both agents' tasks hang under an unnamed run; helper starts inside lead's
    # tool call.
    spans = [
        record("w" * 16, "", "run", {}, start=0, duration=2000),
        task("a", "w", "lead", 10, 1900),
        chat("b", "a", 20),
        tool("c", "a", "ask_helper", 100, 900),
        task("d", "w", "helper", 150, 880),
        chat("e", "d", 160),
    ]
    assert edges(spans) == [("lead", "helper", "delegate", "completed", 1, "time containment")]


def test_openinference_chains_named_by_agent_name_or_as_a_graph_run() -> None:
    llm = {c.OI_SPAN_KIND: c.OI_KIND_LLM, c.LLM_TOKEN_COUNT_PROMPT: 10, c.LLM_TOKEN_COUNT_COMPLETION: 1}
    node = '{"langgraph_node": "model"}'
    oi_tool = {c.OI_SPAN_KIND: c.OI_KIND_TOOL, c.OI_TOOL_NAME: "ask"}
    spans = [
        chain("a", "", "planner", 0, 1000, **{c.OI_METADATA: "{}"}),
        chain("n", "a", "model", 10, 90, **{c.OI_METADATA: node}),
        record("b" * 16, "n" * 16, "llm", llm, start=20, duration=10),
        record("c" * 16, "a" * 16, "ask", oi_tool, start=100, duration=700),
        chain("d", "c", "step", 110, 690, **{c.OI_AGENT_NAME: "critic"}),
        record("e" * 16, "d" * 16, "llm", llm, start=120, duration=10),
    ]
    facts = structure_facts(spans)
    found = [(a.name, a.depth, a.input_tokens) for a in facts.agents]
    assert found == [("planner", 0, 10), ("critic", 1, 10)]
    assert edges(spans) == [("planner", "critic", "delegate", "completed", 1, "tool nesting")]
    # The graph library's default name names no agent.
    spans[0] = chain("a", "", c.LANGGRAPH_DEFAULT_NAME, 0, 1000)
    assert [a.name for a in structure_facts(spans).agents] == ["(no agent)", "critic"]


def test_real_library_whose_agents_are_named_chain_spans() -> None:
    from tests.support.foreign.load import cases

    runs = {case.truth["scenario"]: case for case in cases() if case.fixture == "langchain_openinference"}
    assert set(runs) == {"delegation", "parallel", "failed"}
    spans = runs["delegation"].spans
    assert not any(span.attributes.get(c.OI_SPAN_KIND) == c.OI_KIND_AGENT for span in spans)
    assert edges(list(spans)) == [("supervisor", "researcher", "delegate", "completed", 1, "tool nesting")]
    facts = structure_facts(spans)
    assert [(a.name, a.input_tokens, a.output_tokens) for a in facts.agents] == [
        ("supervisor", 320, 35),
        ("researcher", 150, 22),
    ]
