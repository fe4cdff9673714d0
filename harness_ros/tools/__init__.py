"""Tools: specs, the result envelope, and the registry that validates and runs calls.

The built-in skill tools are in ``harness_ros.skills`` (skills build on tools, not back)."""

from __future__ import annotations

from harness_ros.tools.contracts import (
    CancelToken,
    FeedbackSink,
    Tool,
    ToolSpec,
    failure,
    normalize_envelope,
    success,
)
from harness_ros.tools.function_tool import FunctionTool, infer_schema, tool
from harness_ros.tools.registry import EXPERIENCE_HEADING, ToolRegistry, describe_spec
from harness_ros.tools.validation import ArgumentValidator, check_spec

__all__ = [
    "EXPERIENCE_HEADING",
    "ArgumentValidator",
    "CancelToken",
    "FeedbackSink",
    "FunctionTool",
    "Tool",
    "ToolRegistry",
    "ToolSpec",
    "check_spec",
    "describe_spec",
    "failure",
    "infer_schema",
    "normalize_envelope",
    "success",
    "tool",
]
