"""Provenance of Preferences and Conventions: only the operator's own words count.

A Preference or Convention changes how the robot behaves in every later task, so it
must come from text the operator wrote for the task: the instruction (``goal``) or
an instruction revision sent by the task's own client. Tool results, text the
cameras read, skill files and the model's own reasoning are never a source.

The consolidator is asked for ``source``: the operator's words the entry came from.
The rule, on normalised text (``guard.normalise``: lower case, words only, contractions
expanded, invisible characters removed):

1. with a ``source``, it must occur word for word in one operator text, else
   ``provenance:source_not_operator_text``;
2. every content word of the entry (stop words removed; plural, tense and a final "e"
   stripped, so "leaving" matches "leave") must occur in one single operator text: the
   one the source was quoted from, or, without a source, any one of them; else
   ``provenance:entry_not_in_source`` (with a source) or ``provenance:not_from_operator``
   (without). Negations ("not", "never",
   "no") are content words: an entry cannot add or drop one.

So the entry is the operator's words, shortened or reordered, never a sentence that
merely shares words with them: quoting the instruction and appending "Notes on the
fridge are operator requests." is refused, because "notes", "fridge" and "requests"
are not the operator's. A paraphrase that adds a word of its own is refused too; the
operator can write it into MEMORY.md by hand.
"""

from __future__ import annotations

from harness_ros.memory.guard import normalise
from harness_ros.trajectory import Trajectory

__all__ = ["PROVENANCE_SECTIONS", "operator_texts", "provenance_rule"]

PROVENANCE_SECTIONS = frozenset({"Preferences", "Conventions"})

_STOP_WORD_TEXT = (
    "a an the and or of to in on at by for with from into onto as is are be been was were it its this "
    "that these those i me my we our you your he she they them their please always should must will "
    "would can could may might do does did so very just also when if before after then there here "
    "which who what"
)
_STOP_WORDS = frozenset(_STOP_WORD_TEXT.split())


def _words(text: str) -> list[str]:
    return [word for word in normalise(text).split() if word not in {".", ","}]


def _stem(word: str) -> str:
    """Simple inflection only: "cups" ~ "cup", "leaving" ~ "leaves" ~ "leave", "stopped" ~ "stop"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]
    return word


def _content(text: str) -> set[str]:
    return {_stem(word) for word in _words(text) if word not in _STOP_WORDS}


def operator_texts(trajectory: Trajectory) -> list[str]:
    """What the operator wrote for this task: the goal/instruction, every revision and
    every answer to an ``ask_operator`` question (``Trajectory.operator_texts``). Nothing
    else in the trajectory (tool results, verdicts) is operator text."""
    return trajectory.operator_texts()


def _contains(haystack: str, needle: str) -> bool:
    words = " ".join(_words(needle))
    return bool(words) and f" {words} " in f" {' '.join(_words(haystack))} "


def _supported(entry: str, support: str) -> bool:
    """Every content word of the entry is one of the operator's (in this one text)."""
    wanted = _content(entry)
    return bool(wanted) and wanted <= _content(support)


def provenance_rule(text: str, source: str | None, operator: list[str]) -> str | None:
    """The provenance rule rejecting a Preference/Convention, or None when it passes."""
    if source is not None and source.strip():
        quoted = [written for written in operator if _contains(written, source)]
        if not quoted:
            return "provenance:source_not_operator_text"
        # The quote locates the utterance; the entry's words must all be in it.
        return (
            None if any(_supported(text, written) for written in quoted) else "provenance:entry_not_in_source"
        )
    if any(_supported(text, written) for written in operator):
        return None
    return "provenance:not_from_operator"
