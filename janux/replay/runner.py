"""Replay a recorded trace offline on the runtime and compare the outcome with the recorded one.

    report = replay_trace(spans, changes=[parse_set("researcher.max_tokens=8000")])
    report.differences   # [] when the replay ended as the recording did

The replay is the source `janux.replay.source` writes (the same program `--write-test` keeps), run
in memory with a local tracer provider and content capture on; its spans are rebuilt by the same
analysis as the recorded ones (`janux.tracing.analysis.replay_outcome`), so both sides are read alike.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.errors import JanuxError
from janux.replay.source import FromRegistry, expectation, replay_source
from janux.replay.support import OfflineRun, Recording, run_offline_async
from janux.replay.user_agents import RegistryError, check_covers, load_registry, registry_definitions
from janux.replay.whatif import Change, ModelChange, apply_changes
from janux.runtime.agent import Agent
from janux.runtime.model import Model
from janux.tracing.analysis.replay_outcome import RunOutcome, differences, find_delegation, run_outcome
from janux.tracing.analysis.replay_plan import ReplayPlan, ReplayUnavailable, replay_plan
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sdk.convert import span_records_from_readable

LIVE_TOOLS_NEED_AGENTS = (
    "--live-tools needs --agents MODULE:NAME: the trace records each tool's name and results, not its "
    "code, so the real tools must come from your agents"
)
"""Why `--live-tools` is refused on the recorded definitions."""

REPLAY_TIMEOUT_S = 300.0
"""A replay that runs longer than this is stopped (a recorded silence nothing cancels)."""


@dataclass(slots=True)
class ReplayReport:
    """The recorded and the replayed outcome of one run, and how they differ."""

    plan: ReplayPlan
    """What the trace recorded."""
    recorded: RunOutcome
    """The recorded outcome."""
    replayed: RunOutcome
    """The replayed outcome."""
    run: OfflineRun
    """The replay in the runtime's terms."""
    source: str
    """The replay program (what `--write-test` writes, without its test)."""
    agents: dict[str, dict[str, Any]]
    """The agent definitions the replay ran (with the what-ifs)."""
    deadline_raised: bool
    """A what-if made a deadline later than recorded."""
    only: int | None = None
    """The one delegation compared (its number), None for the whole run."""
    registry: FromRegistry | None = None
    """Where the agents came from when not from the recording (`--agents`)."""
    differences: list[str] = field(default_factory=list)
    """What the replay did differently (empty when it matched)."""

    @property
    def ended(self) -> str | None:
        """`recording ends at round N: ...` when the replay needed something never recorded."""
        return self.run.ended

    @property
    def live_rounds(self) -> int:
        """Rounds a live model answered past the recording (`--model-url`)."""
        return self.run.live_rounds


def replay_trace(
    spans: Sequence[SpanRecord],
    *,
    changes: Sequence[Change] = (),
    costs: Sequence[tuple[str, dict[str, float] | None]] = (),
    models: Sequence[ModelChange] = (),
    delegation: int | None = None,
    span_id: str | None = None,
    agents_from: str | None = None,
    live_tools: bool = False,
    live: Callable[[str], Model] | None = None,
) -> ReplayReport:
    """Replay `spans` (one trace) with the what-ifs; compare every delegation, or only the one numbered
    `delegation` (or whose tool span is `span_id`). The agents are the recorded ones, or with
    `agents_from` (`module:attr`) the user's, whose real tools run with `live_tools`. With `live` (a
    model by name, see `live_models`), a request the recording has no round for goes to it. Raise
    `ReplayUnavailable`, `WhatIfError` or `RegistryError` when it cannot."""
    plan = replay_plan(spans)
    recorded = run_outcome(reconstruct(spans))
    only = _selected(recorded, delegation, span_id)
    if agents_from is None and live_tools:
        raise ReplayUnavailable(LIVE_TOOLS_NEED_AGENTS)
    base = plan.definitions["agents"] if agents_from is None else _registry_base(plan, agents_from)
    agents, deadline_raised = apply_changes(base, list(changes), list(costs), models)
    registry = None
    if agents_from is not None:
        overlay = agents if (changes or costs or models) else None
        registry = FromRegistry(agents_from, live_tools, overlay)
    source, build = _program(plan, agents, deadline_raised, registry)
    build[0].live = live
    run, replay_spans = _run(plan, build)
    replayed = run_outcome(reconstruct(replay_spans))
    report = ReplayReport(plan, recorded, replayed, run, source, agents, deadline_raised, only, registry)
    report.differences = differences(recorded, replayed, only)
    return report


SDK_REPLAY_MODULE = "janux.replay.openai_agents"
"""Where the OpenAI Agents SDK replay lives: imported by name, only for such a trace, because it needs
the optional `openai-agents` extra (and nothing in janux depends on an integration at import time)."""


def replay_sdk_trace(
    spans: Sequence[SpanRecord],
    reference: str,
    *,
    live_tools: bool = False,
    delegation: int | None = None,
    span_id: str | None = None,
    prices: Mapping[str, tuple[float, float] | None] | None = None,
) -> Any:
    """Replay a trace of the OpenAI Agents integration on the user's SDK entry agent `reference`
    (`module:name`); compare every delegation, or only the one numbered `delegation` (or whose tool span
    is `span_id`); agents in `prices` billed at those what-if prices (USD per million input/output
    tokens, None: unpriced). Returns `janux.replay.openai_agents.SdkReplayReport`; raises
    `ReplayUnavailable` or `RegistryError` when it cannot (the SDK missing among them)."""
    try:
        module = importlib.import_module(SDK_REPLAY_MODULE)
    except ImportError as exc:
        raise ReplayUnavailable(
            f"replaying an OpenAI Agents SDK trace needs the SDK: pip install 'janux[openai-agents]' ({exc})"
        ) from None
    only = _selected(run_outcome(reconstruct(spans)), delegation, span_id)
    return module.replay_sdk_trace(spans, reference, live_tools=live_tools, only=only, prices=prices)


def sdk_test_source(report: Any, command: str, live_tools: bool) -> str:
    """The pytest module `--write-test` writes for an SDK replay (see
    `janux.replay.openai_agents.test_source`)."""
    module = importlib.import_module(SDK_REPLAY_MODULE)
    source: str = module.test_source(report, command, live_tools)
    return source


def live_models(url: str, api_key_env: str = "OPENAI_API_KEY") -> Callable[[str], Model]:
    """Models on the OpenAI-compatible chat-completions server at `url` (the runtime's client), keyed
    by model name, with the API key read from `api_key_env` (none when unset); `ReplayUnavailable`
    names a bad URL or a missing `openai` package."""
    try:
        from janux.runtime.openai_client import OpenAIChatModel, require_openai

        require_openai()
    except ImportError as exc:
        raise ReplayUnavailable(f"--model-url: {exc}") from None
    # An empty key, not None: None would fall back to OPENAI_API_KEY when another variable was named.
    api_key = os.environ.get(api_key_env) or ""

    def model(name: str) -> Model:
        return OpenAIChatModel(name, base_url=url, api_key=api_key)

    try:
        model("replay")  # checks the URL (and the key OpenAI itself needs) before the replay starts
    except ValueError as exc:
        raise ReplayUnavailable(f"--model-url {url}: {exc}") from None
    return model


def _selected(recorded: RunOutcome, number: int | None, span_id: str | None) -> int | None:
    if number is None and not span_id:
        return None
    found = find_delegation(recorded, number, span_id)
    if found is None:
        wanted = f"delegation {number}" if number is not None else f"delegation whose tool span is {span_id}"
        count = len(recorded.delegations)
        has = f"its delegations are numbered 1..{count} in start order" if count else "it has no delegation"
        raise ReplayUnavailable(f"the trace has no {wanted} ({has}; `janux replay TRACE_ID` shows them)")
    return found.number


def _registry_base(plan: ReplayPlan, reference: str) -> dict[str, dict[str, Any]]:
    """The user's agents as definitions (what the what-ifs edit), once the registry is known to hold
    every agent of the trace."""
    registry = load_registry(reference)
    check_covers(registry, {plan.entry, *plan.agent_names}, reference)
    return registry_definitions(registry, plan.entry)


def _program(
    plan: ReplayPlan,
    agents: dict[str, dict[str, Any]],
    deadline_raised: bool,
    registry: FromRegistry | None,
) -> tuple[str, tuple[Recording, Agent]]:
    """The replay's source, and the agents it builds on a fresh recording; a definition the runtime
    refuses (or one missing a field) is named, never a traceback."""
    try:
        source = replay_source(plan, agents, deadline_raised=deadline_raised, registry=registry)
        namespace: dict[str, Any] = {"__name__": "janux_replay"}
        exec(compile(source, f"<replay of {plan.trace_id}>", "exec"), namespace)
        recording = namespace["new_recording"]()
        return source, (recording, namespace["build"](recording))
    except RegistryError:
        raise
    except (JanuxError, KeyError, TypeError, ValueError, AttributeError, SyntaxError) as exc:
        problem = f"{type(exc).__name__}: {exc}"
        which = (
            "the recorded agent definitions" if registry is None else f"the agents of {registry.reference}"
        )
        raise ReplayUnavailable(f"{which} cannot be rebuilt ({problem})") from None


def _run(plan: ReplayPlan, build: tuple[Recording, Agent]) -> tuple[OfflineRun, list[SpanRecord]]:
    recording, entry = build
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    coroutine = run_offline_async(
        entry, plan.input, recording, dispatch_tasks=plan.dispatch_tasks, history=plan.history,
        holder=plan.holder, tracer_provider=provider, capture_content=True,
    )  # fmt: skip
    try:
        run = asyncio.run(asyncio.wait_for(coroutine, REPLAY_TIMEOUT_S))
    except TimeoutError:
        raise ReplayUnavailable(f"the replay did not finish within {REPLAY_TIMEOUT_S:g} s") from None
    finally:
        provider.shutdown()
    return run, span_records_from_readable(exporter.get_finished_spans())


def test_source(report: ReplayReport, command: str) -> str:
    """The replay program with a pytest test asserting the recorded outcome."""
    return replay_source(
        report.plan, report.agents, deadline_raised=report.deadline_raised,
        expected=expectation(report.recorded), command=command, registry=report.registry,
    )  # fmt: skip
