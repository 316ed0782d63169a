"""Instrumentation of the delegation runtime, through the OpenTelemetry API only (trace contract v1).

The runtime calls one `RunInstrumentation` per run: it opens the turn span, a `chat` span per model
round, an `execute_tool` span per tool call and an `invoke_agent` span per delegation attempt, and
puts HANDOFF_START/HANDOFF_END events on delegation tool spans. Parents are always passed
explicitly, so parenting stays right under parallel tool calls, retries and cancellation.

Tracing must never break or slow a run: every entry point catches what a tracer, span or span
processor raises, logs it once per entry point, and carries on (a failed start yields a
non-recording span). Values that may hold content go through `ContentCapture` first.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Status, StatusCode

from janux.tracing.conventions import (
    ERROR_TYPE,
    GEN_AI_AGENT_NAME,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OPERATION_NAME,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_SYSTEM_INSTRUCTIONS,
    GEN_AI_TOKEN_TYPE,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_TOOL_TYPE,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    INSTRUMENTATION_SCOPE,
    JANUX_AGENT_DEFINITIONS,
    JANUX_AGENT_DEPTH,
    JANUX_BILL_COST,
    JANUX_BILL_INPUT_TOKENS,
    JANUX_BILL_OUTPUT_TOKENS,
    JANUX_BILL_UNPRICED_TOKENS,
    JANUX_BUDGET_MAX_MS,
    JANUX_BUDGET_MAX_TOKENS,
    JANUX_BUDGET_MAX_TURNS,
    JANUX_HANDOFF_ATTEMPT,
    JANUX_HANDOFF_FROM,
    JANUX_HANDOFF_ID,
    JANUX_HANDOFF_PATH,
    JANUX_HANDOFF_TO,
    JANUX_ROUND_COST,
    JANUX_STOP_REASON,
    JANUX_TURN_COST,
    JANUX_TURN_INPUT_TOKENS,
    JANUX_TURN_OUTPUT_TOKENS,
    JANUX_TURN_ROUNDS,
    JANUX_TURN_UNPRICED_TOKENS,
    OP_CHAT,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    TOKEN_TYPE_INPUT,
    TOKEN_TYPE_OUTPUT,
    chat_span_name,
    execute_tool_span_name,
    invoke_agent_span_name,
)
from janux.tracing.instrument.content import ContentCapture, resolve_capture
from janux.tracing.instrument.handoff_events import (
    HandoffMark,
    counter_attributes,
    end_attributes,
    start_attributes,
    tool_span_attributes,
)
from janux.tracing.instrument.metrics import Instruments, instruments_for
from janux.usage import Usage

_log = logging.getLogger("janux.tracing")
_reported: set[str] = set()

_STATUS_MESSAGE_LIMIT = 256
"""Longest span status description; error texts are diagnostics, not content."""


def _report(where: str, exc: BaseException) -> None:
    """Log a tracing failure once per entry point; the run goes on without that piece of trace."""
    if where in _reported:
        return
    _reported.add(where)
    _log.warning("tracing failed in %s (logged once; the run continues): %r", where, exc)


Parent = Span | Context
"""Where a new span hangs: a span, or `context_of(span)` built once for a parent with many children
(each child then skips building a context of its own)."""


def context_of(span: Span) -> Context:
    """A context whose current span is `span`, to pass as the parent of several children."""
    return trace.set_span_in_context(span)


_TRACERS: weakref.WeakKeyDictionary[Any, trace.Tracer] = weakref.WeakKeyDictionary()


def tracer_for(tracer_provider: trace.TracerProvider | None) -> trace.Tracer:
    """The janux tracer of `tracer_provider` (the global provider when `None`), cached per provider."""
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    try:
        tracer = _TRACERS.get(provider)
    except TypeError:
        return provider.get_tracer(INSTRUMENTATION_SCOPE)
    if tracer is None:
        tracer = provider.get_tracer(INSTRUMENTATION_SCOPE)
        _TRACERS[provider] = tracer
    return tracer


def _error_status(error_type: str, message: str | None) -> Status:
    return Status(StatusCode.ERROR, (message or error_type)[:_STATUS_MESSAGE_LIMIT])


def _usage_attributes(keys: tuple[str, str, str, str], totals: Usage) -> dict[str, Any]:
    """Tokens as ints and cost as a double (absent when unknown), whatever the caller passed."""
    attributes: dict[str, Any] = {
        keys[0]: int(totals.input_tokens),
        keys[1]: int(totals.output_tokens),
        keys[3]: int(totals.unpriced_tokens),
    }
    if totals.cost is not None:
        attributes[keys[2]] = float(totals.cost)
    return attributes


def _end(span: Span, where: str, end_time: int | None = None) -> None:
    """End `span` whatever happened before: an unended span is never exported, so it is lost."""
    try:
        span.end(end_time=end_time)
    except Exception as exc:
        _report(where, exc)


_TURN_KEYS = (JANUX_TURN_INPUT_TOKENS, JANUX_TURN_OUTPUT_TOKENS, JANUX_TURN_COST, JANUX_TURN_UNPRICED_TOKENS)
_BILL_KEYS = (JANUX_BILL_INPUT_TOKENS, JANUX_BILL_OUTPUT_TOKENS, JANUX_BILL_COST, JANUX_BILL_UNPRICED_TOKENS)
_BUDGET_KEYS = (JANUX_BUDGET_MAX_TURNS, JANUX_BUDGET_MAX_TOKENS, JANUX_BUDGET_MAX_MS)


class ChatOp:
    """An open `chat` span plus what its metrics need when it ends."""

    __slots__ = ("metric_attributes", "span", "started")

    def __init__(self, span: Span, metric_attributes: dict[str, Any]) -> None:
        self.span = span
        """The `chat` span."""
        self.metric_attributes = metric_attributes
        """Attributes shared by the round's metric points."""
        self.started = time.perf_counter()
        """Monotonic start, for `gen_ai.client.operation.duration`."""


class RunInstrumentation:
    """Spans, events and metrics of one run. Every method is safe: it never raises into the run.

    Every `end_*`/`fail_*` method ends its span even when recording an attribute or content fails,
    because a span that is never ended is never exported (and would take its events with it).
    """

    __slots__ = ("_instruments", "_tracer", "capture")

    def __init__(
        self, tracer: trace.Tracer, instruments: Instruments | None, capture: ContentCapture
    ) -> None:
        self._tracer = tracer
        self._instruments = instruments
        self.capture = capture
        """Content-capture settings of this run."""

    def _start(
        self,
        where: str,
        name: str,
        parent: Parent | None,
        kind: SpanKind,
        attributes: dict[str, Any],
        start_time: int | None = None,
    ) -> Span:
        """Start a span under `parent` (the current context when None); INVALID_SPAN if that fails."""
        if parent is not None and not isinstance(parent, Context):
            parent = trace.set_span_in_context(parent)
        try:
            return self._tracer.start_span(
                name,
                context=parent,
                kind=kind,
                attributes=attributes,
                start_time=start_time,
                record_exception=False,
                set_status_on_exception=False,
            )
        except Exception as exc:
            _report(where, exc)
            return INVALID_SPAN

    # -- agent loops ---------------------------------------------------------------------------

    def start_turn(
        self, agent: str, conversation_id: str, definitions: Callable[[], str] | None = None
    ) -> Span:
        """Open the root `invoke_agent {agent}` span of a user turn (child of the caller's current span).

        `definitions` (the agents as JSON) is only called, and recorded, with content capture on. It
        holds no prompt text, so it is neither redacted nor truncated: a cut JSON could not be read.
        """
        attributes: dict[str, Any] = {
            GEN_AI_OPERATION_NAME: OP_INVOKE_AGENT,
            GEN_AI_AGENT_NAME: agent,
            GEN_AI_CONVERSATION_ID: conversation_id,
            JANUX_AGENT_DEPTH: 0,
        }
        if self.capture.enabled and definitions is not None:
            try:
                attributes[JANUX_AGENT_DEFINITIONS] = definitions()
            except Exception as exc:
                _report("definitions", exc)
        return self._start("start_turn", invoke_agent_span_name(agent), None, SpanKind.INTERNAL, attributes)

    def start_attempt(
        self,
        parent: Parent,
        *,
        agent: str,
        depth: int,
        attempt: int,
        handoff_id: str,
        budget: tuple[int | None, int | None, int | None],
    ) -> Span:
        """Open one delegation attempt `invoke_agent {agent}` under the delegate tool span.

        `budget` is (max_turns, max_tokens, max_ms); absent lines are not recorded.
        """
        attributes: dict[str, Any] = {
            GEN_AI_OPERATION_NAME: OP_INVOKE_AGENT,
            GEN_AI_AGENT_NAME: agent,
            JANUX_AGENT_DEPTH: depth,
            JANUX_HANDOFF_ATTEMPT: attempt,
            JANUX_HANDOFF_ID: handoff_id,
        }
        for key, value in zip(_BUDGET_KEYS, budget, strict=True):
            if value is not None:
                attributes[key] = value
        return self._start(
            "start_attempt", invoke_agent_span_name(agent), parent, SpanKind.INTERNAL, attributes
        )

    def end_agent(
        self,
        span: Span,
        totals: Usage,
        *,
        stop_reason: str | None = None,
        error_type: str | None = None,
        error_message: str | None = None,
        bill: Usage | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Close an agent span with its own loop's `janux.turn.*` (never `gen_ai.usage.*`); a root
        may pass its `bill` (as `set_bill` records it) and `extra` attributes, all set at once."""
        try:
            if span.is_recording():
                attributes = _usage_attributes(_TURN_KEYS, totals)
                attributes[JANUX_TURN_ROUNDS] = int(totals.rounds)
                if bill is not None:
                    attributes.update(_usage_attributes(_BILL_KEYS, bill))
                if extra:
                    attributes.update(extra)
                if stop_reason is not None:
                    attributes[JANUX_STOP_REASON] = stop_reason
                if error_type is not None:
                    attributes[ERROR_TYPE] = error_type
                    span.set_status(_error_status(error_type, error_message))
                span.set_attributes(attributes)
        except Exception as exc:
            _report("end_agent", exc)
        _end(span, "end_agent")

    def set_bill(self, span: Span, bill: Usage) -> None:
        """Record the whole turn's bill on the root span (call before `end_agent`)."""
        try:
            if span.is_recording():
                span.set_attributes(_usage_attributes(_BILL_KEYS, bill))
        except Exception as exc:
            _report("set_bill", exc)

    def set_transfer(self, span: Span, path: Sequence[str]) -> None:
        """Record a transfer on the turn span. `path` is every agent that has held the conversation
        in the turn, the new holder last: the holder becomes its `gen_ai.agent.name`,
        `janux.handoff.from` stays the first agent and `janux.handoff.path` keeps the whole chain."""
        try:
            if span.is_recording() and len(path) > 1:
                span.set_attributes(
                    {GEN_AI_AGENT_NAME: path[-1], JANUX_HANDOFF_FROM: path[0], JANUX_HANDOFF_TO: path[-1],
                     JANUX_HANDOFF_PATH: list(path)}
                )  # fmt: skip
        except Exception as exc:
            _report("set_transfer", exc)

    # -- model rounds --------------------------------------------------------------------------

    def start_chat(
        self,
        parent: Parent,
        *,
        agent: str,
        request_model: str,
        provider: str,
        system: str | None = None,
        messages: Callable[[], str | None] | None = None,
        start_time: int | None = None,
    ) -> ChatOp:
        """Open a `chat {model}` CLIENT span for one round of `agent`'s loop.

        `messages` is only called when content capture is on (serializing history costs time).
        `start_time` (ns since the epoch) is for rounds recorded after the fact; default now.
        """
        metric_attributes = {
            GEN_AI_OPERATION_NAME: OP_CHAT,
            GEN_AI_PROVIDER_NAME: provider,
            GEN_AI_REQUEST_MODEL: request_model,
        }
        attributes: dict[str, Any] = {**metric_attributes, GEN_AI_AGENT_NAME: agent}
        if self.capture.enabled:
            self._add_content(attributes, GEN_AI_SYSTEM_INSTRUCTIONS, lambda: system)
            self._add_content(attributes, GEN_AI_INPUT_MESSAGES, messages)
        span = self._start(
            "start_chat", chat_span_name(request_model), parent, SpanKind.CLIENT, attributes, start_time
        )
        return ChatOp(span, metric_attributes)

    def end_chat(
        self,
        op: ChatOp,
        *,
        response_model: str | None,
        finish_reason: str | None,
        input_tokens: int,
        output_tokens: int,
        cost: float | None,
        output: Callable[[], str | None] | None = None,
        end_time: int | None = None,
    ) -> None:
        """Close a successful round: usage, finish reason (unless None), cost (absent when unpriced)."""
        span = op.span
        try:
            if span.is_recording():
                attributes: dict[str, Any] = {
                    GEN_AI_USAGE_INPUT_TOKENS: int(input_tokens),
                    GEN_AI_USAGE_OUTPUT_TOKENS: int(output_tokens),
                }
                if finish_reason is not None:
                    attributes[GEN_AI_RESPONSE_FINISH_REASONS] = (finish_reason,)
                if response_model is not None:
                    attributes[GEN_AI_RESPONSE_MODEL] = response_model
                if cost is not None:
                    attributes[JANUX_ROUND_COST] = float(cost)
                if self.capture.enabled:
                    self._add_content(attributes, GEN_AI_OUTPUT_MESSAGES, output)
                span.set_attributes(attributes)
        except Exception as exc:
            _report("end_chat", exc)
        _end(span, "end_chat", end_time)
        self._record_round(op, response_model, None, (input_tokens, output_tokens))

    def fail_chat(
        self, op: ChatOp, error_type: str, message: str | None = None, end_time: int | None = None
    ) -> None:
        """Close a round that failed or was cancelled: status ERROR + `error.type`."""
        try:
            op.span.set_attribute(ERROR_TYPE, error_type)
            op.span.set_status(_error_status(error_type, message))
        except Exception as exc:
            _report("fail_chat", exc)
        _end(op.span, "fail_chat", end_time)
        self._record_round(op, None, error_type, None)

    def record_chat(
        self,
        parent: Parent,
        *,
        agent: str,
        request_model: str,
        provider: str,
        response_model: str | None,
        finish_reason: str | None,
        usage: tuple[int, int] | None,
        cost: float | None,
        start_time: int,
        end_time: int,
        extra: dict[str, Any] | None = None,
        messages: Callable[[], str | None] | None = None,
        output: Callable[[], str | None] | None = None,
    ) -> None:
        """Record a round that already ended, in one go: one span start with every attribute, then
        its end (the `start_chat` + `end_chat` pair costs a second attribute pass).

        `usage` None: a round whose usage is unknown (no `gen_ai.usage.*`, no cost). `extra` are
        further attributes (an integration's estimate); `messages` and `output` are only called
        with content capture on. Times in ns since the epoch.
        """
        attributes: dict[str, Any] = {
            GEN_AI_OPERATION_NAME: OP_CHAT,
            GEN_AI_PROVIDER_NAME: provider,
            GEN_AI_REQUEST_MODEL: request_model,
            GEN_AI_AGENT_NAME: agent,
        }
        if finish_reason is not None:
            attributes[GEN_AI_RESPONSE_FINISH_REASONS] = (finish_reason,)
        if response_model is not None:
            attributes[GEN_AI_RESPONSE_MODEL] = response_model
        if usage is not None:
            attributes[GEN_AI_USAGE_INPUT_TOKENS] = int(usage[0])
            attributes[GEN_AI_USAGE_OUTPUT_TOKENS] = int(usage[1])
            if cost is not None:
                attributes[JANUX_ROUND_COST] = float(cost)
        if extra:
            attributes.update(extra)
        if self.capture.enabled:
            self._add_content(attributes, GEN_AI_INPUT_MESSAGES, messages)
            if usage is not None:
                self._add_content(attributes, GEN_AI_OUTPUT_MESSAGES, output)
        span = self._start(
            "record_chat", chat_span_name(request_model), parent, SpanKind.CLIENT, attributes, start_time
        )
        _end(span, "record_chat", end_time)
        if self._instruments is not None:
            metric_attributes = {
                GEN_AI_OPERATION_NAME: OP_CHAT,
                GEN_AI_PROVIDER_NAME: provider,
                GEN_AI_REQUEST_MODEL: request_model,
            }
            self._record_metrics((end_time - start_time) / 1e9, metric_attributes, response_model, usage)

    def _record_round(
        self, op: ChatOp, response_model: str | None, error_type: str | None, tokens: tuple[int, int] | None
    ) -> None:
        if self._instruments is not None:
            seconds = time.perf_counter() - op.started
            self._record_metrics(seconds, op.metric_attributes, response_model, tokens, error_type)

    def _record_metrics(
        self,
        seconds: float,
        attributes: dict[str, Any],
        response_model: str | None,
        tokens: tuple[int, int] | None,
        error_type: str | None = None,
    ) -> None:
        """The round's duration and token metrics (`attributes`: operation, provider, request model)."""
        instruments = self._instruments
        if instruments is None:
            return
        try:
            if response_model is not None:
                attributes[GEN_AI_RESPONSE_MODEL] = response_model
            if error_type is not None:
                attributes[ERROR_TYPE] = error_type
            instruments.duration.record(seconds, attributes)
            if tokens is not None:
                instruments.token_usage.record(tokens[0], {**attributes, GEN_AI_TOKEN_TYPE: TOKEN_TYPE_INPUT})
                instruments.token_usage.record(
                    tokens[1], {**attributes, GEN_AI_TOKEN_TYPE: TOKEN_TYPE_OUTPUT}
                )
        except Exception as exc:
            _report("metrics", exc)

    # -- tool calls and handoff events ---------------------------------------------------------

    def start_tool(
        self,
        parent: Parent,
        *,
        tool: str,
        call_id: str,
        tool_type: str,
        arguments: str | None,
        start_time: int | None = None,
    ) -> Span:
        """Open an `execute_tool {tool}` span; arguments are recorded only with capture on."""
        attributes: dict[str, Any] = {
            GEN_AI_OPERATION_NAME: OP_EXECUTE_TOOL,
            GEN_AI_TOOL_NAME: tool,
            GEN_AI_TOOL_CALL_ID: call_id,
            GEN_AI_TOOL_TYPE: tool_type,
        }
        if self.capture.enabled:
            self._add_content(attributes, GEN_AI_TOOL_CALL_ARGUMENTS, lambda: arguments)
        return self._start(
            "start_tool", execute_tool_span_name(tool), parent, SpanKind.INTERNAL, attributes, start_time
        )

    def end_tool(
        self,
        span: Span,
        *,
        result: str | None = None,
        error_type: str | None = None,
        error_message: str | None = None,
        handoff: HandoffMark | None = None,
        end_time: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Close a tool span; for delegation tools also copy the final handoff outcome onto it.
        `extra`: further attributes, set with the others in one go."""
        try:
            if span.is_recording():
                attributes = tool_span_attributes(handoff) if handoff is not None else {}
                if extra:
                    attributes.update(extra)
                if self.capture.enabled:
                    self._add_content(attributes, GEN_AI_TOOL_CALL_RESULT, lambda: result)
                if error_type is not None:
                    attributes[ERROR_TYPE] = error_type
                    span.set_status(_error_status(error_type, error_message))
                if attributes:
                    span.set_attributes(attributes)
        except Exception as exc:
            _report("end_tool", exc)
        _end(span, "end_tool", end_time)

    def handoff_start(self, span: Span, mark: HandoffMark, timestamp: int | None = None) -> None:
        """Add HANDOFF_START to a delegation tool span (`timestamp` in ns since the epoch; default now)."""
        try:
            if span.is_recording():
                span.add_event(*start_attributes(mark), timestamp=timestamp)
        except Exception as exc:
            _report("handoff_start", exc)

    def handoff_end(self, span: Span, mark: HandoffMark) -> None:
        """Add HANDOFF_END (always paired with START) and count the handoff by final status."""
        try:
            if span.is_recording():
                span.add_event(*end_attributes(mark, self.capture))
        except Exception as exc:
            _report("handoff_end", exc)
        if self._instruments is not None:
            try:
                self._instruments.handoffs.add(1, counter_attributes(mark))
            except Exception as exc:
                _report("metrics", exc)

    # -- current-span activation (so user code and client libraries see the right parent) -------

    def activate(self, span: Span) -> object | None:
        """Make `span` current in this context; returns a token for `deactivate`."""
        try:
            return otel_context.attach(trace.set_span_in_context(span))
        except Exception as exc:
            _report("activate", exc)
            return None

    def deactivate(self, token: object | None) -> None:
        """Undo `activate`."""
        if token is None:
            return
        try:
            otel_context.detach(token)  # type: ignore[arg-type]
        except Exception as exc:
            _report("deactivate", exc)

    # -- content ---------------------------------------------------------------------------------

    def _add_content(
        self, attributes: dict[str, Any], key: str, value: Callable[[], str | None] | None
    ) -> None:
        """Add captured content; a failure to produce it drops that value only, never the span."""
        if value is None:
            return
        try:
            captured = self.capture.capture(value())
        except Exception as exc:
            _report("content", exc)
            return
        if captured is not None:
            attributes[key] = captured


def trace_id_hex(span: Span) -> str | None:
    """The 32-hex trace id of `span`, or `None` when it is not a valid (recording or sampled) span."""
    try:
        ctx = span.get_span_context()
    except Exception:
        return None
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


def instrumentation_for_run(
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: Any | None = None,
    capture: ContentCapture | bool | None = None,
) -> RunInstrumentation:
    """The instrumentation of one run; providers default to the global ones, resolved now."""
    try:
        tracer = tracer_for(tracer_provider)
    except Exception as exc:
        _report("tracer", exc)
        tracer = trace.NoOpTracer()
    try:
        instruments: Instruments | None = instruments_for(meter_provider)
    except Exception as exc:
        _report("meter", exc)
        instruments = None
    return RunInstrumentation(tracer, instruments, resolve_capture(capture))
