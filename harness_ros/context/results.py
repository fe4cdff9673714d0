"""Compact tool results: what a tool returned, bounded, as a ``tool`` message.

Tool results stay in the Accumulated context for the whole task, so they are
capped (strings, lists, nesting) and never carry bytes or images.
"""

from __future__ import annotations

import json
from typing import Any

from harness_ros.context.contracts import Message

__all__ = ["compact_value", "tool_message"]

MAX_STRING_CHARS = 1000
MAX_ITEMS = 20
MAX_DEPTH = 4


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit} chars cut]"


def compact_value(
    value: Any, *, max_chars: int = MAX_STRING_CHARS, max_items: int = MAX_ITEMS, depth: int = MAX_DEPTH
) -> Any:
    """A JSON-safe, bounded copy of ``value`` (bytes are replaced by their size)."""
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, str):
        return _cap(value, max_chars)
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes omitted>"
    if depth <= 0:
        return _cap(repr(value), 80)
    if isinstance(value, dict):
        items = list(value.items())
        out = {
            str(key): compact_value(item, max_chars=max_chars, max_items=max_items, depth=depth - 1)
            for key, item in items[:max_items]
        }
        if len(items) > max_items:
            out["_omitted_keys"] = len(items) - max_items
        return out
    if isinstance(value, list | tuple | set | frozenset):
        seq = list(value)
        out_list = [
            compact_value(item, max_chars=max_chars, max_items=max_items, depth=depth - 1)
            for item in seq[:max_items]
        ]
        if len(seq) > max_items:
            out_list.append(f"... {len(seq) - max_items} more items")
        return out_list
    return _cap(str(value), max_chars)


def tool_message(call_id: str, content: dict[str, Any]) -> Message:
    """A ``tool`` role message answering one tool call with a JSON envelope."""
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "content": json.dumps(content, ensure_ascii=False, sort_keys=True),
    }
