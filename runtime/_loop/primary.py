"""The primary executor: runs a plain function tool and turns every failure into a readable result.

Used for the function tools on a loop's surface and for FALLBACK_TO_PRIMARY, where a delegation
that was denied or failed is handed, under the same name, to the caller's `fallback_tools` (or to
its `fallback_handler`, which serves every delegate tool that has no fallback tool).

A `CancelledError` that a tool raises while its work is not being cancelled (it awaited something
cancelled elsewhere, or cancelled the task of its own call in a parallel round) is that tool's
failure, read by the model as `tool_error`; a real cancellation of the work is re-raised.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import Any, NamedTuple

from janux.runtime.catalog import tool_error
from janux.runtime.deadline import being_cancelled, forgive_cancellation
from janux.runtime.definitions import FallbackHandler
from janux.runtime.errors import CODE_INVALID_ARGUMENTS, CODE_TOOL_ERROR
from janux.runtime.handoff_record import HandoffRecord
from janux.runtime.model import ToolCall
from janux.runtime.tools import Tool, ToolArgumentsError, result_text


class Outcome(NamedTuple):
    """What a primary tool call gave."""

    result: str
    """The text the model reads."""
    error_type: str | None = None
    """`error.type` when it failed."""
    message: str | None = None
    """Span status message when it failed (never content: the exception class, or the argument
    problem)."""
    detail: str | None = None
    """What went wrong, as the model reads it (`ValueError: handler broke`, `query: Field required`)."""


async def invoke_tool(tool: Tool, call: ToolCall) -> Outcome:
    """Call `tool` with the call's arguments; never raises but a cancellation of the work."""
    try:
        return Outcome(await tool.invoke(call.arguments))
    except ToolArgumentsError as exc:
        detail = str(exc)
        result = tool_error(call.name, CODE_INVALID_ARGUMENTS, detail)
        return Outcome(result, CODE_INVALID_ARGUMENTS, detail, detail)
    except asyncio.CancelledError as exc:
        if being_cancelled():
            raise
        return _failed(call.name, exc)
    except Exception as exc:
        return _failed(call.name, exc)


async def invoke_fallback_handler(
    handler: FallbackHandler, record: HandoffRecord, arguments: Mapping[str, Any], tool: str
) -> Outcome:
    """Call the fallback handler for a refused delegation; never raises but a cancellation of the work."""
    try:
        result = handler(record, arguments)
        if inspect.isawaitable(result):
            result = await result
        return Outcome(result_text(result))
    except asyncio.CancelledError as exc:
        if being_cancelled():
            raise
        return _failed(tool, exc)
    except Exception as exc:
        return _failed(tool, exc)


def _failed(tool: str, exc: BaseException) -> Outcome:
    # A tool that cancelled its own task has failed; its task goes on, no longer marked cancelled.
    forgive_cancellation()
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    # The status message names the exception class only: its text may carry content.
    return Outcome(tool_error(tool, CODE_TOOL_ERROR, detail), CODE_TOOL_ERROR, type(exc).__name__, detail)
