"""The bounds every trajectory step is kept within, so the trajectory stays small enough
to send to the model before every decision (Task Notes) and at consolidation.

Each string is capped at ``MAX_STRING_CHARS``, image payloads are replaced by a marker,
containers keep their first ``_MAX_ITEMS`` items (and say how many more there were), and
only the newest ``MAX_STEPS`` steps and ``MAX_REVISIONS`` revisions are kept.

``compact_value`` is idempotent: a value already compacted comes back unchanged, so a
step built from a recorded (already bounded) step is byte for byte the same.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MAX_REVISIONS",
    "MAX_STEPS",
    "MAX_STRING_CHARS",
    "cap",
    "compact_value",
]

MAX_STEPS = 40
MAX_REVISIONS = 10
MAX_STRING_CHARS = 500
_MAX_ITEMS = 20
_MAX_DEPTH = 6
_IMAGE_MARKER = "<image omitted>"
_BASE64_RUN = re.compile(r"^[A-Za-z0-9+/]{256,}={0,2}$")
_MORE_ITEMS = re.compile(r"^\.\.\. \d+ more items$")
_MORE_KEYS = re.compile(r"^\d+ more keys$")


def cap(text: str) -> str:
    return text if len(text) <= MAX_STRING_CHARS else text[: MAX_STRING_CHARS - 3] + "..."


def _trimmed_list(value: list[Any] | tuple[Any, ...]) -> bool:
    """A list compaction already trimmed: the first items and the "... N more items" marker."""
    last = value[-1] if len(value) == _MAX_ITEMS + 1 else None
    return isinstance(last, str) and _MORE_ITEMS.match(last) is not None


def _trimmed_mapping(items: list[tuple[Any, Any]]) -> bool:
    if len(items) != _MAX_ITEMS + 1:
        return False
    key, value = items[-1]
    return key == "..." and isinstance(value, str) and _MORE_KEYS.match(value) is not None


def compact_value(value: Any, depth: int = 0) -> Any:
    """A JSON-safe, bounded copy: strings capped, images dropped, containers trimmed."""
    if isinstance(value, str):
        if value.startswith("data:") and ";base64," in value[:100]:
            return _IMAGE_MARKER
        if _BASE64_RUN.match(value) and len(set(value)) > 16:  # long, varied: encoded bytes
            return _IMAGE_MARKER
        return cap(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return _IMAGE_MARKER
    if depth >= _MAX_DEPTH:
        return cap(str(value))
    if isinstance(value, Mapping):
        items = list(value.items())
        if _trimmed_mapping(items):
            items = items[:_MAX_ITEMS]
            compact = {cap(str(key)): compact_value(item, depth + 1) for key, item in items}
            compact["..."] = value["..."]
            return compact
        compact = {cap(str(key)): compact_value(item, depth + 1) for key, item in items[:_MAX_ITEMS]}
        if len(items) > _MAX_ITEMS:
            compact["..."] = f"{len(items) - _MAX_ITEMS} more keys"
        return compact
    if isinstance(value, list | tuple):
        if _trimmed_list(value):
            return [*(compact_value(item, depth + 1) for item in value[:_MAX_ITEMS]), value[-1]]
        compact_list = [compact_value(item, depth + 1) for item in value[:_MAX_ITEMS]]
        if len(value) > _MAX_ITEMS:
            compact_list.append(f"... {len(value) - _MAX_ITEMS} more items")
        return compact_list
    return cap(str(value))
