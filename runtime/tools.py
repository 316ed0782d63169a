"""Function tools: a Python callable the model can call, with its JSON schema and argument checks.

    @function_tool
    def lookup_invoice(invoice_id: str) -> str:
        \"\"\"Find an invoice by id.\"\"\"
        ...

The schema comes from the signature (through a pydantic model, so nested types work). Arguments
the model sends are parsed and validated before the call; malformed ones raise
`ToolArgumentsError`, which the executor turns into a tool result the model can read.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from janux.runtime.model import ToolSpec
from janux.runtime.tool_arguments import ToolArgumentsError, parse_json_object

__all__ = ["Tool", "ToolArgumentsError", "function_tool", "make_tool", "result_text"]


@dataclass(frozen=True, slots=True)
class Tool:
    """A function tool as the runtime runs it."""

    name: str
    """Tool name the model calls."""
    description: str
    """What the tool does, for the model."""
    parameters: dict[str, Any]
    """JSON Schema of the arguments."""
    function: Callable[..., Any]
    """The callable; sync or async, called with keyword arguments."""
    validator: type[BaseModel] | None = None
    """Validates arguments (built from the signature); `None` passes the JSON object through."""
    spec: ToolSpec = field(init=False, repr=False, compare=False)
    """The tool as shown to the model."""

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip():
            raise ValueError("name: a tool needs a non-empty name")
        object.__setattr__(self, "spec", ToolSpec(self.name, self.description, self.parameters))

    def parse_arguments(self, arguments: str) -> dict[str, Any]:
        """Keyword arguments from the model's raw JSON; raises `ToolArgumentsError` naming the problem."""
        raw = parse_json_object(arguments)
        if self.validator is None:
            return raw
        try:
            checked = self.validator.model_validate(raw)
        except ValidationError as exc:
            raise ToolArgumentsError(describe_validation_error(exc)) from None
        return {name: getattr(checked, name) for name in type(checked).model_fields}

    async def invoke(self, arguments: str) -> str:
        """Validate `arguments`, call the function, and return its result as text."""
        kwargs = self.parse_arguments(arguments)
        result = self.function(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result_text(result)


def result_text(result: Any) -> str:
    """A tool's return value as the text the model reads (JSON unless it is already a string)."""
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    return json.dumps(result, default=str, ensure_ascii=False)


def describe_validation_error(exc: ValidationError) -> str:
    """`field: message; ...` for every error of a pydantic validation."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _arguments_model(fn: Callable[..., Any], tool_name: str) -> type[BaseModel]:
    hints = get_type_hints(fn)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    model_name = "".join(part.capitalize() for part in tool_name.replace(".", "_").split("_")) + "Arguments"
    model: type[BaseModel] = create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)
    return model


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


def _first_paragraph(doc: str | None) -> str:
    return inspect.cleandoc(doc).split("\n\n", 1)[0].strip() if doc else ""


def make_tool(fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> Tool:
    """A `Tool` from a plain function: schema from its signature, description from its docstring."""
    tool_name = name or fn.__name__
    model = _arguments_model(fn, tool_name)
    return Tool(
        name=tool_name,
        description=description if description is not None else _first_paragraph(fn.__doc__),
        parameters=_schema(model),
        function=fn,
        validator=model,
    )


@overload
def function_tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def function_tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...


def function_tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator (bare or with `name=`/`description=`) that turns a function into a `Tool`."""
    if fn is not None:
        return make_tool(fn, name=name, description=description)

    def wrap(inner: Callable[..., Any]) -> Tool:
        return make_tool(inner, name=name, description=description)

    return wrap
