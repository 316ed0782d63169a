"""Tool execution: the fork-join over one round's tool calls, and the primary (function) executor.

Every call gets an `execute_tool` span. Delegate and handoff calls go to the governance wrapper
(`delegation`, `handoff` of this package); plain function tools pass straight through here and are
never touched by the policy. A call outside the loop's surface is refused with `tool_forbidden`
and never executed; malformed arguments and tool exceptions become tool results the model reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from janux.runtime._loop.context import LoopContext
from janux.runtime._loop.delegation import run_delegation
from janux.runtime._loop.events import start_tool_span
from janux.runtime._loop.handoff import run_transfer
from janux.runtime._loop.primary import invoke_tool
from janux.runtime.catalog import ToolEntry, tool_error
from janux.runtime.deadline import cancel_and_wait, exit_error_type, spawn_call
from janux.runtime.errors import CODE_TOOL_FORBIDDEN, CODE_UNKNOWN_TOOL
from janux.runtime.model import Message, ToolCall
from janux.tracing.conventions import TOOL_TYPE_DELEGATE, TOOL_TYPE_FUNCTION, TOOL_TYPE_HANDOFF


async def execute_calls(loop: LoopContext, calls: Sequence[ToolCall]) -> list[Message]:
    """Run one round's tool calls (in parallel when allowed) and return results in call order.

    Handoff calls are decided one after the other in call order, so the first one that can transfer
    is the one that does, whatever the timing of the calls around it.
    """
    if len(calls) > 1 and loop.active.agent.parallel_tool_calls:
        results = await _fork_join(loop, calls)
    else:
        results = [await execute_call(loop, call) for call in calls]
    return [
        Message("tool", result, tool_call_id=call.id, name=call.name)
        for call, result in zip(calls, results, strict=True)
    ]


async def _fork_join(loop: LoopContext, calls: Sequence[ToolCall]) -> list[str]:
    catalog = loop.active.agent.catalog
    transfers = [i for i, call in enumerate(calls) if _kind(catalog, call) == TOOL_TYPE_HANDOFF]
    others = [i for i in range(len(calls)) if i not in transfers]
    singles = [spawn_call(execute_call(loop, calls[i])) for i in others]
    ordered = spawn_call(_in_order(loop, [calls[i] for i in transfers])) if transfers else None
    tasks: list[asyncio.Task[Any]] = [*singles, *([ordered] if ordered is not None else [])]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        failed = next((task for task in tasks if task.done() and _raised(task)), None)
        if failed is not None:
            await cancel_and_wait(tasks)
            failed.result()  # re-raises its exception: a stop (OnFailure.RAISE), a BaseException
    except BaseException:
        # A cancellation of the round, a stop or a bug: whatever ends the round, no sibling call may
        # keep running (or keep its spans open) behind it.
        await cancel_and_wait(tasks)
        _collect(tasks)
        raise
    results = [""] * len(calls)
    for index, task in zip(others, singles, strict=True):
        results[index] = task.result()
    if ordered is not None:
        for index, result in zip(transfers, ordered.result(), strict=True):
            results[index] = result
    return results


def _raised(task: asyncio.Task[Any]) -> bool:
    return task.cancelled() or task.exception() is not None


def _collect(tasks: list[asyncio.Task[Any]]) -> None:
    """Retrieve the siblings' exceptions: the first one is re-raised, the others are its aftermath."""
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()


async def _in_order(loop: LoopContext, calls: Sequence[ToolCall]) -> list[str]:
    return [await execute_call(loop, call) for call in calls]


def _kind(catalog: dict[str, ToolEntry], call: ToolCall) -> str | None:
    entry = catalog.get(call.name)
    return entry.kind if entry is not None else None


async def execute_call(loop: LoopContext, call: ToolCall) -> str:
    """Run one tool call and return the text the model reads."""
    entry = loop.active.agent.catalog.get(call.name)
    if entry is None:
        return _refuse(loop, call, CODE_UNKNOWN_TOOL, f"no tool named {call.name!r}")
    if entry.kind == TOOL_TYPE_DELEGATE:
        return await run_delegation(loop, call, entry)
    if entry.kind == TOOL_TYPE_HANDOFF:
        return await run_transfer(loop, call, entry)
    if call.name not in loop.active.surface.names:
        return _refuse(loop, call, CODE_TOOL_FORBIDDEN, f"{call.name!r} is outside this agent's tool surface")
    return await run_function(loop, call, entry)


def _refuse(loop: LoopContext, call: ToolCall, code: str, detail: str) -> str:
    obs = loop.turn.obs
    span = start_tool_span(loop, call, TOOL_TYPE_FUNCTION)
    result = tool_error(call.name, code, detail)
    obs.end_tool(span, result=result, error_type=code, error_message=detail)
    return result


async def run_function(loop: LoopContext, call: ToolCall, entry: ToolEntry) -> str:
    """Run a function tool inside its `execute_tool` span, ended on every way out."""
    obs = loop.turn.obs
    span = start_tool_span(loop, call, TOOL_TYPE_FUNCTION)
    assert entry.tool is not None
    token = obs.activate(span)
    try:
        result, error_type, message, _ = await invoke_tool(entry.tool, call)
    except BaseException as exc:  # a cancellation of the work, or a BaseException passing through
        obs.end_tool(span, error_type=exit_error_type(exc), error_message=type(exc).__name__)
        raise
    finally:
        obs.deactivate(token)
    obs.end_tool(span, result=result, error_type=error_type, error_message=message)
    return result
