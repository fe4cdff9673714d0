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
from collections.abc import Iterable, Sequence

from harness_ros.trajectory.reasons import failure_phrases

__all__ = ["items_about", "left_after", "left_of", "named_calls", "shortened"]

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


def shortened(item: str) -> str:
    """An item as a note shows it: at most ``_MAX_ITEM_CHARS`` characters."""
    return item if len(item) <= _MAX_ITEM_CHARS else f"{item[:_MAX_ITEM_CHARS]}..."


def items_about(text: str, reason: str, *, limit: int = 2) -> list[str]:
    """Up to ``limit`` list items of ``text`` that name a failure phrase of ``reason``.

    This reads the robot's failure reason and text people or a model wrote (a skill's
    body, a model's or an operator's ledger line), never English the harness wrote: what
    the harness learnt itself is matched by the failure its lesson's data holds
    (``memory.lessons.RecoveryLesson.failure``)."""
    phrases = failure_phrases(reason)
    if not phrases:
        return []
    found = []
    for item in _items(text):
        folded = item.lower()
        if any(phrase in folded for phrase in phrases):
            found.append(shortened(item))
            if len(found) >= limit:
                break
    return found


def named_calls(item: str, tools: Sequence[str]) -> list[str]:
    """The offered ``tools`` ``item`` names, in the order it names them: a tool named again
    right after itself counts once, unless a "then" stands between them ("navigate_to the
    area on the way, then navigate_to the target" is two drives)."""
    names = sorted(tools, key=len, reverse=True)
    pattern = (
        re.compile("|".join(rf"(?<![\w-]){re.escape(name)}(?![\w-])" for name in names)) if names else None
    )
    named: list[str] = []
    end = 0
    for found in pattern.finditer(item) if pattern is not None else ():
        between = item[end : found.start()]
        if not named or named[-1] != found.group(0) or re.search(r"\bthen\b", between):
            named.append(found.group(0))
        end = found.end()
    return named


def left_of(item: str, tools: Sequence[str], done: Sequence[str]) -> list[str]:
    """The calls ``item`` names (offered ``tools``, in the order it names them) that are
    left once the calls ``done`` since the failure are taken off its front; [] when none
    of them was done. The 1.5B, with "navigate_to the object itself (...), then pick_object
    again" in view and the navigate_to done, drove there again (p 0.69); told what was left
    of it, it picked (p 0.71)."""
    return left_after(named_calls(item, tools), done)


def left_after(named: Sequence[str], done: Sequence[str]) -> list[str]:
    """The calls of ``named`` left once the calls ``done`` are taken off its front; [] when
    none of them was done."""
    at = 0
    for call in done:
        if at < len(named) and named[at] == call:
            at += 1
    return list(named[at:]) if at else []
