"""The lines of a text (a loaded skill, a tool's experience ledger) that speak to one failure.

A small model reads the end of its prompt best: after a failed pick, the 1.5B with
recover-failed-grasp loaded in its system message drove back to the same surface
(``red_cup`` as the target: p 0.06); with the skill's line about that failure's reason
repeated just before its decision, it drove to the object (p 0.97). The match is literal:
a failure reason is ``<what>: <detail>`` clauses (``action server '/arm/pick_object'
aborted the goal: object out of reach: 1.01 m > 0.75 m``), and an item matches when it
contains one of the short clauses made of words (``object out of reach``,
``trajectory.reasons``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from harness_ros.trajectory.reasons import failure_phrases

__all__ = ["items_about"]

_ITEM_START = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_MAX_ITEM_CHARS = 400


def _items(text: str) -> Iterable[str]:
    """List items of Markdown ``text``, each with its continuation lines, on one line."""
    item: list[str] = []
    for line in text.splitlines():
        if _ITEM_START.match(line):
            if item:
                yield " ".join(item)
            item = [_ITEM_START.sub("", line).strip()]
        elif item and line.startswith((" ", "\t")) and line.strip():
            item.append(line.strip())
        elif item:
            yield " ".join(item)
            item = []
    if item:
        yield " ".join(item)


def items_about(text: str, reason: str, *, limit: int = 2) -> list[str]:
    """Up to ``limit`` list items of ``text`` that name a failure phrase of ``reason``."""
    phrases = failure_phrases(reason)
    if not phrases:
        return []
    found = []
    for item in _items(text):
        folded = item.lower()
        if any(phrase in folded for phrase in phrases):
            found.append(item if len(item) <= _MAX_ITEM_CHARS else f"{item[:_MAX_ITEM_CHARS]}...")
            if len(found) >= limit:
                break
    return found
