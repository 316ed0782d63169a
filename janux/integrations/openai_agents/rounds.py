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
from janux.integrations.openai_agents.accounting import Pricing
from janux.integrations.openai_agents.state import Entry, Pending, Turn
from janux.tracing.conventions import ERROR_MODEL, JANUX_PRICE_SOURCE, JANUX_ROUND_COST_ESTIMATE
from janux.tracing.instrument import RunInstrumentation
from janux.tracing.prices import price_source

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
        self._record(entry, data, end_ns, usage, None)

    def turn_ended(self, entry: Entry, data: Any, turn: Turn, *, ambiguous: bool, failed: bool) -> None:
        """A turn ended: its waiting round gets the turn's own usage, when that figure is exact; a
        turn whose model traced no round at all gets one (`failed`: the turn span carries an error)."""
        if not turn.pending:
            if not turn.saw_round:
                self._record_untraced(entry, data, turn, ambiguous=ambiguous, failed=failed)
            return
        pending, turn.pending = turn.pending, []
        usage = sdk.turn_usage(data)
        finish = "tool_calls" if turn.used_tools else "stop"
        if len(pending) == 1 and usage is not None and not ambiguous:
            own = (usage[0] - turn.known_input, usage[1] - turn.known_output)
            if own[0] >= 0 and own[1] >= 0:
                one = pending[0]
                self._record(one.entry, one.data, one.end_ns, own, finish)
                return
        warn_once(
            "ambiguous",
            "a model round reported no usage and its turn's usage is ambiguous (concurrent runs): "
            "recorded without usage",
        )
        for one in pending:
            self._record(one.entry, one.data, one.end_ns, None, finish)

    def _record_untraced(self, entry: Entry, data: Any, turn: Turn, *, ambiguous: bool, failed: bool) -> None:
        """A turn whose model traced no span (a model class that does not trace, the SDK's
        ScriptedModel without `emit_traces`): its round is recorded from what the SDK knows of the
        turn's usage, else as a round of unknown usage, never as zero."""
        usage = _untraced_usage(data, turn, ambiguous=ambiguous)
        if usage is None:
            if failed:  # a turn that failed may never have reached its model: no round to invent
                return
            warn_once(
                "untraced", "a model traced no round and the SDK knows no usage for it: recorded as unknown"
            )
        finish = "tool_calls" if turn.used_tools else "stop"
        self._record(entry, data, time.time_ns(), usage, finish)

    def _record(
        self, entry: Entry, data: Any, end_ns: int, usage: tuple[int, int] | None, finish: str | None
    ) -> None:
        """One `chat` span, priced and written in one go, and its usage counted on its loop (and turn)."""
        loop = entry.loop
        assert loop is not None
        request, response = sdk.round_models(data)
        cost = estimate = None
        extra = None
        if usage is not None:
            cost, estimate = self._pricing.price(entry.name, response or sdk.priced_model(request), *usage)
            if estimate is not None:
                extra = {JANUX_ROUND_COST_ESTIMATE: estimate, JANUX_PRICE_SOURCE: self._source}
        capture = self._obs.capture.enabled
        self._obs.record_chat(
            entry.anchor,  # type: ignore[arg-type]  # checked when the round started
            agent=entry.name,
            request_model=request,
            provider=self._provider,
            response_model=response,
            finish_reason=sdk.finish_reason(data) or finish,
            usage=usage,
            cost=cost,
            start_time=entry.start_ns,
            end_time=end_ns,
            extra=extra,
            messages=(lambda: sdk.round_input(data)) if capture else None,
            output=(lambda: sdk.round_output(data)) if capture else None,
        )
        if usage is None:
            loop.own.rounds += 1
            loop.inclusive.rounds += 1
            return
        loop.own.add_round(usage[0], usage[1], cost, estimate)
        loop.inclusive.add_round(usage[0], usage[1], cost, estimate)
        turn = entry.turn
        if turn is not None:
            turn.known_input += usage[0]
            turn.known_output += usage[1]

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


def _untraced_usage(data: Any, turn: Turn, *, ambiguous: bool) -> tuple[int, int] | None:
    """The tokens of a turn's one untraced round: the SDK's turn usage minus what its delegations
    used; None when unknown (no figure, a figure shared with concurrent turns, or none at all: a
    model call never uses zero tokens, so a zero means the model reported nothing)."""
    usage = sdk.aggregate_usage(data)
    if usage is None or ambiguous:
        return None
    own = (usage[0] - turn.known_input, usage[1] - turn.known_output)
    if own[0] < 0 or own[1] < 0 or own == (0, 0):
        return None
    return own
