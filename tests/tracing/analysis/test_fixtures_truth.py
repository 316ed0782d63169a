"""Every fixture trace read by `structure_facts` gives exactly its truth, and the mapping rules hold."""

from __future__ import annotations

import json

import pytest

from janux.tracing import conventions as c
from janux.tracing.analysis.readers import genai, openinference
from janux.tracing.analysis.readers.spans import classify, error_text, read_span, read_usage
from janux.tracing.analysis.readers.structure import UNNAMED_AGENT, structure_facts
from janux.tracing.records import STATUS_ERROR, EventRecord, SpanRecord
from tests.support.foreign.load import Case, cases, edges, stated_edges
from tests.support.otlp_build import record

CASES = cases()
STATED = [case for case in CASES if case.truth["edges"] is not None]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_facts_equal_the_truth(case: Case) -> None:
    facts = structure_facts(case.spans)
    truth = case.truth
    assert (facts.input_tokens or 0, facts.output_tokens or 0) == (
        truth["input_tokens"],
        truth["output_tokens"],
    )
    assert facts.usage_read_spans == truth["inference_calls"]
    assert facts.unread_spans == truth["unread_calls"]
    assert facts.unrecognised_spans == truth["unrecognised_spans"]
    assert sorted(a.name for a in facts.agents) == sorted(truth["agents"])
    delegations = [(e.caller, e.target) for e in facts.edges if e.kind == "delegate"]
    transfers = [(e.caller, e.target) for e in facts.edges if e.kind == "transfer"]
    assert edges(delegations) == edges(truth["delegations"])
    assert edges(transfers) == edges(truth["transfers"])
    if not truth["hand_built"]:
        assert facts.errors == truth["errors"]


@pytest.mark.parametrize("case", STATED, ids=[case.id for case in STATED])
def test_edges_outcomes_attempts_and_root_equal_the_truth(case: Case) -> None:
    # Loops are loops (a LangGraph graph's ReAct steps are one loop's rounds, not attempts),
    # parallel calls are separate delegations, transfers and failures hidden by the library count.
    facts = structure_facts(case.spans)
    got = sorted((e.caller or "", e.target, e.kind, e.status, e.attempts) for e in facts.edges)
    assert got == stated_edges(case.truth)
    assert facts.root_agent == case.truth["root_agent"]
    assert sum(1 for agent in facts.agents if agent.name == UNNAMED_AGENT) == case.truth["unnamed_agents"]


def test_every_major_library_has_a_fixture_from_the_real_library() -> None:
    libraries = {case.fixture for case in STATED if not case.truth["hand_built"]}
    generated = {"langgraph_openinference", "smolagents_managed", "adk", "strands_agents",
                 "autogen_agentchat", "crewai_openinference", "llamaindex_openinference",
                 "langgraph_openllmetry", "openai_agents_openllmetry", "crewai_openllmetry",
                 "agent_framework", "langchain_openinference"}  # fmt: skip
    assert generated <= libraries
    outcomes = {(e["kind"], e["status"]) for case in STATED for e in case.truth["edges"]}
    assert outcomes == {("delegate", "completed"), ("delegate", "failed"), ("transfer", "completed"),
                        ("transfer", "failed")}  # fmt: skip


def test_every_library_scenario_is_covered() -> None:
    scenarios = {(case.fixture, case.truth["scenario"]) for case in CASES}
    for fixture in ("pydantic_ai", "openai_agents_openinference", "openai_agents_genai"):
        for scenario in ("chain", "parallel", "tool_error", "retry", "handoff", "raised"):
            assert (fixture, scenario) in scenarios
    raised = [case for case in CASES if case.truth["scenario"] == "raised"]
    assert all(case.truth["raised"] and structure_facts(case.spans).failed_handoffs == 1 for case in raised)


def test_usage_names_of_every_convention() -> None:
    assert read_usage({c.GEN_AI_USAGE_INPUT_TOKENS: 5, c.GEN_AI_USAGE_OUTPUT_TOKENS: 2}, "Ok") == (
        "read",
        5,
        2,
    )
    assert read_usage({c.GEN_AI_USAGE_PROMPT_TOKENS: "7", c.GEN_AI_USAGE_COMPLETION_TOKENS: 3}, "Ok") == (
        "read",
        7,
        3,
    )
    assert read_usage({c.LLM_TOKEN_COUNT_PROMPT: 9, c.LLM_TOKEN_COUNT_COMPLETION: 1}, "Ok") == ("read", 9, 1)
    # Only a total, or usage under an unknown name: unread, never zero.
    assert read_usage({c.LLM_TOKEN_COUNT_TOTAL: 10}, "Ok") == ("unread", None, None)
    assert read_usage({"ai.usage.promptTokens": 10}, "Ok") == ("unread", None, None)
    assert read_usage({}, "Ok") == ("absent", None, None)
    assert read_usage({}, STATUS_ERROR) == ("failed", None, None)


def test_roles_of_every_convention() -> None:
    assert classify({c.GEN_AI_OPERATION_NAME: "embeddings"}, "x")[0] == "inference"
    assert classify({c.GEN_AI_OPERATION_NAME: "create_agent"}, "x")[:1] == ("plain",)
    assert classify({c.GEN_AI_OPERATION_NAME: "agent_handoff"}, "x")[0] == "transfer"
    assert classify({c.GEN_AI_OPERATION_NAME: "mystery"}, "x") == ("plain", "genai", False)
    assert classify({c.OI_SPAN_KIND: "EMBEDDING"}, "x")[0] == "inference"
    assert classify({c.OI_SPAN_KIND: "GUARDRAIL"}, "x") == ("plain", "openinference", True)
    assert classify({c.OI_SPAN_KIND: "TOOL"}, "handoff to billing")[0] == "transfer"
    assert classify({c.LLM_REQUEST_TYPE: "completion"}, "x")[0] == "inference"
    assert classify({c.TRACELOOP_SPAN_KIND: "agent"}, "x")[0] == "agent"
    assert classify({"acme.input_tokens": 3}, "x") == ("plain", "", False)
    assert classify({}, "plain work") == ("plain", "", True)


def test_agent_usage_is_never_added_to_the_rounds() -> None:
    root = record(
        "a" * 16,
        "",
        "invoke_agent triage",
        {
            c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
            c.GEN_AI_AGENT_NAME: "triage",
            c.GEN_AI_USAGE_INPUT_TOKENS: 1000,
            c.GEN_AI_AGGREGATED_USAGE_PREFIX + "input_tokens": 1000,
        },
    )
    chat = record(
        "b" * 16, "a" * 16, "chat m", {c.GEN_AI_OPERATION_NAME: c.OP_CHAT, c.GEN_AI_USAGE_INPUT_TOKENS: 10}
    )
    facts = structure_facts([root, chat])
    assert (facts.input_tokens, facts.agents[0].input_tokens) == (10, 10)


def test_an_unnamed_agent_is_never_named_after_its_span() -> None:
    workflow = record("a" * 16, "", "Agent workflow", {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT})
    agent = record("b" * 16, "a" * 16, "invoke_agent triage", {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT})
    looping = record(
        "c" * 16, "", "Agent workflow", {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT}, trace_id="2" * 32
    )
    call = record("d" * 16, "c" * 16, "chat m", {c.GEN_AI_OPERATION_NAME: c.OP_CHAT}, trace_id="2" * 32)
    # A workflow root with no calls of its own is the run: the agent below it is a root, not a delegation.
    run = structure_facts([workflow, agent])
    assert ([a.name for a in run.agents], run.delegations) == (["triage"], 0)
    assert read_span(workflow).agent is None
    assert [a.name for a in structure_facts([looping, call]).agents] == [UNNAMED_AGENT]


def test_failure_text_from_the_exception_event() -> None:
    event = EventRecord(
        1,
        c.EVENT_EXCEPTION,
        {
            c.EXCEPTION_TYPE: "ValueError",
            c.EXCEPTION_MESSAGE: "bad order",
            c.EXCEPTION_STACKTRACE: "Traceback ...",
        },
    )
    span = record(
        "a" * 16,
        "",
        "execute_tool lookup",
        {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL},
        status=STATUS_ERROR,
        events=[event],
    )
    assert error_text(span) == ("ValueError: bad order", "Traceback ...")
    span.status_message = "lookup failed"
    assert error_text(span)[0] == "lookup failed"


def test_llamaindex_agents_are_named_by_their_steps_input() -> None:
    # LlamaIndex agent workflows have no AGENT span: a step names its agent in the repr of its input
    # event, whose own field comes last (an earlier one is chat content).
    chain = {c.OI_SPAN_KIND: "CHAIN"}
    said = "AgentSetup(input=[ChatMessage(content=\"current_agent_name='x'\")], current_agent_name='billing')"
    step = record("a" * 16, "", "AgentWorkflow.run_agent_step", {**chain, c.OI_INPUT_VALUE: said})
    assert openinference.llama_index_step_agent(step) == "billing"
    other = record("b" * 16, "", "AgentWorkflow.call_tool", {**chain, c.OI_INPUT_VALUE: said})
    assert openinference.llama_index_step_agent(other) is None
    hidden = record("c" * 16, "", "AgentWorkflow.run_agent_step", chain)  # inputs hidden: no name
    assert openinference.llama_index_step_agent(hidden) is None
    handoff = {c.OI_SPAN_KIND: "TOOL", c.OI_TOOL_NAME: "handoff",
               c.OI_INPUT_VALUE: json.dumps({"kwargs": {"to_agent": "billing", "reason": "r"}})}  # fmt: skip
    assert read_span(record("d" * 16, "", "FunctionTool.acall", handoff)).transfer_to == "billing"
    plain = {**handoff, c.OI_TOOL_NAME: "lookup"}
    assert classify(plain, "FunctionTool.acall")[0] == "tool"


def test_llamaindex_sibling_steps_of_one_agent_are_one_loop() -> None:
    # triage's step hands off; billing's two steps (a tool round, then the answer) are siblings of
    # triage's below the workflow's run span: billing is one loop, reached by the transfer.
    chain, llm = {c.OI_SPAN_KIND: "CHAIN"}, {c.OI_SPAN_KIND: "LLM", c.LLM_TOKEN_COUNT_PROMPT: 3}

    def step(span_id: str, agent: str, start: int) -> SpanRecord:
        said = {**chain, c.OI_INPUT_VALUE: f"AgentSetup(input=[], current_agent_name='{agent}')"}
        return record(span_id * 16, "a" * 16, "AgentWorkflow.run_agent_step", said, start=start)

    handoff = {c.OI_SPAN_KIND: "TOOL", c.OI_TOOL_NAME: "handoff",
               c.OI_INPUT_VALUE: json.dumps({"kwargs": {"to_agent": "billing"}})}  # fmt: skip
    spans = [
        record("a" * 16, "", "AgentWorkflow.run", chain, start=0, duration=10_000),
        step("b", "triage", 100),
        record("c" * 16, "b" * 16, "Scripted.achat", llm, start=110),
        record("d" * 16, "a" * 16, "AgentWorkflow.call_tool", chain, start=200),
        record("e" * 16, "d" * 16, "FunctionTool.acall", handoff, start=210),
        step("f", "billing", 300),
        record("g" * 16, "f" * 16, "Scripted.achat", llm, start=310),
        record("h" * 16, "a" * 16, "AgentWorkflow.call_tool", chain, start=400),
        step("i", "billing", 500),
        record("j" * 16, "i" * 16, "Scripted.achat", llm, start=510),
    ]
    facts = structure_facts(spans)
    assert [(a.name, a.calls) for a in facts.agents] == [("triage", 1), ("billing", 2)]
    assert [(e.caller, e.target, e.kind, e.attempts) for e in facts.edges] == [
        ("triage", "billing", "transfer", 1)
    ]
    assert (facts.root_agent, facts.agent_path) == ("triage", ("triage", "billing"))


def _smolagents_failed_step(orphan_start: int) -> list[SpanRecord]:
    """A manager whose step recorded its managed agent's failure, and a span of a lost parent."""
    agent, chain, llm = {c.OI_SPAN_KIND: "AGENT"}, {c.OI_SPAN_KIND: "CHAIN"}, {c.OI_SPAN_KIND: "LLM"}
    failure = EventRecord(1, c.EVENT_EXCEPTION, {
        c.EXCEPTION_TYPE: "smolagents.utils.AgentToolExecutionError",
        c.EXCEPTION_MESSAGE: "Error executing request to team member 'researcher' with arguments {}: boom",
    })  # fmt: skip
    usage = {**llm, c.LLM_TOKEN_COUNT_PROMPT: 5, c.LLM_TOKEN_COUNT_COMPLETION: 1}
    return [
        record("a" * 16, "", "manager.run", agent, start=0, duration=1_000),
        record("b" * 16, "a" * 16, "Step 1", chain, start=100, duration=500, status=STATUS_ERROR,
               events=[failure]),
        record("c" * 16, "b" * 16, "OpenAIModel.generate", usage, start=110, duration=10),
        record("d" * 16, "f" * 16, "Step 1", chain, start=orphan_start, duration=5, status=STATUS_ERROR),
    ]


def test_a_managed_agent_that_raised_is_a_failed_delegation_of_its_managers_step() -> None:
    facts = structure_facts(_smolagents_failed_step(orphan_start=200))
    assert [(e.caller, e.target, e.status, e.attempts) for e in facts.edges] == [
        ("manager", "researcher", "failed", 1)
    ]
    assert [a.name for a in facts.agents] == ["manager", "researcher"]
    # A span of a lost parent outside the failed step is not that agent's: it stays loose.
    outside = structure_facts(_smolagents_failed_step(orphan_start=900))
    assert [(e.target, e.attempts) for e in outside.edges] == [("researcher", 0)]
    assert [a.name for a in outside.agents] == ["manager"]


def test_transfer_tools_and_agent_names_of_every_library() -> None:
    tool = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL}
    name = c.GEN_AI_TOOL_NAME
    assert classify({**tool, name: "transfer_to_agent"}, "x")[0] == "transfer"  # Google ADK
    assert classify({**tool, name: "t", c.GEN_AI_TOOL_TYPE: c.ADK_TRANSFER_TOOL_TYPE}, "x")[0] == "transfer"
    assert classify({**tool, name: "handoff_to_agent"}, "x")[0] == "transfer"  # Strands swarm
    # `transfer_to_{agent}` is a transfer by AutoGen's naming only; elsewhere it may be a delegation tool.
    assert classify({**tool, name: "transfer_to_billing"}, "x")[0] == "tool"
    autogen = {**tool, name: "transfer_to_billing", c.GEN_AI_SYSTEM_DEPRECATED: c.AUTOGEN_SYSTEM}
    assert read_span(record("a" * 16, "", "execute_tool", autogen)).transfer_to == "billing"
    langgraph = {c.OI_SPAN_KIND: "TOOL", c.OI_METADATA: json.dumps({c.LANGGRAPH_HANDOFF_KEY: "billing"})}
    assert read_span(record("b" * 16, "", "transfer_to_billing", langgraph)).transfer_to == "billing"
    returned = json.dumps({"graph": c.LANGGRAPH_PARENT_GRAPH, "goto": "billing"})
    command = {c.OI_SPAN_KIND: "TOOL", c.OI_OUTPUT_VALUE: returned}
    assert read_span(record("c" * 16, "", "go", command)).transfer_to == "billing"
    agent = {c.OI_SPAN_KIND: "AGENT"}
    assert read_span(record("d" * 16, "", "researcher.run", agent)).agent == "researcher"  # smolagents
    assert read_span(record("e" * 16, "", "CodeAgent.run", agent)).agent is None  # a class names no agent
    assert classify({c.OI_SPAN_KIND: "LLM"}, "Model._prepare_chat_with_tools")[0] == "plain"  # LlamaIndex


def test_a_langgraph_router_node_is_no_round_of_a_loop() -> None:
    # A swarm's router node (an AGENT span by its name, no model call) leaves its graph a plain span;
    # the graph whose agent node calls the model is the loop, named after the graph.
    node = {c.OI_SPAN_KIND: "AGENT", c.OI_METADATA: json.dumps({c.LANGGRAPH_NODE_KEY: "agent"})}
    chain, llm = {c.OI_SPAN_KIND: "CHAIN"}, {c.OI_SPAN_KIND: "LLM", c.LLM_TOKEN_COUNT_PROMPT: 3}
    spans = [
        record("a" * 16, "", "LangGraph", chain),
        record("b" * 16, "a" * 16, "__start__", chain),
        record("c" * 16, "b" * 16, "route_to_active_agent", node),
        record("d" * 16, "a" * 16, "triage", chain),
        record("e" * 16, "d" * 16, "agent", node),
        record("f" * 16, "e" * 16, "Scripted", llm),
        record("g" * 16, "d" * 16, "agent", node, start=2_000),
        record("h" * 16, "g" * 16, "Scripted", llm, start=2_000),
    ]
    facts = structure_facts(spans)
    assert [(a.name, a.calls) for a in facts.agents] == [("triage", 2)]


def _handed_back(handoff: dict[str, object], name: str) -> list[SpanRecord]:
    """A supervisor graph whose tool span (`name`: `handoff`) hands to the researcher graph, then
    runs again."""
    node = {c.OI_SPAN_KIND: "AGENT", c.OI_METADATA: json.dumps({c.LANGGRAPH_NODE_KEY: "agent"})}
    chain, llm = {c.OI_SPAN_KIND: "CHAIN"}, {c.OI_SPAN_KIND: "LLM", c.LLM_TOKEN_COUNT_PROMPT: 3}
    spans = [record("a" * 16, "", "LangGraph", chain, start=0, duration=10_000)]
    for n, (graph, start) in enumerate((("supervisor", 100), ("researcher", 1_000), ("supervisor", 2_000))):
        ids = [f"{n}{letter}" * 8 for letter in "bcd"]
        spans += [
            record(ids[0], "a" * 16, graph, chain, start=start),
            record(ids[1], ids[0], "agent", node, start=start + 10),
            record(ids[2], ids[1], "Scripted", llm, start=start + 20),
        ]
    return [*spans, record("e" * 16, "0c" * 8, name, handoff, start=500)]


def test_a_supervisor_taking_control_back_after_a_langgraph_handoff_delegated() -> None:
    # langgraph-supervisor: the edge back to the supervisor has no span; the supervisor's next run
    # is the same loop, and its handoff was a delegation.
    tool = {c.OI_SPAN_KIND: "TOOL", c.OI_METADATA: json.dumps({c.LANGGRAPH_HANDOFF_KEY: "researcher"})}
    facts = structure_facts(_handed_back(tool, "transfer_to_researcher"))
    assert [(a.name, a.depth, a.calls) for a in facts.agents] == [("supervisor", 0, 2), ("researcher", 1, 1)]
    assert [(e.caller, e.target, e.kind, e.attempts) for e in facts.edges] == [
        ("supervisor", "researcher", "delegate", 1)
    ]
    # Another library's handoff span (the OpenAI Agents bridge) stays a transfer.
    bridge = structure_facts(_handed_back({c.OI_SPAN_KIND: "TOOL"}, "handoff to researcher"))
    assert [a.name for a in bridge.agents] == ["supervisor", "researcher", "supervisor"]
    assert [(e.kind, e.target) for e in bridge.edges] == [("transfer", "researcher")]


def _graph_node(span_id: str, name: str, said: str, parent: str, start: int) -> SpanRecord:
    """A Strands node agent whose recorded input is `said`."""
    attrs = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: name}
    event = EventRecord(start, "gen_ai.user.message", {"content": said})
    return record(span_id * 16, parent, f"invoke_agent {name}", attrs, start=start, events=[event])


def test_strands_graph_edges_are_read_from_the_nodes_input() -> None:
    # A Strands graph writes no edge into its spans; a node's recorded input lists the nodes feeding
    # it. A name that no earlier node has (result text that looks alike) is no edge.
    fed = json.dumps([{"text": "Original Task: q"}, {"text": "\nInputs from previous nodes:"},
                      {"text": "\nFrom researcher:"}, {"text": "  - Agent: From nowhere: x\n"},
                      {"text": "\nFrom ghost:"}])  # fmt: skip
    graph = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_GRAPH}
    spans = [
        record("a" * 16, "", "invoke_graph", graph, start=0, duration=10_000),
        _graph_node("b", "researcher", "[]", "a" * 16, 100),
        _graph_node("c", "writer", fed, "a" * 16, 1_000),
    ]
    assert genai.graph_inputs(spans[2]) == ("researcher", "ghost")
    facts = structure_facts(spans)
    assert [(e.caller, e.target, e.kind, e.attempts) for e in facts.edges] == [
        ("researcher", "writer", "transfer", 1)
    ]
    assert (facts.root_agent, facts.agent_path) == ("researcher", ("researcher", "writer"))
    # The same agents outside a graph's span: no edge.
    loose = structure_facts([record("a" * 16, "", "invoke_swarm", {c.GEN_AI_OPERATION_NAME: "invoke_swarm"}),
                             *spans[1:]])  # fmt: skip
    assert loose.edges == []
    # A node fed by two nodes: an edge from each, both with its one run as attempt; the run is the
    # first edge's (its `via`), the other shares it, so no sum counts it twice.
    both = fed.replace("ghost", "checker")
    fan_in = structure_facts([*spans[:2], _graph_node("d", "checker", "[]", "a" * 16, 200),
                              _graph_node("c", "writer", both, "a" * 16, 1_000)])  # fmt: skip
    assert [a.name for a in fan_in.agents] == ["researcher", "checker", "writer"]
    got = [(e.caller, e.target, e.kind, e.attempts, e.attempt_agents, e.shares_run) for e in fan_in.edges]
    assert got == [
        ("researcher", "writer", "transfer", 1, [2], False),
        ("checker", "writer", "transfer", 1, [2], True),
    ]
    assert (fan_in.agents[2].via, fan_in.agent_path, fan_in.transfers) == (0, ("researcher", "writer"), 2)


def test_openllmetry_langgraph_runs_are_one_loop_per_agent() -> None:
    # OpenLLMetry wraps a graph's workflow span (invoke_agent too) in an `invoke_agent NAME` span of
    # the same agent: one loop. A graph run inside a tool gets an empty `invoke_agent NAME` span
    # beside its task span of that name: the task is its body (a delegation from the tool's loop).
    def agent(name: str) -> dict[str, object]:
        return {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: name}

    task = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TASK, c.TRACELOOP_SPAN_KIND: "task"}
    chat = {c.GEN_AI_OPERATION_NAME: "chat", c.GEN_AI_USAGE_INPUT_TOKENS: 5, c.GEN_AI_USAGE_OUTPUT_TOKENS: 1}
    tool = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL, c.GEN_AI_TOOL_NAME: "ask_researcher"}
    body = {**task, c.TRACELOOP_ENTITY_NAME: "researcher"}
    spans = [
        record("a" * 16, "", "invoke_agent supervisor", agent("supervisor"), start=0, duration=1_000),
        record("b" * 16, "a" * 16, "supervisor.workflow", agent("supervisor"), start=10, duration=900),
        record("c" * 16, "b" * 16, "Scripted.chat", chat, start=20),
        record("d" * 16, "b" * 16, "execute_tool ask_researcher", tool, start=100, duration=500),
        record("e" * 16, "d" * 16, "invoke_agent researcher", agent("researcher"), start=110, duration=400),
        record("f" * 16, "d" * 16, "execute_task researcher", body, start=120, duration=300),
        record("g" * 16, "f" * 16, "Scripted.chat", chat, start=130),
    ]
    facts = structure_facts(spans)
    assert [(a.name, a.depth, a.calls) for a in facts.agents] == [("supervisor", 0, 1), ("researcher", 1, 1)]
    assert [(e.caller, e.target, e.kind) for e in facts.edges] == [("supervisor", "researcher", "delegate")]
    assert facts.unrecognised_spans == 0
