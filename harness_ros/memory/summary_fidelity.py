"""Does a ledger summary keep what its lessons say? And the lessons as written, when not.

A small model summarising a ledger can turn ``After "object out of reach": navigate_to ...
then pick_object again succeeded.`` into "the robot was unable to reach the object again"
(measured with the local 1.5B, BENCHMARKS.md section 9): the reason the lesson quotes and
the calls it names are gone, and the tool description now teaches the opposite. What a
lesson quotes (the failure reason a later result will repeat) and the tools it names (what
to call) are the parts a model can act on, so a summary must keep each of them, and may
not repeat a sentence. A summary that does not is replaced by the lessons themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = ["kept_items", "summary_problems", "verbatim_summary"]

_QUOTED = re.compile(r"[\"\u201c]([^\"\u201c\u201d]{2,80})[\"\u201d]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def kept_items(lessons: Iterable[str], tool_names: Iterable[str]) -> list[str]:
    """What a summary of ``lessons`` must still say: each quoted phrase and each tool named."""
    tools = set(tool_names)
    items: list[str] = []
    seen: set[str] = set()
    for lesson in lessons:
        found = [match.group(1).strip() for match in _QUOTED.finditer(lesson)]
        found += [word for word in _WORD.findall(lesson) if word in tools]
        for item in found:
            if item and item.lower() not in seen:
                seen.add(item.lower())
                items.append(item)
    return items


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9_' ]", " ", text.lower()).split())


def summary_problems(summary: str, lessons: Sequence[str], tool_names: Iterable[str]) -> list[str]:
    """What ``summary`` lost or garbled of ``lessons`` (empty when it is faithful)."""
    problems: list[str] = []
    text = _normal(summary)
    missing = [item for item in kept_items(lessons, tool_names) if _normal(item) not in text]
    if missing:
        problems.append("it leaves out " + ", ".join(f'"{item}"' for item in missing))
    seen: set[str] = set()
    for sentence in _SENTENCE_END.split(summary.strip()):
        key = _normal(sentence)
        if key and key in seen:
            problems.append(f"it repeats the sentence {sentence.strip()!r}")
            break
        seen.add(key)
    return problems


def verbatim_summary(
    ledger: Mapping[str, Sequence[str]], *, max_chars: int, accepted: Callable[[str], bool]
) -> str:
    """The ledger's own lessons as the summary: failures first (what to do when a call
    fails), newest first within each outcome, each once, as many whole lessons as fit in
    ``max_chars``; a lesson the memory guard does not accept is left out."""
    parts: list[str] = []
    used = 0
    seen: set[str] = set()
    for outcome, heading in (("failure", "When it failed:"), ("success", "What worked:")):
        chosen: list[str] = []
        for written in reversed(ledger.get(outcome, ())):
            lesson = " ".join(written.split())
            key = _normal(lesson)
            if not key or key in seen or not accepted(lesson):
                continue
            cost = len(lesson) + 1 + (0 if chosen else len(heading) + 1)
            if used + cost > max_chars:
                continue
            seen.add(key)
            chosen.append(lesson)
            used += cost
        if chosen:
            parts.append(" ".join([heading, *chosen]))
    return " ".join(parts)
