"""Built-in demo scenarios: one scripted help-desk turn per scenario, each its own trace and thread.

    outcomes = await run_scenarios(tracer_provider=provider, latency_scale=0)

They cover what the dashboard must show: a plain answer, delegation, parallel delegations, retry,
timeout then fallback, a denial by each rule, a budget cut by each line, a transfer, nested
delegation, an unpriced subagent, a failed delegation and dispatch-and-synthesize. Models are
scripted (no network); delays are a few milliseconds times `latency_scale` (0 = as fast as possible).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from janux.demo import cast
from janux.demo.cast import Stage
from janux.runtime.definitions import HandoffPolicy, OnFailure, RateLimit, Subagent, ToolFilter
from janux.runtime.dispatch import dispatch_and_synthesize
from janux.runtime.model import ToolCall
from janux.runtime.result import RunResult
from janux.runtime.testing import ScriptedModel, call_tools, delegate, fail, reply, tool_call, transfer
from janux.runtime.tools import make_tool


@dataclass(frozen=True, slots=True)
class ScenarioOutcome:
    """How one scenario ended."""

    name: str
    """Scenario name (one of SCENARIO_NAMES)."""
    result: RunResult | None
    """The turn's result, or `None` when it raised."""
    error: str | None
    """`ExceptionClass: message` when the turn raised."""
    trace_id: str | None
    """Hex trace id of the scenario's turn (None when tracing is off or the turn raised early)."""


@dataclass(frozen=True, slots=True)
class _Run:
    stage: Stage
    thread_id: str
    options: dict[str, Any]

    async def turn(self, agent: Any, text: str) -> RunResult:
        result: RunResult = await agent.run(text, thread_id=self.thread_id, **self.options)
        return result


Scenario = Callable[[_Run], Awaitable[RunResult]]

ASK = "My annual plan was charged twice this month. Can I get a refund?"


def _ask_then_answer(
    s: Stage,
    model_name: str,
    calls: ToolCall | Sequence[ToolCall],
    asked: tuple[int, int],
    answer: str,
    answered: tuple[int, int],
    delays_ms: tuple[float, float] = (8, 6),
) -> ScriptedModel:
    """The shape of most scripted loops: one round of tool calls, then the final answer.

    `asked` and `answered` are the (input, output) tokens of the two rounds; `delays_ms` their latency.
    """
    return s.model(
        model_name,
        [
            call_tools(
                *([calls] if isinstance(calls, ToolCall) else calls),
                input_tokens=asked[0],
                output_tokens=asked[1],
                delay=s.ms(delays_ms[0]),
            ),
            reply(answer, input_tokens=answered[0], output_tokens=answered[1], delay=s.ms(delays_ms[1])),
        ],
    )


async def plain_answer(run: _Run) -> RunResult:
    """The front desk answers on its own: one round."""
    s = run.stage
    model = s.model(
        "gpt-4o-mini",
        [reply("Our opening hours are 9:00-18:00 CET.", input_tokens=310, output_tokens=14, delay=s.ms(9))],
    )
    return await run.turn(cast.triage(model), "When are you open?")


def _research_model(s: Stage, answer: str = "Annual plans are refundable within 30 days.") -> Any:
    search = tool_call("search_docs", {"query": "refund annual plan"})
    return _ask_then_answer(s, "gpt-4o", search, (520, 22), answer, (880, 41), delays_ms=(11, 14))


def _triage_asking_research(
    s: Stage, asked: tuple[int, int], answer: str, answered: tuple[int, int]
) -> ScriptedModel:
    """Triage delegates the annual-plan refund rules to the researcher, then answers."""
    task = delegate("researcher", "Refund rules for annual plans")
    return _ask_then_answer(s, "gpt-4o-mini", task, asked, answer, answered)


async def delegation(run: _Run) -> RunResult:
    """Triage delegates research, then answers with the result (3 rounds + a tool, 1 delegation)."""
    s = run.stage
    model = _ask_then_answer(
        s,
        "gpt-4o-mini",
        delegate("researcher", "Refund rules for annual plans", context="customer charged twice"),
        (402, 35),
        "Yes: annual plans are refundable within 30 days. I've flagged the double charge.",
        (690, 28),
        delays_ms=(8, 7),
    )
    researcher = cast.researcher(s, _research_model(s))
    return await run.turn(
        cast.triage(model, subagents=[Subagent(agent=researcher, max_turns=4, max_tokens=6000)]), ASK
    )


async def parallel_delegations(run: _Run) -> RunResult:
    """Two delegations in one round run concurrently (fork-join)."""
    s = run.stage
    model = _ask_then_answer(
        s,
        "gpt-4o-mini",
        [
            delegate("researcher", "Refund rules for annual plans"),
            delegate("writer", "Draft an apology for a double charge"),
        ],
        (415, 61),
        "Refund approved per policy; apology sent.",
        (930, 19),
        delays_ms=(8, 7),
    )
    researcher = cast.researcher(s, _research_model(s))
    writer = cast.writer(
        s,
        s.model(
            "gpt-4o-mini",
            [
                reply(
                    "We're sorry for the double charge...", input_tokens=240, output_tokens=66, delay=s.ms(16)
                )
            ],
        ),
    )
    subagents = [Subagent(agent=researcher, max_turns=4), Subagent(agent=writer, max_turns=2)]
    return await run.turn(cast.triage(model, subagents=subagents), ASK)


async def retry_then_success(run: _Run) -> RunResult:
    """The researcher's model fails once (503); the policy retries and attempt 2 answers."""
    s = run.stage
    model = _triage_asking_research(s, (398, 30), "Annual plans are refundable within 30 days.", (655, 15))
    research = s.model(
        "gpt-4o",
        [
            fail("upstream returned 503 Service Unavailable", status_code=503, delay=s.ms(5)),
            reply("Refundable within 30 days.", input_tokens=505, output_tokens=12, delay=s.ms(12)),
        ],
    )
    triage = cast.triage(
        model,
        subagents=[Subagent(agent=cast.researcher(s, research), max_turns=3)],
        policy=HandoffPolicy(max_retries=2),
    )
    return await run.turn(triage, ASK)


async def timeout_then_fallback(run: _Run) -> RunResult:
    """The researcher hangs; the attempt is cancelled at the timeout and the primary executor answers."""
    s = run.stage
    model = _triage_asking_research(
        s, (401, 30), "Per our cached policy, annual plans are refundable within 30 days.", (640, 21)
    )
    hanging = s.hanging_model("gpt-4o", [reply("(never delivered)", delay=5.0)])
    cached = make_tool(
        lambda task="", context="": "Cached policy: annual plans refundable within 30 days.",
        name="delegate.researcher",
        description="Cached answers.",
    )
    policy = HandoffPolicy(timeout_ms=s.deadline_ms(30), on_error=OnFailure.FALLBACK_TO_PRIMARY)
    triage = cast.triage(
        model,
        subagents=[Subagent(agent=cast.researcher(s, hanging), max_turns=3)],
        policy=policy,
        fallback_tools=[cached],
    )
    return await run.turn(triage, ASK)


async def failed_delegation(run: _Run) -> RunResult:
    """The researcher's model keeps failing; with on_error=FAIL the caller reads the error."""
    s = run.stage
    model = _triage_asking_research(
        s, (399, 30), "I couldn't reach our docs right now; a colleague will follow up.", (610, 20)
    )
    research = s.model(
        "gpt-4o", [fail("rate limit exceeded", error_type="rate_limit", status_code=429, delay=s.ms(4))]
    )
    triage = cast.triage(model, subagents=[Subagent(agent=cast.researcher(s, research), max_turns=3)])
    return await run.turn(triage, ASK)


def _denied_turn(s: Stage, target: str, task: str) -> Any:
    answer = "I can't do that from here, but a human agent will follow up."
    return _ask_then_answer(s, "gpt-4o-mini", delegate(target, task), (404, 27), answer, (560, 17))


async def _writer_denied(run: _Run, **triage_options: Any) -> RunResult:
    """Triage asks the writer for a draft under `triage_options` (a policy or filter) that refuse it."""
    s = run.stage
    writer = cast.writer(s, s.model("gpt-4o-mini", []))
    triage = cast.triage(
        _denied_turn(s, "writer", "Draft a reply"),
        subagents=[Subagent(agent=writer, max_turns=2)],
        **triage_options,
    )
    return await run.turn(triage, ASK)


async def denied_allowed_tools(run: _Run) -> RunResult:
    """The policy's allow-list only has the researcher; a writer delegation is denied."""
    return await _writer_denied(run, policy=HandoffPolicy(allowed_tools=["delegate.researcher"]))


async def denied_denied_tools(run: _Run) -> RunResult:
    """The policy's deny-list names the writer."""
    return await _writer_denied(run, policy=HandoffPolicy(denied_tools=["delegate.writer"]))


def _research_asking_fact_check(s: Stage, answer: str, answered: tuple[int, int]) -> ScriptedModel:
    """The researcher asks the fact checker about the refund window, then answers."""
    check = delegate("fact_checker", "Is the 30-day refund window current?")
    return _ask_then_answer(s, "gpt-4o", check, (610, 25), answer, answered, delays_ms=(10, 9))


async def denied_max_depth(run: _Run) -> RunResult:
    """triage -> researcher -> fact_checker: depth 2 exceeds the researcher's max_depth of 1."""
    s = run.stage
    checker = cast.fact_checker(s, s.model("llama-3.1-8b-instruct", []))
    research = _research_asking_fact_check(s, "Refundable within 30 days (unverified).", (720, 13))
    researcher = cast.researcher(s, research, subagents=[Subagent(agent=checker, max_turns=2)])
    model = _denied_turn(s, "researcher", "Refund rules for annual plans")
    return await run.turn(cast.triage(model, subagents=[Subagent(agent=researcher, max_turns=4)]), ASK)


async def denied_tool_forbidden(run: _Run) -> RunResult:
    """The writer is outside triage's tool surface; the model calls it anyway and is refused."""
    return await _writer_denied(run, tool_filter=ToolFilter(exclude=["delegate.writer"]))


async def denied_rate_limited(run: _Run) -> RunResult:
    """One delegation per minute: the second research request is rate limited."""
    s = run.stage
    model = s.model(
        "gpt-4o-mini",
        [
            call_tools(
                delegate("researcher", "Refund rules for annual plans"),
                input_tokens=400,
                output_tokens=28,
                delay=s.ms(8),
            ),
            call_tools(
                delegate("researcher", "Refund rules for monthly plans"),
                input_tokens=700,
                output_tokens=28,
                delay=s.ms(8),
            ),
            reply(
                "Annual plans are refundable within 30 days.",
                input_tokens=820,
                output_tokens=15,
                delay=s.ms(6),
            ),
        ],
    )
    researcher = cast.researcher(s, _research_model(s))
    triage = cast.triage(
        model,
        subagents=[Subagent(agent=researcher, max_turns=4)],
        rate_limit=RateLimit(max_calls=1, per_seconds=60),
    )
    return await run.turn(triage, ASK)


def _no_card_numbers(text: str) -> str | None:
    digits = sum(ch.isdigit() for ch in text)
    return "task contains what looks like a card number" if digits >= 12 else None


async def denied_guardrail(run: _Run) -> RunResult:
    """Triage's input guardrail refuses a task carrying a card number before any subagent round."""
    s = run.stage
    researcher = cast.researcher(s, s.model("gpt-4o", []))
    model = _denied_turn(s, "researcher", "Find charges on card 4111 1111 1111 1111")
    triage = cast.triage(
        model, subagents=[Subagent(agent=researcher, max_turns=3)], input_guardrails=[_no_card_numbers]
    )
    return await run.turn(triage, "Why was my card charged twice? The charges are on my statement.")


def _cut_turn(s: Stage) -> Any:
    task = delegate("researcher", "Every refund rule, with sources")
    answer = "Here is what I could find so far: refunds within 30 days."
    return _ask_then_answer(s, "gpt-4o-mini", task, (405, 29), answer, (600, 18))


def _searching(s: Stage, rounds: int, input_tokens: int) -> Any:
    step = call_tools(
        tool_call("search_docs", {"query": "refund"}),
        input_tokens=input_tokens,
        output_tokens=24,
        delay=s.ms(9),
    )
    return s.model("gpt-4o", [step] * rounds)


async def cut_max_turns(run: _Run) -> RunResult:
    """The researcher keeps searching; its 2-round budget cuts it."""
    s = run.stage
    researcher = cast.researcher(s, _searching(s, 2, 500))
    return await run.turn(cast.triage(_cut_turn(s), subagents=[Subagent(agent=researcher, max_turns=2)]), ASK)


async def cut_max_tokens(run: _Run) -> RunResult:
    """One research round spends 1,624 tokens against a 1,500-token budget."""
    s = run.stage
    researcher = cast.researcher(s, _searching(s, 1, 1600))
    subagent = Subagent(agent=researcher, max_turns=5, max_tokens=1500)
    return await run.turn(cast.triage(_cut_turn(s), subagents=[subagent]), ASK)


async def cut_max_time(run: _Run) -> RunResult:
    """The research model is slow; the delegation's wall-clock budget cancels it."""
    s = run.stage
    researcher = cast.researcher(s, s.hanging_model("gpt-4o", [reply("(too late)", delay=5.0)]))
    subagent = Subagent(agent=researcher, max_turns=3, max_ms=s.deadline_ms(30))
    return await run.turn(cast.triage(_cut_turn(s), subagents=[subagent]), ASK)


async def transfer_to_specialist(run: _Run) -> RunResult:
    """Triage hands the conversation to billing, which looks up the invoice and answers."""
    s = run.stage
    model = s.model(
        "gpt-4o-mini",
        [
            call_tools(
                transfer("billing", "double charge on an annual plan"),
                input_tokens=380,
                output_tokens=22,
                delay=s.ms(8),
            )
        ],
    )
    billing_model = _ask_then_answer(
        s,
        "gpt-4.1",
        tool_call("lookup_invoice", {"query": "INV-2291"}),
        (450, 20),
        "I found the duplicate charge on INV-2291 and refunded $49.00.",
        (560, 24),
        delays_ms=(10, 9),
    )
    return await run.turn(cast.triage(model, handoffs=[cast.billing(s, billing_model)]), ASK)


async def denied_max_transfers(run: _Run) -> RunResult:
    """Triage (max_transfers=1) transfers to billing; billing's onward transfer to refunds is denied."""
    s = run.stage
    model = s.model(
        "gpt-4o-mini",
        [call_tools(transfer("billing", "double charge"), input_tokens=380, output_tokens=22, delay=s.ms(8))],
    )
    billing_model = _ask_then_answer(
        s,
        "gpt-4.1",
        transfer("refunds", "refund INV-2291"),
        (450, 18),
        "I can't pass this on; a refund for INV-2291 will follow from our team.",
        (540, 21),
        delays_ms=(10, 9),
    )
    refunds = cast.refunds(s.model("gpt-4.1", []))
    billing = cast.billing(s, billing_model, handoffs=[refunds])
    triage = cast.triage(model, handoffs=[billing], policy=HandoffPolicy(max_transfers=1))
    return await run.turn(triage, ASK)


async def nested_delegation(run: _Run) -> RunResult:
    """triage -> researcher -> fact_checker at depth 2: triage's and the researcher's max_depth=2 allow it."""
    s = run.stage
    checker = cast.fact_checker(
        s,
        s.model(
            "llama-3.1-8b-instruct",
            [reply("confirmed: 30 days since 2024-01", input_tokens=210, output_tokens=11, delay=s.ms(12))],
        ),
    )
    research = _research_asking_fact_check(
        s, "Annual plans: refundable within 30 days (confirmed).", (700, 16)
    )
    researcher = cast.researcher(
        s, research, subagents=[Subagent(agent=checker, max_turns=2)], policy=HandoffPolicy(max_depth=2)
    )
    model = _cut_turn(s)
    # The entry agent caps the whole turn: a subagent can tighten its caller's depth limit, never loosen it.
    triage = cast.triage(
        model, subagents=[Subagent(agent=researcher, max_turns=4)], policy=HandoffPolicy(max_depth=2)
    )
    return await run.turn(triage, ASK)


async def unpriced_subagent(run: _Run) -> RunResult:
    """The fact checker has no price: its tokens are unpriced, never billed at triage's rates."""
    s = run.stage
    checker = cast.fact_checker(
        s,
        s.model(
            "llama-3.1-8b-instruct", [reply("confirmed", input_tokens=190, output_tokens=4, delay=s.ms(12))]
        ),
    )
    model = _ask_then_answer(
        s,
        "gpt-4o-mini",
        delegate("fact_checker", "Are annual plans refundable within 30 days?"),
        (395, 26),
        "Yes, annual plans are refundable within 30 days.",
        (520, 13),
    )
    return await run.turn(cast.triage(model, subagents=[Subagent(agent=checker, max_turns=2)]), ASK)


async def dispatch_synthesize(run: _Run) -> RunResult:
    """Three research tasks fanned out in parallel, then one synthesis round."""
    s = run.stage
    tasks = [
        "Refund rules for annual plans",
        "Refund rules for monthly plans",
        "How duplicate charges are handled",
    ]
    research = s.model(
        "gpt-4o",
        [
            reply(
                f"Finding {i}: see policy section {i}.",
                input_tokens=300 + 20 * i,
                output_tokens=18,
                delay=s.ms(10 + 3 * i),
            )
            for i in range(1, 4)
        ],
    )
    researcher = cast.researcher(s, research)
    model = s.model(
        "gpt-4o-mini",
        [
            reply(
                "Summary: refunds within 30 days; duplicates refunded automatically.",
                input_tokens=980,
                output_tokens=30,
                delay=s.ms(9),
            )
        ],
    )
    synthesizer = cast.triage(model, subagents=[Subagent(agent=researcher, max_turns=2)])
    return await dispatch_and_synthesize(synthesizer, tasks, thread_id=run.thread_id, **run.options)


_SCENARIOS: dict[str, Scenario] = {
    "plain_answer": plain_answer,
    "delegation": delegation,
    "parallel_delegations": parallel_delegations,
    "retry_then_success": retry_then_success,
    "timeout_then_fallback": timeout_then_fallback,
    "failed_delegation": failed_delegation,
    "denied_allowed_tools": denied_allowed_tools,
    "denied_denied_tools": denied_denied_tools,
    "denied_max_depth": denied_max_depth,
    "denied_tool_forbidden": denied_tool_forbidden,
    "denied_rate_limited": denied_rate_limited,
    "denied_guardrail": denied_guardrail,
    "denied_max_transfers": denied_max_transfers,
    "cut_max_turns": cut_max_turns,
    "cut_max_tokens": cut_max_tokens,
    "cut_max_time": cut_max_time,
    "transfer_to_specialist": transfer_to_specialist,
    "nested_delegation": nested_delegation,
    "unpriced_subagent": unpriced_subagent,
    "dispatch_synthesize": dispatch_synthesize,
}

SCENARIO_NAMES: tuple[str, ...] = tuple(_SCENARIOS)
"""Every built-in scenario, in run order."""

ENDS_BY_DESIGN: dict[str, str] = {
    "retry_then_success": "a failed attempt, retried to success",
    "timeout_then_fallback": "a timed-out attempt, then a fallback",
    "failed_delegation": "a failed handoff (rate limited)",
    "denied_allowed_tools": "a denied handoff (allowed_tools)",
    "denied_denied_tools": "a denied handoff (denied_tools)",
    "denied_max_depth": "a denied handoff (max_depth)",
    "denied_tool_forbidden": "a denied handoff (tool_forbidden)",
    "denied_rate_limited": "a denied handoff (rate_limited)",
    "denied_guardrail": "a denied handoff (guardrail)",
    "denied_max_transfers": "a denied handoff (max_transfers)",
    "cut_max_turns": "a handoff cut by its budget (max_turns)",
    "cut_max_tokens": "a handoff cut by its budget (max_tokens)",
    "cut_max_time": "a handoff cut by its budget (max_ms)",
    "unpriced_subagent": "tokens without a price",
}
"""What a scenario shows on purpose (the dashboard lists it under Failures); the others end plainly."""


async def run_scenarios(
    names: Sequence[str] | None = None,
    *,
    tracer_provider: Any | None = None,
    meter_provider: Any | None = None,
    latency_scale: float = 1.0,
    capture_content: bool | None = None,
) -> list[ScenarioOutcome]:
    """Run the named scenarios (all by default) one after another, each as its own turn and trace.

    `capture_content` records prompts, outputs and the agents' definitions (default: the environment's
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT), what `janux replay` needs.
    """
    selected = list(names) if names is not None else list(SCENARIO_NAMES)
    unknown = [name for name in selected if name not in _SCENARIOS]
    if unknown:
        raise ValueError(f"names: unknown scenario(s) {unknown}; known: {', '.join(SCENARIO_NAMES)}")
    if latency_scale < 0:
        raise ValueError(f"latency_scale: must be >= 0, got {latency_scale}")
    options = {
        "tracer_provider": tracer_provider,
        "meter_provider": meter_provider,
        "capture_content": capture_content,
    }
    outcomes = []
    for name in selected:
        run = _Run(Stage(latency_scale), f"{name}-{uuid.uuid4().hex[:8]}", options)
        try:
            result = await _SCENARIOS[name](run)
        except Exception as exc:
            outcomes.append(ScenarioOutcome(name, None, f"{type(exc).__name__}: {exc}", None))
            continue
        outcomes.append(ScenarioOutcome(name, result, None, result.trace_id))
    return outcomes
