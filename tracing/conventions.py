"""The trace contract (v1): every span name, attribute name and enumerated value, in one place.

The runtime (writer) and the dashboard (reader) both import these names, so the two sides
cannot drift apart. Names follow the OpenTelemetry GenAI semantic conventions where one exists
(`gen_ai.*`, `error.type`); everything the conventions do not cover lives under `janux.*`.
See docs/trace-contract.md for the prose version.
"""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------------------------
# Operations and span names
# --------------------------------------------------------------------------------------------

OP_INVOKE_AGENT: Final = "invoke_agent"
"""`gen_ai.operation.name` of an agent loop: the turn root and each delegation attempt."""

OP_CHAT: Final = "chat"
"""`gen_ai.operation.name` of one model round."""

OP_EXECUTE_TOOL: Final = "execute_tool"
"""`gen_ai.operation.name` of one tool call, including delegation and handoff tools."""

INFERENCE_OPERATIONS: Final = frozenset({"chat", "text_completion", "generate_content"})
"""Operations that are model inference: the only spans whose `gen_ai.usage.*` a reader sums."""


def invoke_agent_span_name(agent: str) -> str:
    """Span name of an agent loop: `invoke_agent {agent}`."""
    return f"{OP_INVOKE_AGENT} {agent}"


def chat_span_name(model: str) -> str:
    """Span name of a model round: `chat {model}`."""
    return f"{OP_CHAT} {model}"


def execute_tool_span_name(tool: str) -> str:
    """Span name of a tool call: `execute_tool {tool}`."""
    return f"{OP_EXECUTE_TOOL} {tool}"


# --------------------------------------------------------------------------------------------
# OpenTelemetry GenAI semantic-convention attributes
# --------------------------------------------------------------------------------------------

GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
"""What the span does: `invoke_agent`, `chat` or `execute_tool`."""

GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
"""Model provider (`openai`, ...); the deprecated `gen_ai.system` is never written."""

GEN_AI_SYSTEM_DEPRECATED: Final = "gen_ai.system"
"""Deprecated provider attribute; read (never written) for traces from older libraries."""

GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
"""Model name the round asked for."""

GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
"""Model name the provider reports it used."""

GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
"""Finish reasons of the round, a string array (`stop`, `tool_calls`, ...)."""

GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
"""Input tokens of one inference round. Only ever set on `chat` spans (contract invariant 3)."""

GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
"""Output tokens of one inference round. Only ever set on `chat` spans (contract invariant 3)."""

GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
"""Name of the agent whose loop the span belongs to."""

GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
"""Optional stable agent identifier (read from other runtimes)."""

GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
"""Thread id of the conversation a turn belongs to."""

GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
"""Name of the tool called (`search`, `delegate.researcher`, `handoff.billing`)."""

GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
"""The model's id for the tool call."""

GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
"""`function`, `delegate` or `handoff` (see TOOL_TYPE_*)."""

GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
"""Chat history sent to the model (JSON). Only with content capture on."""

GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
"""Messages the model returned (JSON). Only with content capture on."""

GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
"""System prompt of the round. Only with content capture on."""

GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
"""Arguments of a tool call (for delegations: the task). Only with content capture on."""

GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
"""Result of a tool call. Only with content capture on."""

ERROR_TYPE: Final = "error.type"
"""Class of error that ended a span with status ERROR (`timeout`, `model_error`, ...)."""

TOOL_TYPE_FUNCTION: Final = "function"
"""`gen_ai.tool.type` of a plain function tool."""

TOOL_TYPE_DELEGATE: Final = "delegate"
"""`gen_ai.tool.type` of a `delegate.*` tool (a subagent run as a tool call)."""

TOOL_TYPE_HANDOFF: Final = "handoff"
"""`gen_ai.tool.type` of a `handoff.*` tool (a transfer of the conversation)."""

# --------------------------------------------------------------------------------------------
# Accounting: the one rule (each token and cent recorded once per aggregation key)
# --------------------------------------------------------------------------------------------

JANUX_ROUND_COST: Final = "janux.round.cost"
"""USD cost of one `chat` round; absent when the agent has no price."""

JANUX_TURN_INPUT_TOKENS: Final = "janux.turn.input_tokens"
"""Input tokens of this agent loop's OWN rounds (never its delegations)."""

JANUX_TURN_OUTPUT_TOKENS: Final = "janux.turn.output_tokens"
"""Output tokens of this agent loop's OWN rounds (never its delegations)."""

JANUX_TURN_COST: Final = "janux.turn.cost"
"""USD cost of this loop's own priced rounds; absent when no round of the loop was priced."""

JANUX_TURN_UNPRICED_TOKENS: Final = "janux.turn.unpriced_tokens"
"""Tokens of this loop's own rounds that had no price (unknown is never zero)."""

JANUX_TURN_ROUNDS: Final = "janux.turn.rounds"
"""Number of model rounds this loop made."""

JANUX_BILL_INPUT_TOKENS: Final = "janux.bill.input_tokens"
"""Root span only: input tokens of the whole turn (parent rounds plus every delegation)."""

JANUX_BILL_OUTPUT_TOKENS: Final = "janux.bill.output_tokens"
"""Root span only: output tokens of the whole turn."""

JANUX_BILL_COST: Final = "janux.bill.cost"
"""Root span only: USD cost of the whole turn, each round priced by its own agent's cost."""

JANUX_BILL_UNPRICED_TOKENS: Final = "janux.bill.unpriced_tokens"
"""Root span only: tokens of the whole turn that had no price."""

TURN_USAGE_KEYS: Final = (
    JANUX_TURN_INPUT_TOKENS,
    JANUX_TURN_OUTPUT_TOKENS,
    JANUX_TURN_COST,
    JANUX_TURN_UNPRICED_TOKENS,
)
"""The per-loop accounting attributes, in input/output/cost/unpriced order."""

BILL_KEYS: Final = (
    JANUX_BILL_INPUT_TOKENS,
    JANUX_BILL_OUTPUT_TOKENS,
    JANUX_BILL_COST,
    JANUX_BILL_UNPRICED_TOKENS,
)
"""The whole-turn accounting attributes, in the same order as TURN_USAGE_KEYS."""

# --------------------------------------------------------------------------------------------
# Agent loops, delegation attempts and transfers
# --------------------------------------------------------------------------------------------

JANUX_AGENT_DEPTH: Final = "janux.agent.depth"
"""Delegation depth of an agent loop: 0 for the turn, n for a subagent n levels down."""

JANUX_HANDOFF_ATTEMPT: Final = "janux.handoff.attempt"
"""On a delegation attempt span: the attempt number, 1..n."""

JANUX_STOP_REASON: Final = "janux.stop_reason"
"""On an agent span: the budget line that cut the loop (see STOP_*)."""

JANUX_HANDOFF_TO: Final = "janux.handoff.to"
"""On the turn span after a transfer: the agent that took the conversation over."""

JANUX_HANDOFF_FROM: Final = "janux.handoff.from"
"""On the turn span after a transfer: the agent that handed the conversation off first (the turn's
first holder)."""

JANUX_HANDOFF_PATH: Final = "janux.handoff.path"
"""On the turn span after a transfer (string[]): every agent that held the conversation in the
turn, in order (`["triage", "billing", "refunds"]` for a chain of two transfers)."""

JANUX_BUDGET_MAX_TURNS: Final = "janux.budget.max_turns"
"""On a delegation attempt span: the subagent's turn limit (for the budget-burn view)."""

JANUX_BUDGET_MAX_TOKENS: Final = "janux.budget.max_tokens"
"""On a delegation attempt span: the subagent's token limit, when it has one."""

JANUX_BUDGET_MAX_MS: Final = "janux.budget.max_ms"
"""On a delegation attempt span: the delegation's wall-clock limit in ms, when it has one."""

JANUX_AGENT_DEFINITIONS: Final = "janux.agent.definitions"
"""On the turn span, only with content capture on: every agent reachable from the entry agent as JSON
(budgets, prices, policy, rate limit, tool filter, tool names; no prompt text), what `janux replay`
rebuilds the run from."""

# --------------------------------------------------------------------------------------------
# HANDOFF_START / HANDOFF_END events (on the execute_tool span of delegate.* / handoff.* tools)
# --------------------------------------------------------------------------------------------

EVENT_HANDOFF_START: Final = "HANDOFF_START"
"""Span event opening a delegation or transfer; always followed by EVENT_HANDOFF_END."""

EVENT_HANDOFF_END: Final = "HANDOFF_END"
"""Span event closing a delegation or transfer, on every outcome."""

JANUX_HANDOFF_ID: Final = "janux.handoff.id"
"""Unique id of one delegation (shared by its events and its attempt spans)."""

JANUX_HANDOFF_CALL_ID: Final = "janux.handoff.call_id"
"""The model's tool-call id that started the delegation."""

JANUX_HANDOFF_KIND: Final = "janux.handoff.kind"
"""`delegate` or `transfer` (see KIND_*)."""

JANUX_HANDOFF_TOOL: Final = "janux.handoff.tool"
"""Tool name of the delegation (`delegate.researcher`)."""

JANUX_HANDOFF_TARGET: Final = "janux.handoff.target"
"""Subagent or transfer target name. Also set on the execute_tool span."""

JANUX_HANDOFF_STATUS: Final = "janux.handoff.status"
"""START: `starting`; END: a final status (see STATUS_*). The final one is also a tool-span attribute."""

JANUX_HANDOFF_DEPTH: Final = "janux.handoff.depth"
"""Depth the delegated agent runs at (caller depth + 1)."""

JANUX_HANDOFF_SESSION_MODE: Final = "janux.handoff.session_mode"
"""`new_session` or `reuse_session` (see SESSION_*)."""

JANUX_HANDOFF_ATTEMPTS: Final = "janux.handoff.attempts"
"""END: how many attempts ran. Also set on the execute_tool span."""

JANUX_HANDOFF_DURATION_MS: Final = "janux.handoff.duration_ms"
"""END: wall-clock duration of the whole delegation in ms."""

JANUX_HANDOFF_ERROR: Final = "janux.handoff.error"
"""END: human-readable error when the delegation failed or was denied. Also on the tool span."""

JANUX_HANDOFF_DENY_REASON: Final = "janux.handoff.deny_reason"
"""END: the rule that denied the delegation (see DENY_*). Also on the tool span."""

JANUX_HANDOFF_STOP_REASON: Final = "janux.handoff.stop_reason"
"""END: the budget line that cut the delegation (see STOP_*). Also on the tool span."""

JANUX_HANDOFF_OUTPUT: Final = "janux.handoff.output"
"""END: the delegation's output text, only with content capture on, truncated."""

KIND_DELEGATE: Final = "delegate"
"""`janux.handoff.kind` of a subagent run as a tool call."""

KIND_TRANSFER: Final = "transfer"
"""`janux.handoff.kind` of a conversation handed over to a specialist."""

STATUS_STARTING: Final = "starting"
"""`janux.handoff.status` on HANDOFF_START."""

STATUS_COMPLETED: Final = "completed"
"""Final status: the delegation answered."""

STATUS_FAILED: Final = "failed"
"""Final status: every attempt failed and no fallback served it."""

STATUS_FALLBACK: Final = "fallback"
"""Final status: denied or failed, then served by the primary executor."""

STATUS_DENIED: Final = "denied"
"""Final status: a policy rule refused it; no attempt ran."""

STATUS_CUT: Final = "cut"
"""Final status: a budget line stopped the subagent."""

FINAL_STATUSES: Final = frozenset(
    {STATUS_COMPLETED, STATUS_FAILED, STATUS_FALLBACK, STATUS_DENIED, STATUS_CUT}
)
"""Every status a HANDOFF_END may carry."""

FAILING_STATUSES: Final = frozenset({STATUS_FAILED, STATUS_FALLBACK, STATUS_DENIED, STATUS_CUT})
"""Final statuses the Failures view lists."""

SESSION_NEW: Final = "new_session"
"""Session mode: fresh history for every delegation."""

SESSION_REUSE: Final = "reuse_session"
"""Session mode: memory accumulates per delegation tool."""

DENY_ALLOWED_TOOLS: Final = "allowed_tools"
"""Denied: the tool is not on the policy's allow-list."""

DENY_DENIED_TOOLS: Final = "denied_tools"
"""Denied: the tool is on the policy's deny-list."""

DENY_MAX_DEPTH: Final = "max_depth"
"""Denied: the delegation would run deeper than the policy's max_depth."""

DENY_MAX_TRANSFERS: Final = "max_transfers"
"""Denied: the turn already made as many transfers as the policy's max_transfers allows."""

DENY_TOOL_FORBIDDEN: Final = "tool_forbidden"
"""Denied: the tool is outside the caller's tool surface."""

DENY_RATE_LIMITED: Final = "rate_limited"
"""Denied: the caller's delegation rate limit is exhausted."""

DENY_GUARDRAIL: Final = "guardrail"
"""Denied: an input guardrail refused the delegated task."""

DENY_REASONS: Final = frozenset(
    {
        DENY_ALLOWED_TOOLS,
        DENY_DENIED_TOOLS,
        DENY_MAX_DEPTH,
        DENY_MAX_TRANSFERS,
        DENY_TOOL_FORBIDDEN,
        DENY_RATE_LIMITED,
        DENY_GUARDRAIL,
    }
)
"""Every value `janux.handoff.deny_reason` may take."""

STOP_MAX_TURNS: Final = "max_turns"
"""Budget cut: the subagent used all its model rounds."""

STOP_MAX_TOKENS: Final = "max_tokens"
"""Budget cut: the subagent's input + output tokens reached its limit."""

STOP_MAX_TIME: Final = "max_time"
"""Budget cut: the delegation's wall clock reached its limit."""

STOP_REASONS: Final = frozenset({STOP_MAX_TURNS, STOP_MAX_TOKENS, STOP_MAX_TIME})
"""Every value `janux.stop_reason` / `janux.handoff.stop_reason` may take."""

ERROR_TIMEOUT: Final = "timeout"
"""`error.type` of an attempt cancelled by the per-attempt timeout."""

ERROR_MODEL: Final = "model_error"
"""`error.type` of a round (and its loop) that failed in the model client."""

ERROR_TOOL: Final = "tool_error"
"""`error.type` of a tool call that raised."""

# --------------------------------------------------------------------------------------------
# Content capture (the GenAI instrumentation convention)
# --------------------------------------------------------------------------------------------

CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Environment variable that switches content capture on (`true`)."""

CAPTURE_MAX_LENGTH_ENV: Final = "JANUX_CAPTURE_MAX_LENGTH"
"""Environment variable that sets the truncation length of captured values (characters)."""

INSTRUMENTATION_SCOPE: Final = "janux"
"""Name of the tracer and meter the runtime uses."""

# --------------------------------------------------------------------------------------------
# OpenTelemetry resource attributes read by the trace store
# --------------------------------------------------------------------------------------------

SERVICE_NAME: Final = "service.name"
"""Resource attribute naming the service; the store's `ServiceName` column."""

# --------------------------------------------------------------------------------------------
# Metrics (GenAI client metrics of the semantic conventions, plus the handoff counter)
# --------------------------------------------------------------------------------------------

METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
"""Histogram of tokens per model round, split by `gen_ai.token.type` (unit `{token}`)."""

METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
"""Histogram of model-round durations in seconds (unit `s`)."""

METRIC_HANDOFFS: Final = "janux.handoffs"
"""Counter of delegations and transfers, by final `janux.handoff.status` and `janux.handoff.kind`."""

GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
"""Metric attribute: `input` or `output` (see TOKEN_TYPE_*)."""

TOKEN_TYPE_INPUT: Final = "input"
"""`gen_ai.token.type` of prompt tokens."""

TOKEN_TYPE_OUTPUT: Final = "output"
"""`gen_ai.token.type` of completion tokens."""

TOKEN_USAGE_BUCKETS: Final = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)
"""Explicit bucket boundaries the semantic conventions advise for `gen_ai.client.token.usage`."""

OPERATION_DURATION_BUCKETS: Final = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
"""Explicit bucket boundaries the semantic conventions advise for `gen_ai.client.operation.duration`."""

ERROR_CANCELLED: Final = "cancelled"
"""`error.type` of a span whose work was cancelled from outside for no recorded reason."""

ERROR_INVALID_ARGUMENTS: Final = "invalid_arguments"
"""`error.type` of a tool call whose arguments were malformed (the model reads the error)."""

ERROR_TOOL_FORBIDDEN: Final = "tool_forbidden"
"""`error.type` of a tool call outside the caller's tool surface (never executed)."""

ERROR_UNKNOWN_TOOL: Final = "unknown_tool"
"""`error.type` of a call to a tool name the agent does not have."""

# ============================================================================================
# Read side: names Janux READS from other instrumentations (never written by the runtime).
# Each convention's mapping lives in one module of `janux.tracing.analysis.readers`; docs/trace-contract.md
# lists them in its "Traces from other runtimes" table.
# ============================================================================================

# --- OpenTelemetry GenAI semantic conventions: more operations and older names --------------

OP_TEXT_COMPLETION: Final = "text_completion"
"""`gen_ai.operation.name` of a completion-style inference call."""

OP_GENERATE_CONTENT: Final = "generate_content"
"""`gen_ai.operation.name` of a (Gemini-style) multimodal inference call."""

OP_EMBEDDINGS: Final = "embeddings"
"""`gen_ai.operation.name` of an embeddings call (inference: its input tokens are billed)."""

OP_CREATE_AGENT: Final = "create_agent"
"""`gen_ai.operation.name` of an agent being created (not run): no loop of its own."""

OP_EXECUTE_TASK: Final = "execute_task"
"""`gen_ai.operation.name` OpenLLMetry's LangChain instrumentation gives one task of a workflow (a
graph node, a runnable; `traceloop.span.kind` task): plain structure."""

OP_AGENT_HANDOFF: Final = "agent_handoff"
"""`gen_ai.operation.name` the OTel OpenAI Agents bridge gives a handoff span (a transfer)."""

OP_HANDOFF: Final = "handoff"
"""`gen_ai.operation.name` OpenLLMetry's OpenAI Agents instrumentation gives a handoff span (a transfer,
often without its target: then the next agent run that starts after it)."""

WORKFLOW_EXECUTOR_ID: Final = "executor.id"
"""The executor a workflow span runs (Microsoft Agent Framework's `executor.process`): the agent runs
below it are that executor's."""

WORKFLOW_MESSAGE_SOURCE_ID: Final = "message.source_id"
"""Executor a workflow message came from (Agent Framework's `edge_group.process`): a workflow edge's
source."""

WORKFLOW_MESSAGE_TARGET_ID: Final = "message.target_id"
"""Executor a workflow message went to: a workflow edge's target."""

WORKFLOW_MESSAGE_DESTINATION: Final = "message.destination_executor_id"
"""Executor a message is sent to (Agent Framework's `message.send`), from the executor whose span
holds the sending span: a workflow edge."""

OP_UNKNOWN: Final = "unknown"
"""`gen_ai.operation.name` the OTel OpenAI Agents bridge gives the SDK's task and turn spans."""

OP_INVOKE_WORKFLOW: Final = "invoke_workflow"
"""`gen_ai.operation.name` of Google ADK's run span around the root agent: the turn, not an agent."""

OP_INVOKE_SWARM: Final = "invoke_swarm"
"""`gen_ai.operation.name` of a Strands swarm's span around its agents: the turn, not an agent."""

OP_INVOKE_GRAPH: Final = "invoke_graph"
"""`gen_ai.operation.name` of a Strands graph's span around its nodes: the turn, not an agent."""

STRANDS_GRAPH_INPUTS: Final = "Inputs from previous nodes:"
"""What a Strands graph writes into a node's input before the results of the nodes it depends on,
each under `From NODE:` (recorded content: the node agent's user message). The graph's edges are in
no span attribute; this is the only place they show."""
STRANDS_CONTENT_KEYS: Final = ("content", "gen_ai.input.messages")
"""Where Strands records an agent's input: the `gen_ai.user.message` event's `content` (older
conventions), else `gen_ai.input.messages` (on an event or the span, latest conventions)."""

OP_EXECUTE_EVENT_LOOP_CYCLE: Final = "execute_event_loop_cycle"
"""`gen_ai.operation.name` of one cycle of a Strands agent's loop: a round, inside its agent's loop."""

TRANSFER_TOOL_NAMES: Final = frozenset({"transfer_to_agent", "handoff_to_agent"})
"""Tools whose call hands the conversation to another agent (Google ADK, Strands swarm): a
transfer, whose target is the next agent that runs (their spans do not name it)."""

TRANSFER_TOOL_PREFIX: Final = "transfer_to_"
"""AutoGen AgentChat's handoff tools are named `transfer_to_{agent}` (elsewhere the name proves
nothing: a delegation tool may be called so; `transfer_to_agent` is Google ADK's tool)."""

AUTOGEN_SYSTEM: Final = "autogen"
"""`gen_ai.system` AutoGen puts on its spans."""

ADK_TRANSFER_TOOL_TYPE: Final = "TransferToAgentTool"
"""`gen_ai.tool.type` Google ADK gives its `transfer_to_agent` tool."""

READ_INFERENCE_OPERATIONS: Final = frozenset(
    {OP_CHAT, OP_TEXT_COMPLETION, OP_GENERATE_CONTENT, OP_EMBEDDINGS}
)
"""Operations read as model inference (`INFERENCE_OPERATIONS` plus embeddings)."""

GEN_AI_USAGE_PROMPT_TOKENS: Final = "gen_ai.usage.prompt_tokens"
"""Older name of `gen_ai.usage.input_tokens` (OpenLLMetry and semconv before 1.27)."""

GEN_AI_USAGE_COMPLETION_TOKENS: Final = "gen_ai.usage.completion_tokens"
"""Older name of `gen_ai.usage.output_tokens`."""

GEN_AI_USAGE_TOTAL_TOKENS: Final = "gen_ai.usage.total_tokens"
"""Total tokens some libraries add; never read as input or output (the split is unknown)."""

GEN_AI_AGGREGATED_USAGE_PREFIX: Final = "gen_ai.aggregated_usage."
"""Pydantic AI's accumulated usage on agent run spans: never added to the rounds."""

GEN_AI_HANDOFF_FROM_AGENT: Final = "gen_ai.handoff.from_agent"
"""On an `agent_handoff` span: the agent that handed the conversation off."""

GEN_AI_HANDOFF_TO_AGENT: Final = "gen_ai.handoff.to_agent"
"""On an `agent_handoff` span: the agent that took the conversation over."""

# --- OpenInference (Arize Phoenix) ---------------------------------------------------------

OI_SPAN_KIND: Final = "openinference.span.kind"
"""OpenInference span kind: AGENT, LLM, TOOL, CHAIN, RETRIEVER, EMBEDDING, GUARDRAIL, ..."""

OI_KIND_AGENT: Final = "AGENT"
"""An agent loop."""
OI_KIND_LLM: Final = "LLM"
"""One model call (inference)."""
OI_KIND_EMBEDDING: Final = "EMBEDDING"
"""One embeddings call (inference)."""
OI_KIND_TOOL: Final = "TOOL"
"""A tool call (a handoff too, named `handoff to {agent}` by the OpenAI Agents bridge)."""
OI_STRUCTURAL_KINDS: Final = frozenset(
    {"CHAIN", "RETRIEVER", "GUARDRAIL", "RERANKER", "EVALUATOR", "PROMPT"}
)
"""Kinds read as plain structure: never a loop, never usage (CHAIN may carry cumulative counts)."""

OI_KIND_CHAIN: Final = "CHAIN"
"""A chain (LangGraph: a graph run; its nodes are its children)."""
OI_METADATA: Final = "metadata"
"""OpenInference metadata (a JSON object as text)."""
LANGGRAPH_NODE_KEY: Final = "langgraph_node"
"""The metadata key LangGraph sets on the spans of a graph node (the node's name)."""
LANGGRAPH_HANDOFF_KEY: Final = "__handoff_destination"
"""The metadata key langgraph-swarm and langgraph-supervisor handoff tools carry: the agent the
tool's `Command(goto=...)` hands the conversation to."""
LANGGRAPH_PARENT_GRAPH: Final = "__parent__"
"""`graph` of a LangGraph `Command` sent to the enclosing graph (a handoff between its agents)."""
LANGGRAPH_DEFAULT_NAME: Final = "LangGraph"
"""The name LangGraph gives a graph built without one: names no agent."""
LLAMA_INDEX_PREPARE_SUFFIX: Final = "._prepare_chat_with_tools"
"""LlamaIndex's instrumentation marks a model's tool-preparation step as an LLM span (no call, no
usage): read as plain structure, never as a model call of unknown usage."""
LLAMA_INDEX_AGENT_STEPS: Final = (".setup_agent", ".run_agent_step")
"""Name endings of the LlamaIndex agent-workflow step spans (CHAIN) whose input names the agent
that runs them: their event's repr ends in `current_agent_name='NAME'`. The steps of one run are
sibling spans below the workflow's run span, whatever agent runs them."""
LLAMA_INDEX_AGENT_FIELD: Final = "current_agent_name='"
"""The field of a LlamaIndex step's input event that names the running agent."""
LLAMA_INDEX_HANDOFF_TOOL: Final = "handoff"
"""The tool an `AgentWorkflow` gives its agents to hand the conversation over (argument
`to_agent`): a transfer."""
LLAMA_INDEX_HANDOFF_ARG: Final = "to_agent"
"""The argument of LlamaIndex's handoff tool naming the agent taking over."""
SMOLAGENTS_RUN_SUFFIX: Final = ".run"
"""smolagents' AGENT spans are named `{agent name}.run` (`{class}.run` when the agent has no name)."""
SMOLAGENTS_AGENT_CLASSES: Final = frozenset({"MultiStepAgent", "CodeAgent", "ToolCallingAgent"})
"""smolagents' agent classes: a `{class}.run` span names no agent."""
SMOLAGENTS_TOOL_ERROR: Final = "AgentToolExecutionError"
"""The exception a smolagents step records when a managed agent it called raised (the managed
agent's own AGENT span is then never exported)."""

LLM_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
"""OpenInference input tokens of one LLM span."""
LLM_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
"""OpenInference output tokens of one LLM span."""
LLM_TOKEN_COUNT_TOTAL: Final = "llm.token_count.total"
"""OpenInference total tokens; never read as input or output (the split is unknown)."""
LLM_MODEL_NAME: Final = "llm.model_name"
"""OpenInference model name."""
LLM_PROVIDER: Final = "llm.provider"
"""OpenInference provider (`openai`, ...)."""
LLM_SYSTEM: Final = "llm.system"
"""OpenInference model family / system (read when `llm.provider` is missing)."""
OI_TOOL_NAME: Final = "tool.name"
"""OpenInference tool name."""
OI_AGENT_NAME: Final = "agent.name"
"""OpenInference agent name."""
OI_GRAPH_NODE_ID: Final = "graph.node.id"
"""OpenInference graph node (the OpenAI Agents bridge: the agent name)."""
OI_GRAPH_NODE_PARENT_ID: Final = "graph.node.parent_id"
"""OpenInference parent graph node (the OpenAI Agents bridge: the agent that handed off)."""
OI_INPUT_VALUE: Final = "input.value"
"""OpenInference input (a handoff span: the agent handing off)."""
OI_OUTPUT_VALUE: Final = "output.value"
"""OpenInference output (a handoff span: the agent taking over)."""
OI_HANDOFF_PREFIX: Final = "handoff to "
"""Span name prefix of a handoff TOOL span from the OpenInference OpenAI Agents bridge."""

# --- OpenLLMetry (Traceloop) ----------------------------------------------------------------

TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"
"""OpenLLMetry span kind: workflow, task, agent, tool."""
TRACELOOP_ENTITY_NAME: Final = "traceloop.entity.name"
"""OpenLLMetry entity name (the agent or tool name)."""
LLM_REQUEST_TYPE: Final = "llm.request.type"
"""OpenLLMetry inference type: chat, completion, embedding, rerank."""
LLM_USAGE_TOTAL_TOKENS: Final = "llm.usage.total_tokens"
"""OpenLLMetry total tokens; never read as input or output."""

# --- Exceptions recorded as span events (OTel semantic conventions) --------------------------

EVENT_EXCEPTION: Final = "exception"
"""Span event recording an exception."""
EXCEPTION_TYPE: Final = "exception.type"
"""Exception class name."""
EXCEPTION_MESSAGE: Final = "exception.message"
"""Exception message."""
EXCEPTION_STACKTRACE: Final = "exception.stacktrace"
"""Exception stack trace."""

# --------------------------------------------------------------------------------------------
# Integrations: traces written by janux.integrations for other agent frameworks
# --------------------------------------------------------------------------------------------

JANUX_ROUND_COST_ESTIMATE: Final = "janux.round.cost_estimate"
"""USD estimate of one `chat` round whose agent has no price, from a maintained price table.

Never part of `janux.round.cost`: the round's tokens still count as unpriced, so the exact
accounting is untouched and an estimate can never pass for a recorded price."""

JANUX_TURN_COST_ESTIMATE: Final = "janux.turn.cost_estimate"
"""Sum of `janux.round.cost_estimate` over this loop's own rounds; absent when none was estimated."""

JANUX_BILL_COST_ESTIMATE: Final = "janux.bill.cost_estimate"
"""Root span only: sum of `janux.round.cost_estimate` over the whole turn; absent when none."""

JANUX_PRICE_SOURCE: Final = "janux.price.source"
"""On a `chat` span with an estimate: the price table it came from and its version (`genai-prices 0.2.3`)."""

JANUX_DENY_REASON: Final = "janux.deny_reason"
"""On an agent span: the rule that refused the loop's input (see DENY_*), e.g. `guardrail` when the
framework's input guardrail tripped inside the loop. The loop also ends with status ERROR."""

ESTIMATE_KEYS: Final = (JANUX_ROUND_COST_ESTIMATE, JANUX_TURN_COST_ESTIMATE, JANUX_BILL_COST_ESTIMATE)
"""The estimated-cost attributes (doubles), kept apart from the recorded `*.cost` ones."""
