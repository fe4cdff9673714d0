"""JSON Schema checks for tool specs (at start-up) and tool arguments (before each call).

Argument problems are reported as one short sentence the model can act on: the
argument path and what is wrong with it, never a Python traceback.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing.exceptions import Unresolvable

from harness_ros.errors import ToolError
from harness_ros.tools.contracts import ToolSpec
from harness_ros.validators import TOOL_NAME_PATTERN, valid_tool_name

__all__ = [
    "MAX_TOOL_NAME_LENGTH",
    "TOOL_NAME_PATTERN",
    "ArgumentValidator",
    "check_spec",
    "format_path",
]

MAX_TOOL_NAME_LENGTH = 64
_MAX_REPORTED_ERRORS = 5


def format_path(parts: Iterable[Any]) -> str:
    """``("target", 0, "x")`` -> ``"target[0].x"``; the empty path is ``"<arguments>"``."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<arguments>"


_UNUSABLE_SCHEMA_ERRORS = (Unresolvable, ValueError, ArithmeticError, RecursionError)
"""What jsonschema raises (instead of reporting) for unresolvable refs and absurd numbers."""


def check_spec(spec: ToolSpec) -> None:
    """Reject a spec the model or the safety hooks could not use (raised at start-up)."""
    name = spec.name
    if not valid_tool_name(name) or len(name) > MAX_TOOL_NAME_LENGTH:
        msg = (
            f"invalid tool name {name!r}: use 1-{MAX_TOOL_NAME_LENGTH} characters "
            "of letters, digits, '_', '.' or '-'"
        )
        raise ToolError(msg)
    if not spec.description.strip():
        raise ToolError(f"tool {name!r} has an empty description")
    schema = spec.input_schema
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ToolError(f"tool {name!r}: input_schema must be a JSON Schema with type 'object'")
    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as err:
        msg = f"tool {name!r}: input_schema is not a valid JSON Schema: {err.message}"
        raise ToolError(msg) from None
    try:  # a $ref that resolves nowhere only fails when used: probe once at start-up
        list(validator_for(schema, default=Draft202012Validator)(schema).iter_errors({}))
    except _UNUSABLE_SCHEMA_ERRORS as err:
        raise ToolError(f"tool {name!r}: input_schema cannot be used: {err}") from None
    if spec.evaluated and not (spec.post_condition or "").strip():
        raise ToolError(f"tool {name!r} is evaluated but has no post_condition")
    # A misspelt argument name would silently switch the translation clamp off.
    properties = schema.get("properties") or {}
    for role, argument in (
        ("distance_argument", spec.distance_argument),
        ("direction_argument", spec.direction_argument),
    ):
        if argument is None:
            continue
        if not spec.base_motion:
            raise ToolError(f"tool {name!r}: {role} is only meaningful with base_motion")
        if argument not in properties:
            msg = f"tool {name!r}: {role} {argument!r} is not a property of its input_schema"
            raise ToolError(msg)


class ArgumentValidator:
    """Validates the arguments of one tool against its (already checked) input schema."""

    def __init__(self, spec: ToolSpec) -> None:
        cls = validator_for(spec.input_schema, default=Draft202012Validator)
        self._name = spec.name
        self._validator: Validator = cls(spec.input_schema)

    def problem(self, arguments: Any) -> str | None:
        """None when valid, else a sentence naming each bad argument path and the problem."""
        if not isinstance(arguments, dict):
            return (
                f"invalid arguments for {self._name!r}: expected a JSON object, "
                f"got {type(arguments).__name__}"
            )
        bad_number = _non_finite_path(arguments)
        if bad_number is not None:
            return f"invalid arguments for {self._name!r}: {bad_number}: not a finite number"
        try:
            errors = sorted(self._validator.iter_errors(arguments), key=_error_order)
        except _UNUSABLE_SCHEMA_ERRORS as err:
            # An unresolvable $ref or a number the schema arithmetic cannot handle: refuse
            # the call (fail closed) with a reason, never raise into the harness.
            return f"invalid arguments for {self._name!r}: cannot be validated ({type(err).__name__}: {err})"
        if not errors:
            return None
        # One problem per argument path is enough for the model to fix the call.
        by_path: dict[str, str] = {}
        for error in errors:
            by_path.setdefault(format_path(error.absolute_path), _describe(error))
        details = [f"{path}: {message}" for path, message in by_path.items()]
        shown = "; ".join(details[:_MAX_REPORTED_ERRORS])
        more = len(details) - _MAX_REPORTED_ERRORS
        suffix = f" (and {more} more)" if more > 0 else ""
        return (
            f"invalid arguments for {self._name!r}: {shown}{suffix}{self._without_extras(arguments, errors)}"
        )

    def valid_without_extras(self, arguments: Any) -> dict[str, Any] | None:
        """The arguments without those the tool does not take, when those are their only
        problem and the call is valid without them; else None.

        For the model to make, never made for it: the server gets only what the model sent
        and the hooks checked. The 1.5B added the pick's ``held_object_id`` to a place, took
        the refusal for the task failing and ended it (eval run L)."""
        if not isinstance(arguments, dict) or _non_finite_path(arguments) is not None:
            return None
        try:
            errors = list(self._validator.iter_errors(arguments))
        except _UNUSABLE_SCHEMA_ERRORS:
            return None
        return self._kept_without_extras(arguments, errors)

    def _kept_without_extras(
        self, arguments: dict[str, Any], errors: list[ValidationError]
    ) -> dict[str, Any] | None:
        if not errors or not all(
            e.validator == "additionalProperties" and not e.absolute_path for e in errors
        ):
            return None
        properties = self._validator.schema.get("properties") or {}
        kept = {key: value for key, value in arguments.items() if key in properties}
        if kept == arguments or not self._validator.is_valid(kept):
            return None
        return kept

    def _without_extras(self, arguments: dict[str, Any], errors: list[ValidationError]) -> str:
        """The refusal's tail naming the valid call, when there is one."""
        kept = self._kept_without_extras(arguments, errors)
        if kept is None:
            return ""
        return f"; without them the call is valid: {self._name} {json.dumps(kept, ensure_ascii=False)}"


def _non_finite_path(value: Any, path: str = "") -> str | None:
    """Path of the first NaN or infinity: JSON Schema ranges do not exclude them."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "<root>"
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _non_finite_path(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def _error_order(err: ValidationError) -> tuple[str, str]:
    return (format_path(err.absolute_path), err.message)


def _describe(err: ValidationError) -> str:
    # jsonschema's messages quote the whole offending value; keep them short for the model.
    message = str(err.message)
    return message if len(message) <= 200 else message[:197] + "..."
