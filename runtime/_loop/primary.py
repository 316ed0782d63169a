"""The primary executor: runs a plain function tool and turns every failure into a readable result.

Used for the function tools on a loop's surface and for FALLBACK_TO_PRIMARY, where a delegation
that was denied or failed is handed, under the same name, to the caller's `fallback_tools`.
"""

from __future__ import annotations

from janux.runtime.catalog import tool_error
from janux.runtime.errors import CODE_INVALID_ARGUMENTS, CODE_TOOL_ERROR
from janux.runtime.model import ToolCall
from janux.runtime.tools import Tool, ToolArgumentsError


async def invoke_tool(tool: Tool, call: ToolCall) -> tuple[str, str | None, str | None]:
    """(result text, error.type, status message) of calling `tool`; never raises but cancellation."""
    try:
        return await tool.invoke(call.arguments), None, None
    except ToolArgumentsError as exc:
        return tool_error(call.name, CODE_INVALID_ARGUMENTS, str(exc)), CODE_INVALID_ARGUMENTS, str(exc)
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}"
        # The status message names the exception class only: its text may carry content.
        return tool_error(call.name, CODE_TOOL_ERROR, detail), CODE_TOOL_ERROR, type(exc).__name__
