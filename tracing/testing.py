"""Contract-shaped traces built from a small spec, for tests, benchmarks and offline demos.

A `LoopSpec` describes one agent loop (its rounds and its delegations); `build_trace` lays it out
in time and emits the spans the trace contract prescribes, computing `janux.turn.*` and
`janux.bill.*` by the accounting rule. `janux=False` emits a plain GenAI-semconv trace instead,
with the aggregated agent-level usage other libraries report (which readers must ignore).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from janux.tracing import conventions as c
from janux.tracing.records import KIND_CLIENT, STATUS_ERROR, STATUS_UNSET, EventRecord, SpanRecord

ROUND_NS = 10_000_000
"""Duration of one synthetic model round (10 ms)."""
GAP_NS = 1_000_000
"""Gap between consecutive synthetic spans (1 ms)."""


@dataclass
class RoundSpec:
    """One model round."""

    input_tokens: int = 100
    output_tokens: int = 20
    cost: float | None = 0.001
    """USD; None for an unpriced agent."""
    model: str = "gpt-4o-mini"
    provider: str = "openai"
    error_type: str | None = None


@dataclass
class LoopSpec:
    """One agent loop: rounds first, then delegations, then one closing round when delegating."""

    agent: str
    rounds: list[RoundSpec] = field(default_factory=lambda: [RoundSpec()])
    delegations: list[DelegationSpec] = field(default_factory=list)
    error_type: str | None = None
    stop_reason: str | None = None
    budget: tuple[int | None, int | None, float | None] | None = None
    """(max_turns, max_tokens, max_ms) recorded on a delegation attempt."""


@dataclass
class DelegationSpec:
    """One delegation or transfer and the attempts it ran."""

    target: str
    attempts: list[LoopSpec] = field(default_factory=list)
    status: str = c.STATUS_COMPLETED
    kind: str = c.KIND_DELEGATE
    deny_reason: str | None = None
    stop_reason: str | None = None
    error: str | None = None
    task: str | None = None
    """Captured task text (only set when content capture is on)."""
    drop_end: bool = False
    """Emit HANDOFF_START without HANDOFF_END (a broken writer)."""


@dataclass
class _Ctx:
    trace_id: str
    rng: random.Random
    janux: bool
    conversation_id: str
    service: str
    spans: list[SpanRecord] = field(default_factory=list)

    def span_id(self) -> str:
        return f"{self.rng.getrandbits(64):016x}"


def _span(
    ctx: _Ctx, span_id: str, parent: str, name: str, start: int, end: int, attrs: dict[str, Any]
) -> SpanRecord:
    record = SpanRecord(
        trace_id=ctx.trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=start,
        duration_ns=end - start,
        service_name=ctx.service,
        attributes=attrs,
        scope_name=c.INSTRUMENTATION_SCOPE if ctx.janux else "other.genai",
    )
    ctx.spans.append(record)
    return record


def _round(ctx: _Ctx, loop: LoopSpec, spec: RoundSpec, parent: str, start: int) -> int:
    end = start + ROUND_NS
    attrs: dict[str, Any] = {
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
        c.GEN_AI_PROVIDER_NAME: spec.provider,
        c.GEN_AI_REQUEST_MODEL: spec.model,
        c.GEN_AI_RESPONSE_MODEL: spec.model,
        c.GEN_AI_USAGE_INPUT_TOKENS: spec.input_tokens,
        c.GEN_AI_USAGE_OUTPUT_TOKENS: spec.output_tokens,
        c.GEN_AI_AGENT_NAME: loop.agent,
    }
    if ctx.janux and spec.cost is not None:
        attrs[c.JANUX_ROUND_COST] = spec.cost
    span = _span(ctx, ctx.span_id(), parent, c.chat_span_name(spec.model), start, end, attrs)
    span.kind = KIND_CLIENT
    if spec.error_type:
        span.status_code = STATUS_ERROR
        attrs[c.ERROR_TYPE] = spec.error_type
    return end + GAP_NS


def _handoff_attrs(deleg: DelegationSpec, tool: str, depth: int, hid: str) -> dict[str, Any]:
    return {
        c.JANUX_HANDOFF_ID: hid,
        c.JANUX_HANDOFF_CALL_ID: f"call_{hid}",
        c.JANUX_HANDOFF_KIND: deleg.kind,
        c.JANUX_HANDOFF_TOOL: tool,
        c.JANUX_HANDOFF_TARGET: deleg.target,
        c.JANUX_HANDOFF_DEPTH: depth,
        c.JANUX_HANDOFF_SESSION_MODE: c.SESSION_NEW,
    }


def _end_attrs(deleg: DelegationSpec, base: dict[str, Any], duration_ms: float) -> dict[str, Any]:
    end = dict(base)
    end[c.JANUX_HANDOFF_STATUS] = deleg.status
    end[c.JANUX_HANDOFF_ATTEMPTS] = len(deleg.attempts)
    end[c.JANUX_HANDOFF_DURATION_MS] = duration_ms
    for key, value in (
        (c.JANUX_HANDOFF_ERROR, deleg.error),
        (c.JANUX_HANDOFF_DENY_REASON, deleg.deny_reason),
        (c.JANUX_HANDOFF_STOP_REASON, deleg.stop_reason),
    ):
        if value is not None:
            end[key] = value
    return end


def _delegation(ctx: _Ctx, deleg: DelegationSpec, parent: str, depth: int, start: int) -> int:
    prefix = "handoff." if deleg.kind == c.KIND_TRANSFER else "delegate."
    tool = prefix + deleg.target if ctx.janux else f"transfer_to_{deleg.target}"
    tool_id = ctx.span_id()
    hid = f"h{tool_id[:8]}"
    t = start + GAP_NS
    for number, attempt in enumerate(deleg.attempts, start=1):
        t = _loop(ctx, attempt, tool_id, depth + 1, t, attempt_no=number, handoff_id=hid)
    end = t + GAP_NS
    attrs: dict[str, Any] = {
        c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL,
        c.GEN_AI_TOOL_NAME: tool,
        c.GEN_AI_TOOL_CALL_ID: f"call_{hid}",
        c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_HANDOFF if deleg.kind == c.KIND_TRANSFER else c.TOOL_TYPE_DELEGATE,
    }
    if deleg.task is not None:
        attrs[c.GEN_AI_TOOL_CALL_ARGUMENTS] = deleg.task
    span = _span(ctx, tool_id, parent, c.execute_tool_span_name(tool), start, end, attrs)
    if not ctx.janux:
        attrs[c.GEN_AI_TOOL_TYPE] = c.TOOL_TYPE_FUNCTION
        if deleg.status != c.STATUS_COMPLETED:
            span.status_code = STATUS_ERROR
        return end + GAP_NS
    base = _handoff_attrs(deleg, tool, depth + 1, hid)
    start_attrs = dict(base, **{c.JANUX_HANDOFF_STATUS: c.STATUS_STARTING})
    span.events.append(EventRecord(start, c.EVENT_HANDOFF_START, start_attrs))
    if not deleg.drop_end:
        end_attrs = _end_attrs(deleg, base, (end - start) / 1e6)
        span.events.append(EventRecord(end, c.EVENT_HANDOFF_END, end_attrs))
        for key in (
            c.JANUX_HANDOFF_STATUS,
            c.JANUX_HANDOFF_ATTEMPTS,
            c.JANUX_HANDOFF_TARGET,
            c.JANUX_HANDOFF_ERROR,
            c.JANUX_HANDOFF_DENY_REASON,
            c.JANUX_HANDOFF_STOP_REASON,
        ):
            if key in end_attrs:
                attrs[key] = end_attrs[key]
    if deleg.status in (c.STATUS_FAILED, c.STATUS_DENIED):
        span.status_code = STATUS_ERROR
    return end + GAP_NS


def _loop_attrs(
    ctx: _Ctx, loop: LoopSpec, depth: int, attempt_no: int | None, hid: str | None
) -> dict[str, Any]:
    attrs: dict[str, Any] = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: loop.agent}
    if depth == 0:
        attrs[c.GEN_AI_CONVERSATION_ID] = ctx.conversation_id
    if not ctx.janux:
        return attrs
    attrs[c.JANUX_AGENT_DEPTH] = depth
    own = loop_own_usage(loop)
    attrs[c.JANUX_TURN_INPUT_TOKENS] = own[0]
    attrs[c.JANUX_TURN_OUTPUT_TOKENS] = own[1]
    if own[2] is not None:
        attrs[c.JANUX_TURN_COST] = own[2]
    attrs[c.JANUX_TURN_UNPRICED_TOKENS] = own[3]
    attrs[c.JANUX_TURN_ROUNDS] = len(loop.rounds)
    if attempt_no is not None and hid is not None:
        attrs[c.JANUX_HANDOFF_ATTEMPT] = attempt_no
        attrs[c.JANUX_HANDOFF_ID] = hid
    if loop.stop_reason:
        attrs[c.JANUX_STOP_REASON] = loop.stop_reason
    if loop.budget is not None:
        for key, value in zip(
            (c.JANUX_BUDGET_MAX_TURNS, c.JANUX_BUDGET_MAX_TOKENS, c.JANUX_BUDGET_MAX_MS),
            loop.budget,
            strict=True,
        ):
            if value is not None:
                attrs[key] = value
    return attrs


def _loop(
    ctx: _Ctx,
    loop: LoopSpec,
    parent: str,
    depth: int,
    start: int,
    attempt_no: int | None = None,
    handoff_id: str | None = None,
) -> int:
    span_id = ctx.span_id()
    attrs = _loop_attrs(ctx, loop, depth, attempt_no, handoff_id)
    t = start + GAP_NS
    rounds = list(loop.rounds)
    if rounds:
        t = _round(ctx, loop, rounds.pop(0), span_id, t)
    for deleg in loop.delegations:
        t = _delegation(ctx, deleg, span_id, depth, t)
    for spec in rounds:
        t = _round(ctx, loop, spec, span_id, t)
    span = _span(ctx, span_id, parent, c.invoke_agent_span_name(loop.agent), start, t, attrs)
    if loop.error_type:
        span.status_code = STATUS_ERROR
        attrs[c.ERROR_TYPE] = loop.error_type
    if depth == 0:
        _add_bill(ctx, loop, attrs)
    return t + GAP_NS


def _add_bill(ctx: _Ctx, loop: LoopSpec, attrs: dict[str, Any]) -> None:
    total = loop_inclusive_usage(loop)
    if ctx.janux:
        attrs[c.JANUX_BILL_INPUT_TOKENS] = total[0]
        attrs[c.JANUX_BILL_OUTPUT_TOKENS] = total[1]
        if total[2] is not None:
            attrs[c.JANUX_BILL_COST] = total[2]
        attrs[c.JANUX_BILL_UNPRICED_TOKENS] = total[3]
    else:
        # What other libraries do: aggregated usage on the agent span (readers must ignore it).
        attrs[c.GEN_AI_USAGE_INPUT_TOKENS] = total[0]
        attrs[c.GEN_AI_USAGE_OUTPUT_TOKENS] = total[1]


Totals = tuple[int, int, float | None, int]
"""(input tokens, output tokens, cost or None, unpriced tokens)."""


def loop_own_usage(loop: LoopSpec) -> Totals:
    """The loop's own rounds only, by the accounting rule."""
    tin = sum(r.input_tokens for r in loop.rounds)
    tout = sum(r.output_tokens for r in loop.rounds)
    priced = [r.cost for r in loop.rounds if r.cost is not None]
    unpriced = sum(r.input_tokens + r.output_tokens for r in loop.rounds if r.cost is None)
    return tin, tout, (sum(priced) if priced else None), unpriced


def loop_inclusive_usage(loop: LoopSpec) -> Totals:
    """Own rounds plus every attempt of every delegation below."""
    tin, tout, cost, unpriced = loop_own_usage(loop)
    for deleg in loop.delegations:
        for attempt in deleg.attempts:
            a_in, a_out, a_cost, a_unp = loop_inclusive_usage(attempt)
            tin, tout, unpriced = tin + a_in, tout + a_out, unpriced + a_unp
            if a_cost is not None:
                cost = a_cost if cost is None else cost + a_cost
    return tin, tout, cost, unpriced


def build_trace(
    root: LoopSpec,
    *,
    janux: bool = True,
    seed: int = 0,
    start_ns: int = 1_700_000_000_000_000_000,
    conversation_id: str = "conv-1",
    service: str = "janux-demo",
) -> list[SpanRecord]:
    """Spans of one turn described by `root`, in end order (as an exporter emits them)."""
    rng = random.Random(seed)
    ctx = _Ctx(f"{rng.getrandbits(128):032x}", rng, janux, conversation_id, service)
    _loop(ctx, root, "", 0, start_ns)
    for span in ctx.spans:
        if span.status_code == "":
            span.status_code = STATUS_UNSET
    return ctx.spans


def random_loop(rng: random.Random, span_budget: int, depth: int = 0, agent: str = "planner") -> LoopSpec:
    """A random loop of roughly `span_budget` spans: rounds, retried and failing delegations."""
    rounds = [
        RoundSpec(rng.randint(10, 2000), rng.randint(1, 500), rng.choice([None, 0.0005, 0.002]))
        for _ in range(rng.randint(1, 3))
    ]
    loop = LoopSpec(agent=agent, rounds=rounds)
    remaining = span_budget - 1 - len(rounds)
    while remaining > 4 and depth < 6:
        share = max(3, min(remaining, rng.randint(3, max(3, span_budget // 3))))
        attempts = [
            random_loop(rng, max(2, share // 2), depth + 1, f"agent{depth + 1}_{rng.randint(0, 9)}")
            for _ in range(rng.choice([1, 1, 1, 2]))
        ]
        if len(attempts) == 2:
            attempts[0].error_type = c.ERROR_TIMEOUT
        loop.delegations.append(DelegationSpec(target=attempts[-1].agent, attempts=attempts))
        remaining -= share
    return loop


def synthetic_trace(n_spans: int, *, seed: int = 0, janux: bool = True) -> list[SpanRecord]:
    """A random contract-shaped trace of about `n_spans` spans (for benchmarks)."""
    rng = random.Random(seed)
    root = LoopSpec(agent="planner", rounds=[RoundSpec()])
    spans = 2
    while spans < n_spans:
        child = random_loop(rng, min(200, n_spans - spans), 1, f"worker{rng.randint(0, 20)}")
        root.delegations.append(DelegationSpec(target=child.agent, attempts=[child]))
        spans += _count(child) + 1
    return build_trace(root, janux=janux, seed=seed)


def _count(loop: LoopSpec) -> int:
    return 1 + len(loop.rounds) + sum(1 + sum(_count(a) for a in d.attempts) for d in loop.delegations)
