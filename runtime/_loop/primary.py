"""The primary executor: runs a plain function tool and turns every failure into a readable result.

Used for the function tools on a loop's surface and for FALLBACK_TO_PRIMARY, where a delegation
that was denied or failed is handed, under the same name, to the caller's `fallback_tools` (or to
its `fallback_handler`, which serves every delegate tool that has no fallback tool).

A `CancelledError` that a tool raises while its task is not being cancelled (it awaited something
cancelled elsewhere) is that tool's failure, read by the model as `tool_error`; a real cancellation
of the work is re-raised.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import Any

from janux.runtime.catalog import tool_error
from janux.runtime.deadline import being_cancelled
from janux.runtime.definitions import FallbackHandler
from janux.runtime.errors import CODE_INVALID_ARGUMENTS, CODE_TOOL_ERROR
from janux.runtime.handoff_record import HandoffRecord
from janux.runtime.model import ToolCall
from janux.runtime.tools import Tool, ToolArgumentsError, result_text

Outcome = tuple[str, str | None, str | None]
"""(result text, `error.type` or None, status message or None)."""


async def invoke_tool(tool: Tool, call: ToolCall) -> Outcome:
    """Call `tool` with the call's arguments; never raises but a cancellation of the work."""
    try:
        return await tool.invoke(call.arguments), None, None
    except ToolArgumentsError as exc:
        return tool_error(call.name, CODE_INVALID_ARGUMENTS, str(exc)), CODE_INVALID_ARGUMENTS, str(exc)
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
        return result_text(result), None, None
    except asyncio.CancelledError as exc:
        if being_cancelled():
            raise
        return _failed(tool, exc)
    except Exception as exc:
        return _failed(tool, exc)


def _failed(tool: str, exc: BaseException) -> Outcome:
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    # The status message names the exception class only: its text may carry content.
    return tool_error(tool, CODE_TOOL_ERROR, detail), CODE_TOOL_ERROR, type(exc).__name__
