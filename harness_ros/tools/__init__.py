"""Tools: specs, the result envelope, the registry that validates and runs calls, and
the built-in skill tools."""

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
from harness_ros.tools.skill_tools import (
    LOAD_SKILL,
    LOAD_SKILL_RESOURCE,
    LoadSkillResourceTool,
    LoadSkillTool,
    skill_tools,
)
from harness_ros.tools.validation import ArgumentValidator, check_spec

__all__ = [
    "EXPERIENCE_HEADING",
    "LOAD_SKILL",
    "LOAD_SKILL_RESOURCE",
    "ArgumentValidator",
    "CancelToken",
    "FeedbackSink",
    "FunctionTool",
    "LoadSkillResourceTool",
    "LoadSkillTool",
    "Tool",
    "ToolRegistry",
    "ToolSpec",
    "check_spec",
    "describe_spec",
    "failure",
    "infer_schema",
    "normalize_envelope",
    "skill_tools",
    "success",
    "tool",
]
