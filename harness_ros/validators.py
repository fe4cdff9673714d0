"""Value rules shared by the config, the tools and memory: each is defined once here.

A leaf module (standard library only), so the config can use a rule without importing
the tools or memory packages, and memory can use it without importing the config.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["TOOL_NAME_PATTERN", "confidence_problem", "parse_path", "valid_tool_name"]

TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]+$")
"""A tool name: what the model calls, and the name of its ledger file (no path separator).
Matched with ``fullmatch`` (``$`` alone would let a trailing newline through)."""


def valid_tool_name(name: Any) -> bool:
    return isinstance(name, str) and TOOL_NAME_PATTERN.fullmatch(name) is not None


def confidence_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a confidence or a confidence threshold, or None.

    A confidence is a finite number in [0, 1]; a bool is not a number here (``True`` would
    otherwise pass as 1)."""
    number = not isinstance(value, bool) and isinstance(value, int | float)
    if number and math.isfinite(value) and 0.0 <= value <= 1.0:
        return None
    return f"must be a finite number in [0, 1], got {value!r}"


_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")


def parse_path(path: str) -> list[str | int]:
    """A goal or request field path: ``trajectory.points[0].positions`` ->
    ``["trajectory", "points", 0, "positions"]``. Raises ValueError on a malformed one."""
    if not isinstance(path, str) or not path:
        raise ValueError("empty field path")
    parts: list[str | int] = []
    for segment in path.split("."):
        match = _SEGMENT.match(segment)
        if match is None:
            raise ValueError(f"malformed field path segment {segment!r}")
        parts.append(match.group(1))
        parts.extend(int(index) for index in re.findall(r"\[(\d+)\]", match.group(2)))
    return parts
