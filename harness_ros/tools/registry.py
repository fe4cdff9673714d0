"""The tool registry: the tools of one harness, their definitions for the model, and
the one execution path that validates arguments and forces results into the envelope."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from harness_ros.errors import ToolError
from harness_ros.tools.contracts import CancelToken, FeedbackSink, Tool, ToolSpec, failure, normalize_envelope
from harness_ros.tools.validation import ArgumentValidator, check_spec

__all__ = ["EXPERIENCE_HEADING", "ToolRegistry", "describe_spec", "model_schema"]

logger = logging.getLogger(__name__)

EXPERIENCE_HEADING = "Experience from earlier tasks:"
_MAX_EXCEPTION_TEXT = 300


def describe_spec(spec: ToolSpec) -> str:
    """The tool description the model reads: the author's text, then the flags that
    change how the call behaves."""
    # Short lines: every one is in every request (rule 3 of the system prompt says what an
    # evaluator's verdict means once, for all tools).
    lines = [spec.description.strip()]
    if spec.physical:
        lines.append("Physical: moves the robot.")
    if spec.base_motion:
        lines.append("Base motion: safety may shorten or refuse it.")
    if spec.requires_approval:
        lines.append("Needs operator approval: waits for one, refused without.")
    if spec.evaluated and spec.post_condition:
        # Rule 3 of the system prompt says a failed post-condition verdict is a failed action.
        lines.append(f"Post-condition: {spec.post_condition.strip()}")
        if spec.segment:
            lines.append("A 'process' verdict: the motion is progressing, call the tool again.")
    return "\n".join(lines)


class ToolRegistry:
    """Tools by name, in registration order (definitions must be byte-stable between
    turns: provider prompt caching depends on it)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, ArgumentValidator] = {}
        self._base_definitions: dict[str, dict[str, Any]] = {}
        for tool in tools:
            spec = getattr(tool, "spec", None)
            if not isinstance(spec, ToolSpec):
                raise ToolError(f"{type(tool).__name__!r} is not a tool: it has no ToolSpec 'spec'")
            check_spec(spec)
            if spec.name in self._tools:
                raise ToolError(f"duplicate tool name {spec.name!r}")
            self._tools[spec.name] = tool
            self._validators[spec.name] = ArgumentValidator(spec)
            self._base_definitions[spec.name] = _definition(spec)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def spec(self, name: str) -> ToolSpec | None:
        tool = self._tools.get(name)
        return tool.spec if tool is not None else None

    def specs(self) -> list[ToolSpec]:
        return [tool.spec for tool in self._tools.values()]

    def names(self) -> list[str]:
        return list(self._tools)

    def definitions(self, summaries: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """OpenAI-format function definitions; a tool-experience summary, when one exists,
        is appended to that tool's description. Fresh objects on every call."""
        summaries = summaries or {}
        result = []
        for name, base in self._base_definitions.items():
            offered = getattr(self._tools[name], "offered", None)
            if callable(offered) and not offered():
                continue  # a built-in with nothing to give now (recall_object, empty world)
            definition = copy.deepcopy(base)
            summary = (summaries.get(name) or "").strip()
            if summary:
                function = definition["function"]
                function["description"] = f"{function['description']}\n\n{EXPERIENCE_HEADING}\n{summary}"
            result.append(definition)
        return result

    def validate(self, name: str, arguments: Any) -> str | None:
        """None when ``arguments`` fit the tool's schema, else a message for the model."""
        validator = self._validators.get(name)
        if validator is None:
            return self._unknown(name)
        return validator.problem(arguments)

    def valid_without_extras(self, name: str, arguments: Any) -> dict[str, Any] | None:
        """``arguments`` without those tool ``name`` does not take, when that alone makes
        the call valid; else None (``ArgumentValidator.valid_without_extras``)."""
        validator = self._validators.get(name)
        return validator.valid_without_extras(arguments) if validator is not None else None

    def execute(
        self,
        name: str,
        arguments: Any,
        *,
        cancel: CancelToken,
        feedback: FeedbackSink | None = None,
    ) -> dict[str, Any]:
        """Validate, run and normalise. Never raises for tool-side faults: the model gets a
        failure envelope it can recover from."""
        tool = self._tools.get(name)
        if tool is None:
            return failure(self._unknown(name))
        problem = self.validate(name, arguments)
        if problem is not None:
            return failure(problem)
        if cancel.cancelled:
            return failure(f"tool {name!r} not started: {cancel.reason or 'cancelled'}")
        try:
            raw = tool.execute(dict(arguments), cancel=cancel, feedback=feedback)
        except Exception as err:  # a tool fault must become a result, not a crashed task
            logger.exception("tool %r raised %s", name, type(err).__name__)
            text = str(err).strip()[:_MAX_EXCEPTION_TEXT]
            detail = f": {text}" if text else ""
            return failure(f"tool {name!r} raised {type(err).__name__}{detail}")
        return normalize_envelope(raw)

    def _unknown(self, name: str) -> str:
        known = ", ".join(self._tools) or "none"
        return f"unknown tool {name!r}; known tools: {known}"


def _definition(spec: ToolSpec) -> dict[str, Any]:
    # A JSON round trip detaches the schema from the caller's dict and proves it serialises.
    try:
        parameters = json.loads(json.dumps(spec.input_schema, ensure_ascii=False))
    except (TypeError, ValueError) as err:
        raise ToolError(f"tool {spec.name!r}: input_schema is not JSON-serialisable: {err}") from None
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": describe_spec(spec),
            "parameters": model_schema(parameters),
        },
    }


_VALIDATION_ONLY = frozenset(
    {"minLength", "maxLength", "pattern", "minItems", "maxItems", "additionalProperties"}
)
"""Schema keywords the model-facing definition leaves out: the harness validates every call
against the full schema (``ArgumentValidator``) and refuses a violation with the reason, so
the model learns them where they matter, and they cost tokens in every request."""


def model_schema(schema: Any) -> Any:
    """The parameters schema as the model reads it: no validation-only keywords, and no
    ``default`` on a required property (it is never omitted)."""
    if isinstance(schema, list):
        return [model_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    needed = (
        frozenset(schema.get("required") or ()) if isinstance(schema.get("required"), list) else frozenset()
    )
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _VALIDATION_ONLY and not isinstance(value, dict):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {
                name: _without_default(model_schema(prop)) if name in needed else model_schema(prop)
                for name, prop in value.items()
            }
        else:
            out[key] = model_schema(value)
    return out


def _without_default(schema: Any) -> Any:
    if isinstance(schema, dict) and "default" in schema:
        return {key: value for key, value in schema.items() if key != "default"}
    return schema
