"""What a replayed run (and a test file written by `janux replay --write-test`) is built from.

A `Recording` holds one trace's recorded answers: each agent's model answers from its recorded
rounds (`Recording.model`), each recorded round taken only by the request asked with the recorded
input messages, so a run that goes another way finds no answer there; each function tool answers
with its recorded result (`Recording.tool`); fallbacks and guardrails decide as they did. Where the
run needs something the trace never recorded, the recording ends: the request (or tool call) fails
with a clear error and `Recording.ended` says where, `recording ends at round N: ...`.

    recording = Recording(tool_results=TOOL_RESULTS)
    outcome = run_offline(build(recording), INPUT, recording)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from janux.errors import JanuxError
from janux.runtime.agent import Agent
from janux.runtime.dispatch import dispatch_and_synthesize
from janux.runtime.errors import error_type_of, handoff_events_of
from janux.runtime.handoff_record import HandoffRecord
from janux.runtime.messages import messages_json
from janux.runtime.model import Message, Model, ModelError, ModelResponse, ModelSettings, ToolSpec
from janux.runtime.result import RunResult
from janux.runtime.testing import (
    MessagesPredicate,
    ScriptedModel,
    ScriptStep,
    UnexpectedModelCall,
    call_tools,
    fail,
    reply,
    tool_call,
)
from janux.runtime.threads import ThreadState
from janux.runtime.tool_arguments import parse_delegate_arguments
from janux.runtime.tools import Tool
from janux.runtime.usage import Usage

RECORDING_ENDED = "recording_ended"
"""`error.type` of a model round or tool call the recording has no answer for."""

REPLAY_THREAD = "janux-replay"
"""The thread a replayed turn that continued a conversation runs in."""

SILENT_SECONDS = 3600.0
"""How long a round the recording saw cut by a deadline stays silent (the deadline cancels it)."""

TRUNCATION_MARK = "…"
"""What content capture appends to a truncated value."""

ANY_ARGUMENTS: dict[str, Any] = {"type": "object", "additionalProperties": True}
"""The parameters a replayed tool shows: it takes whatever the recorded call sent."""


def canonical_arguments(arguments: str | Mapping[str, Any] | None) -> str:
    """Arguments as one comparable text (keys sorted); unreadable JSON stays as it is."""
    if arguments is None:
        return "{}"
    value: Any = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def same_input(recorded: str | None) -> MessagesPredicate | None:
    """`when` predicate: the request's messages are the recorded ones (a truncated recording: its prefix)."""
    if recorded is None:
        return None
    truncated = recorded.endswith(TRUNCATION_MARK)
    prefix = recorded[: -len(TRUNCATION_MARK)] if truncated else recorded

    def check(messages: list[Message]) -> bool:
        asked = messages_json(messages)
        return asked.startswith(prefix) if truncated else asked == recorded

    return check


class Recording:
    """One trace's recorded answers, and where a replay ran past them."""

    def __init__(
        self,
        *,
        tool_results: Mapping[str, Sequence[tuple[str, str]]] | None = None,
        fallback_results: Mapping[str, Sequence[tuple[str, str]]] | None = None,
        refusals: Sequence[tuple[str, str]] = (),
        live: Callable[[str], Model] | None = None,
    ) -> None:
        self._tool_results = _queues(tool_results or {})
        self._fallback_results = _queues(fallback_results or {})
        self.refusals = dict(_refused_tasks(refusals))
        """Task texts a guardrail refused (from the refused calls' arguments), and the reason it gave."""
        self.rounds = 0
        """Model requests made so far."""
        self.ended: str | None = None
        """`recording ends at round N: ...` once the run needed something never recorded."""
        self.live = live
        """Makes the live model (by model name) a request the recording has no round for goes to, or
        None to stop there (`janux replay --model-url`)."""
        self.live_rounds = 0
        """Requests answered by the live model."""
        self._live_models: dict[str, Model] = {}

    def end(self, why: str) -> None:
        """Note the first place the run went past the recording."""
        if self.ended is None:
            self.ended = f"recording ends at round {max(self.rounds, 1)}: {why}"

    async def ask_live(
        self, model_name: str, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        """One round past the recording, on the live model (one client per model name)."""
        assert self.live is not None
        model = self._live_models.get(model_name)
        if model is None:
            model = self._live_models[model_name] = self.live(model_name)
        self.live_rounds += 1
        return await model.request(messages, tools, settings)

    def model(self, agent: str, model_name: str, steps: Sequence[ScriptStep]) -> ReplayModel:
        """A model answering `agent`'s requests from its recorded rounds."""
        return ReplayModel(self, agent, steps, model_name)

    def tool(self, name: str) -> Tool:
        """A function tool answering each call with the result recorded for the same arguments."""

        def answer(**arguments: Any) -> str:
            return self._take(self._tool_results, name, arguments, "tool")

        return Tool(name=name, description="", parameters=ANY_ARGUMENTS, function=answer)

    def fallback_tool(self, name: str) -> Tool:
        """A fallback tool answering as the recorded fallback did."""

        def answer(**arguments: Any) -> str:
            return self._take(self._fallback_results, name, arguments, "fallback")

        return Tool(name=name, description="", parameters=ANY_ARGUMENTS, function=answer)

    def fallback_handler(self, record: HandoffRecord, arguments: Mapping[str, Any]) -> str:
        """A fallback handler answering as the recorded fallback did."""
        return self._take(self._fallback_results, record.tool, arguments, "fallback")

    def guardrail(self, text: str) -> str | None:
        """Refuse exactly the task texts the recorded guardrail refused."""
        return self.refusals.get(text)

    def _take(
        self, queues: dict[tuple[str, str], list[str]], name: str, arguments: Mapping[str, Any], what: str
    ) -> str:
        key = (name, canonical_arguments(arguments))
        queue = queues.get(key)
        if not queue:
            why = f"no recorded {what} result for {name} {key[1]}"
            self.end(why)
            raise RecordingEnded(why)
        return queue.pop(0)


class RecordingEnded(JanuxError, RuntimeError):
    """A tool call the recording has no result for."""


def _refused_tasks(refusals: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(task text, reason) of refused calls whose arguments read as a delegate call (others never
    reached a guardrail: the runtime refused their arguments first)."""
    tasks = []
    for arguments, reason in refusals:
        try:
            tasks.append((task_text(arguments), reason))
        except ValueError:
            continue
    return tasks


def _queues(results: Mapping[str, Sequence[tuple[str, str]]]) -> dict[tuple[str, str], list[str]]:
    queues: dict[tuple[str, str], list[str]] = {}
    for name, pairs in results.items():
        for arguments, result in pairs:
            queues.setdefault((name, canonical_arguments(arguments)), []).append(result)
    return queues


class ReplayModel(ScriptedModel):
    """A scripted model that tells its `Recording` when a request finds no recorded round."""

    def __init__(
        self, recording: Recording, agent: str, steps: Sequence[ScriptStep], model_name: str
    ) -> None:
        super().__init__(steps, model_name=model_name, provider_name="janux.replay", latency_scale=1.0)
        self._recording = recording
        self._agent = agent

    async def request(
        self, messages: list[Message], tools: list[ToolSpec], settings: ModelSettings
    ) -> ModelResponse:
        """The recorded round asked with these messages; where there is none the recording ends, and
        the request goes to the live model when there is one."""
        recording = self._recording
        recording.rounds += 1
        try:
            return await super().request(messages, tools, settings)
        except UnexpectedModelCall:
            recording.end(f"{self._agent}'s model output for this request was never recorded")
            if recording.live is None:
                raise
        except ModelError as exc:
            if exc.error_type != RECORDING_ENDED:
                raise
            recording.end(str(exc))
            if recording.live is None:
                raise
        return await recording.ask_live(self.model_name, messages, tools, settings)


def answer(
    *,
    asked: str | None,
    text: str = "",
    calls: Sequence[tuple[str, str, str]] = (),
    tokens: tuple[int, int] = (0, 0),
) -> ScriptStep:
    """A recorded round that answered: its text, its tool calls as (id, name, arguments), its usage."""
    when = same_input(asked)
    if calls:
        made = [tool_call(name, arguments, id=call_id) for call_id, name, arguments in calls]
        return call_tools(*made, text=text, input_tokens=tokens[0], output_tokens=tokens[1], when=when)
    return reply(text, input_tokens=tokens[0], output_tokens=tokens[1], when=when)


def failure(*, asked: str | None, message: str, error_type: str) -> ScriptStep:
    """A recorded round that failed with a model error."""
    return fail(message, error_type=error_type, when=same_input(asked))


def silence(*, asked: str | None, recorded_ms: float, deadline_raised: bool = False) -> ScriptStep:
    """A recorded round a deadline cut: silent until cancelled. When the replay's deadline is later
    than the recorded one, what the model said after `recorded_ms` is unknown: the recording ends."""
    when = same_input(asked)
    if deadline_raised:
        why = (
            f"the recorded round was cut by its deadline after {recorded_ms:.0f} ms; "
            "its answer was never recorded"
        )
        return fail(why, error_type=RECORDING_ENDED, delay=recorded_ms / 1000, when=when)
    return ScriptStep(delay=SILENT_SECONDS, when=when)


def task_text(arguments: str) -> str:
    """The task a delegate call gives its subagent (what the caller's guardrails check)."""
    return parse_delegate_arguments(arguments).text()


@dataclass(slots=True)
class OfflineRun:
    """How an offline run ended, in the runtime's own terms (what a written test asserts)."""

    result: RunResult | None
    """The turn's result; None when it raised."""
    error: str | None
    """The `error.type` of what the turn raised (its declared type, else its class name)."""
    delegations: list[tuple[str, str, str, int, str | None]] = field(default_factory=list)
    """(tool, target, status, attempts, deny or stop reason) of each delegation, sorted."""
    bill: Usage = field(default_factory=Usage)
    """The turn's bill (empty when it raised)."""
    ended: str | None = None
    """Where the run went past the recording, if it did."""
    live_rounds: int = 0
    """Rounds a live model answered past the recording (`--model-url`)."""


async def run_offline_async(
    entry: Agent,
    input: str,
    recording: Recording,
    *,
    dispatch_tasks: Sequence[str] | None = None,
    history: Sequence[tuple[str, str]] = (),
    holder: str | None = None,
    **run_options: Any,
) -> OfflineRun:
    """Run one turn (or dispatch-and-synthesize) of `entry` and read how it ended; `history` (role,
    text) is the thread's earlier messages, held by `holder`, for a turn that continued a thread."""
    if history:
        earlier = [Message("user" if role == "user" else "assistant", text) for role, text in history]
        await entry.threads.save(REPLAY_THREAD, ThreadState(holder or entry.name, earlier))
        run_options["thread_id"] = REPLAY_THREAD
    try:
        if dispatch_tasks is not None:
            result = await dispatch_and_synthesize(entry, dispatch_tasks, question=input, **run_options)
        else:
            result = await entry.run(input, **run_options)
    except Exception as exc:
        events = handoff_events_of(exc)
        return OfflineRun(
            None, error_type_of(exc), _delegations(events), ended=recording.ended,
            live_rounds=recording.live_rounds,
        )  # fmt: skip
    delegations = _delegations(result.handoff_events)
    return OfflineRun(result, None, delegations, result.bill, recording.ended, recording.live_rounds)


def run_offline(
    build: Callable[[Recording], Agent],
    input: str,
    recording: Recording,
    *,
    dispatch_tasks: Sequence[str] | None = None,
    history: Sequence[tuple[str, str]] = (),
    holder: str | None = None,
) -> OfflineRun:
    """`run_offline_async` for a test: build the agents on `recording`, run, and read the outcome."""
    entry = build(recording)
    done = run_offline_async(
        entry, input, recording, dispatch_tasks=dispatch_tasks, history=history, holder=holder
    )
    return asyncio.run(done)


def _delegations(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str, int, str | None]]:
    ends = [e for e in events if e.get("event") == "HANDOFF_END"]
    rows = [
        (
            str(e["tool"]),
            str(e["subagent"]),
            str(e["status"]),
            int(e["attempts"]),
            e.get("denyReason") or e.get("stopReason"),
        )
        for e in ends
    ]
    return sorted(rows, key=lambda row: tuple(str(part) for part in row))
