"""Plain Python functions as tools (tests, simulator helpers, small built-ins).

The function receives the validated arguments as keywords. If its signature names
``cancel`` or ``feedback``, the harness's CancelToken and feedback sink are passed too.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from harness_ros.errors import ToolError
from harness_ros.tools.contracts import CancelToken, FeedbackSink, ToolSpec

__all__ = ["FunctionTool", "infer_schema", "tool"]

_INJECTED = ("cancel", "feedback")
_JSON_TYPES: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


class FunctionTool:
    """A ``Tool`` backed by ``fn(**arguments) -> envelope``."""

    def __init__(self, spec: ToolSpec, fn: Callable[..., dict[str, Any]]) -> None:
        parameters = inspect.signature(fn).parameters
        self.spec = spec
        self._fn = fn
        self._injected = tuple(name for name in _INJECTED if name in parameters)
        properties = spec.input_schema.get("properties")
        clash = set(self._injected) & set(properties if isinstance(properties, dict) else {})
        if clash:
            msg = f"tool {spec.name!r}: argument names {sorted(clash)!r} are reserved for the harness"
            raise ToolError(msg)

    def execute(
        self,
        arguments: dict[str, Any],
        *,
        cancel: CancelToken,
        feedback: FeedbackSink | None = None,
    ) -> dict[str, Any]:
        extra: dict[str, Any] = {"cancel": cancel, "feedback": feedback}
        return self._fn(**arguments, **{name: extra[name] for name in self._injected})

    def __repr__(self) -> str:
        return f"FunctionTool({self.spec.name!r})"


def tool(
    name: str | None = None,
    *,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    **flags: Any,
) -> Callable[[Callable[..., dict[str, Any]]], FunctionTool]:
    """Decorator: ``@tool(physical=True)`` turns a function into a ``FunctionTool``.

    Name defaults to the function name, description to its docstring, and the input
    schema is inferred from bool/int/float/str parameters (no default -> required).
    ``flags`` are the remaining ``ToolSpec`` fields.
    """

    def wrap(fn: Callable[..., dict[str, Any]]) -> FunctionTool:
        spec = ToolSpec(
            name=name or fn.__name__,
            description=description or inspect.cleandoc(fn.__doc__ or "").strip(),
            input_schema=input_schema if input_schema is not None else infer_schema(fn),
            **flags,
        )
        return FunctionTool(spec, fn)

    return wrap


def infer_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """A strict object schema from a function's scalar keyword parameters."""
    hints = typing.get_type_hints(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.name in _INJECTED:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ToolError(f"function {fn.__name__!r}: parameter {param.name!r} cannot take a JSON argument")
        json_type = _JSON_TYPES.get(hints.get(param.name))
        if json_type is None:
            msg = (
                f"function {fn.__name__!r}: cannot infer a JSON type for parameter {param.name!r}; "
                "pass input_schema"
            )
            raise ToolError(msg)
        properties[param.name] = {"type": json_type}
        if param.default is param.empty:
            required.append(param.name)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
