"""Dispatch and synthesize: fan subagents out over a list of tasks, then reason over the conclusions.

The synthesizing agent's turn starts as if its model had asked for one delegate call per task
(all in one round, so they run in parallel under the usual governance, spans and events); its
model then sees every conclusion as a tool result and writes the synthesis.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from janux.runtime._loop.loop import HandleResponse
from janux.runtime._loop.turn import run_turn
from janux.runtime.agent import Agent
from janux.runtime.catalog import ToolEntry
from janux.runtime.errors import DefinitionError
from janux.runtime.model import Model, ModelResponse, ToolCall
from janux.runtime.result import RunResult
from janux.tracing.conventions import TOOL_TYPE_DELEGATE
from janux.tracing.instrument.run import instrumentation_for_run


def _worker_tools(synthesizer: Agent, workers: Sequence[str] | str | None) -> list[str]:
    """Delegate tool names of the chosen workers (by agent name or tool name; default: all)."""
    delegates = [entry for entry in synthesizer.catalog.values() if entry.kind == TOOL_TYPE_DELEGATE]
    if workers is None:
        chosen = delegates
    else:
        wanted = [workers] if isinstance(workers, str) else list(workers)
        chosen = [_find_worker(delegates, name) for name in wanted]
    if not chosen:
        raise DefinitionError(f"workers: agent {synthesizer.name!r} has no subagent to dispatch to")
    return [entry.name for entry in chosen]


def _find_worker(delegates: list[ToolEntry], name: str) -> ToolEntry:
    for entry in delegates:
        if entry.name == name or (entry.subagent is not None and entry.subagent.agent.name == name):
            return entry
    raise DefinitionError(f"workers: {name!r} is not a subagent of the synthesizer")


def dispatch_calls(tools: Sequence[str], tasks: Sequence[str]) -> tuple[ToolCall, ...]:
    """One delegate call per task, workers assigned round-robin."""
    return tuple(
        ToolCall(f"dispatch_{index + 1}", tools[index % len(tools)], json.dumps({"task": task}))
        for index, task in enumerate(tasks)
    )


async def dispatch_and_synthesize(
    synthesizer: Agent,
    tasks: Sequence[str],
    *,
    workers: Sequence[str] | str | None = None,
    question: str | None = None,
    thread_id: str | None = None,
    models: Mapping[str, Model] | None = None,
    tracer_provider: Any | None = None,
    meter_provider: Any | None = None,
    capture_content: Any | None = None,
) -> RunResult:
    """Run every task on the synthesizer's subagents in parallel, then let the synthesizer answer.

    `workers` picks subagents (agent or tool names; default: all of them), assigned to tasks
    round-robin. `question` is the turn's user message (default: a request to synthesize).
    """
    if not tasks:
        raise DefinitionError("tasks: dispatch needs at least one task")
    calls = dispatch_calls(_worker_tools(synthesizer, workers), tasks)
    prompt = question or "Synthesize the conclusions of these tasks:\n" + "\n".join(f"- {t}" for t in tasks)
    obs = instrumentation_for_run(tracer_provider, meter_provider, capture_content)
    first = HandleResponse(ModelResponse(tool_calls=calls, finish_reason="tool_calls"))
    return await run_turn(
        synthesizer,
        prompt,
        thread_id=thread_id,
        start_as=None,
        models=models if models is not None else {},
        obs=obs,
        first_step=first,
    )
