"""Robust parsing of the JSON objects models return.

Models wrap JSON in Markdown fences, put a sentence before it, or leave a trailing
comma. ``parse_json_loose`` accepts those and nothing looser: the result must be
one JSON object, and every failure says what was wrong with the reply.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness_ros.errors import LLMError

__all__ = ["parse_json_loose"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_PREVIEW_CHARS = 120


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[:_PREVIEW_CHARS] + "..."


def _first_object(text: str) -> str | None:
    """The first balanced ``{...}`` span, string-literal aware."""
    start = text.find("{")
    while start != -1:
        depth = 0
        in_string = False
        escaped = False
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start : index + 1]
        start = text.find("{", start + 1)
    return None


def _loads_object(candidate: str) -> dict[str, Any] | None:
    for attempt in (candidate, _TRAILING_COMMA.sub(r"\1", candidate)):
        try:
            value = json.loads(attempt)
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, dict) else None
    return None


def parse_json_loose(text: str | None, *, what: str = "model reply") -> dict[str, Any]:
    """Parse one JSON object out of a model reply; raise ``LLMError`` naming the problem."""
    if text is None or not text.strip():
        raise LLMError(f"{what} is empty; expected a JSON object")
    candidates: list[str] = [text.strip()]
    candidates += [match.group(1).strip() for match in _FENCE.finditer(text)]
    embedded = _first_object(text)
    if embedded is not None:
        candidates.append(embedded)
    for candidate in candidates:
        parsed = _loads_object(candidate)
        if parsed is not None:
            return parsed
    try:
        top = json.loads(text)
    except json.JSONDecodeError:
        top = None
    if top is not None:
        raise LLMError(f"{what} is JSON {type(top).__name__}, not an object: {_preview(text)!r}")
    if embedded is None:
        raise LLMError(f"{what} contains no JSON object: {_preview(text)!r}")
    raise LLMError(f"{what} has a malformed JSON object: {_preview(embedded)!r}")
