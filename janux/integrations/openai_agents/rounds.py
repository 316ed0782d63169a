"""Model rounds: one `chat` span each, priced, with its usage counted on its loop.

A round's usage comes from its span (the SDK's OpenAI models record it there). A round whose span
carries none waits for the end of its SDK turn, whose usage (minus what its delegations and reported
rounds used) is that round's, unless another turn of the run overlapped it: the SDK adds concurrent
runs into one shared total, so the round is then recorded without usage rather than with a guess.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from opentelemetry.trace import Span

from janux.integrations.openai_agents import sdk_data as sdk
from janux.integrations.openai_agents.accounting import Pricing, price_source
from janux.integrations.openai_agents.state import Entry, Pending, Turn
from janux.tracing.conventions import (
    ERROR_MODEL,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_RESPONSE_MODEL,
    JANUX_PRICE_SOURCE,
    JANUX_ROUND_COST_ESTIMATE,
)
from janux.tracing.instrument import RunInstrumentation

_log = logging.getLogger("janux.integrations")
_warned: set[str] = set()


def warn_once(key: str, message: str, *args: object) -> None:
    """Log `message` the first time `key` comes up in this process."""
    if key not in _warned:
        _warned.add(key)
        _log.warning(message + " (logged once)", *args)


def safe_set(span: Span, attributes: dict[str, Any]) -> None:
    """Set attributes on a span; a failure loses these attributes only."""
    if not attributes:
        return
    try:
        span.set_attributes(attributes)
    except Exception as exc:
        warn_once("set_attributes", "setting span attributes failed: %r", exc)


class RoundRecorder:
    """Records the rounds of every loop through one `RunInstrumentation`."""

    __slots__ = ("_obs", "_pricing", "_provider", "_source")

    def __init__(self, obs: RunInstrumentation, pricing: Pricing, provider: str) -> None:
        self._obs = obs
        self._pricing = pricing
        self._provider = provider
        self._source = price_source()

    def round_ended(self, span: Any, entry: Entry, failure: BaseException | None) -> None:
        """A generation or response span ended: record it now, or when its turn's usage is known."""
        data, end_ns = span.span_data, time.time_ns()
        if span.error is not None or failure is not None:
            self._record_failed(entry, data, span.error, failure, end_ns)
            return
        usage = sdk.round_usage(data)
        if usage is None:
            if entry.turn is not None:
                entry.turn.pending.append(Pending(entry, data, end_ns))
                return
            warn_once("no usage", "a model round reported no usage and there is no turn to take it from")
        self._record(Pending(entry, data, end_ns), usage, None)

    def turn_ended(self, data: Any, turn: Turn, *, ambiguous: bool) -> None:
        """A turn ended: its waiting round gets the turn's own usage, when that figure is exact."""
        if not turn.pending:
            if not turn.saw_round:
                _check_untraced(data, turn)
            return
        pending, turn.pending = turn.pending, []
        usage = sdk.turn_usage(data)
        finish = "tool_calls" if turn.used_tools else "stop"
        if len(pending) == 1 and usage is not None and not ambiguous:
            own = (usage[0] - turn.known_input, usage[1] - turn.known_output)
            if own[0] >= 0 and own[1] >= 0:
                self._record(pending[0], own, finish)
                return
        warn_once(
            "ambiguous",
            "a model round reported no usage and its turn's usage is ambiguous (concurrent runs): "
            "recorded without usage",
        )
        for one in pending:
            self._record(one, None, finish)

    def _record(self, one: Pending, usage: tuple[int, int] | None, finish: str | None) -> None:
        """One `chat` span, priced, and its usage counted on its loop (and its turn)."""
        entry, data = one.entry, one.data
        loop = entry.loop
        assert loop is not None
        request, response = sdk.round_models(data)
        capture = self._obs.capture.enabled
        op = self._obs.start_chat(
            entry.anchor,  # type: ignore[arg-type]  # checked when the round started
            agent=entry.name,
            request_model=request,
            provider=self._provider,
            messages=(lambda: sdk.round_input(data)) if capture else None,
            start_time=entry.start_ns,
        )
        finish = sdk.finish_reason(data) or finish
        if usage is None:
            attributes: dict[str, Any] = {GEN_AI_RESPONSE_FINISH_REASONS: (finish,)} if finish else {}
            if response is not None:
                attributes[GEN_AI_RESPONSE_MODEL] = response
            safe_set(op.span, attributes)
            op.span.end(end_time=one.end_ns)
            loop.own.rounds += 1
            loop.inclusive.rounds += 1
            return
        price = self._pricing.price(entry.name, response or sdk.priced_model(request), *usage)
        if price.estimate is not None:
            safe_set(op.span, {JANUX_ROUND_COST_ESTIMATE: price.estimate, JANUX_PRICE_SOURCE: self._source})
        self._obs.end_chat(
            op,
            response_model=response,
            finish_reason=finish,
            input_tokens=usage[0],
            output_tokens=usage[1],
            cost=price.cost,
            output=(lambda: sdk.round_output(data)) if capture else None,
            end_time=one.end_ns,
        )
        loop.own.add_round(usage[0], usage[1], price)
        loop.inclusive.add_round(usage[0], usage[1], price)
        if entry.turn is not None:
            entry.turn.known_input += usage[0]
            entry.turn.known_output += usage[1]

    def _record_failed(
        self, entry: Entry, data: Any, error: Any, failure: BaseException | None, end_ns: int
    ) -> None:
        """A model call that raised: status ERROR, its exception's class, no usage, not a round."""
        request, _ = sdk.round_models(data)
        op = self._obs.start_chat(
            entry.anchor,  # type: ignore[arg-type]  # checked when the round started
            agent=entry.name,
            request_model=request,
            provider=self._provider,
            start_time=entry.start_ns,
        )
        error_type = type(failure).__name__ if failure is not None else sdk.error_class(error) or ERROR_MODEL
        self._obs.fail_chat(op, error_type, sdk.error_text(error) or error_type, end_time=end_ns)


def _check_untraced(data: Any, turn: Turn) -> None:
    """Say so (once) when a turn used tokens but its model traced no round: they cannot be shown."""
    usage = sdk.aggregate_usage(data)
    if usage is not None and (usage[0] > turn.known_input or usage[1] > turn.known_output):
        warn_once(
            "untraced",
            "a model traced no span for its round, so its tokens are missing from the trace "
            "(the SDK's OpenAI models trace theirs; agents.testing.ScriptedModel needs emit_traces=True)",
        )
