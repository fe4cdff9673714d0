"""What FileMemory refuses to learn, as small, extensible rule lists.

``TransientRule``: text that only made sense during one run (object instance ids
like ``cup_2``, "currently", "this run", image payloads, a report of what the run did).
``DEFAULT_POISONING_RULES``: text that tries to switch off a safety mechanism ("skip the clearance check",
"approval is already granted", "ignore your instructions"): the classifier in
``guard.py`` plus markup and prompt-override patterns. Memory is data, never authority, so such entries are
refused even when they look like preferences. Deployments extend either list:

    FileMemory(root, transient_rules=(*DEFAULT_TRANSIENT_RULES,
                                      TransientRule.of("aisle", r"\\baisle \\d+\\b")))

The evidence rules check a lesson against the completed trajectory: only an
evaluator verdict counts as confirmation, never the tool's own report, and only a
call that ran on the robot counts as a failure (an executed call whose result is
``success: false``, or an evaluator's failure verdict). A call refused before it ran
(argument validation, a safety block, a denied approval, a missing server: the event
carries ``refusal``, or its result ``blocked_by`` or ``refusal``) is a refusal, not a failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from harness_ros.memory.guard import WEAKENING_RULES, GuardVerdict, fold, hold_reason
from harness_ros.trajectory import TrajectoryStep

__all__ = [
    "DEFAULT_POISONING_RULES",
    "DEFAULT_TRANSIENT_RULES",
    "TextRule",
    "TransientRule",
    "first_match",
    "has_confirmed_success",
    "has_failure_then_confirmed_success",
    "is_refusal",
    "refusals_of",
    "screen",
]


@dataclass(frozen=True)
class TransientRule:
    """A named pattern; an entry whose text matches it is rejected with rule ``<kind>:<name>``."""

    name: str
    pattern: re.Pattern[str]

    @classmethod
    def of(cls, name: str, regex: str, flags: int = re.IGNORECASE) -> TransientRule:
        return cls(name, re.compile(regex, flags))

    def matches(self, text: str) -> bool:
        return self.pattern.search(text) is not None


DEFAULT_TRANSIENT_RULES: tuple[TransientRule, ...] = (
    # cup_2, red_mug_14: ids the perception stack gave to one sighting.
    TransientRule.of("instance_id", r"\b[a-z][a-z0-9]*(?:_[a-z][a-z0-9]*)*_\d+\b"),
    TransientRule.of("uuid", r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
    TransientRule.of("currently", r"\bcurrently\b"),
    TransientRule.of("right_now", r"\bright now\b"),
    TransientRule.of("at_the_moment", r"\bat the moment\b"),
    TransientRule.of("this_run", r"\bthis run\b"),
    TransientRule.of("this_time", r"\bthis time\b"),
    TransientRule.of("data_url", r"\bdata:[a-z]+/[a-z0-9.+-]+;base64,"),
    # The word, or a long run of mixed-case letters and digits (encoded bytes, not a word).
    TransientRule.of(
        "base64",
        r"(?i:\bbase64\b)|(?=[A-Za-z0-9+/]*\d)(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[a-z])"
        r"[A-Za-z0-9+/]{64,}={0,2}",
        flags=0,
    ),
    TransientRule.of("image_data", r"\bimage (?:data|bytes|payload)\b"),
    # A report of what this run did, not what to do: the 1.5B's consolidations wrote
    # "Successfully picked the red cup." and "The operator provided a clear and concise
    # goal, and the tool executed it successfully." as success lessons, and a later task
    # ended with that sentence turned around as its report.
    TransientRule.of("run_report", r"^\W*successfully \w+(?: \w+){0,6}\W*$"),
    TransientRule.of("operator_report", r"\bthe operator (?:provided|gave) (?:a |an |the )?clear\b"),
    TransientRule.of(
        "tool_report", r"\bthe tool (?:executed|performed|completed) (?:it |the \w+ )?successfully\b"
    ),
)


class TextRule(Protocol):
    """Anything with a ``name`` and ``matches(text)``: a ``TransientRule`` or a guard ``ClauseRule``."""

    @property
    def name(self) -> str: ...

    def matches(self, text: str) -> bool: ...


DEFAULT_POISONING_RULES: tuple[TextRule, ...] = (
    *WEAKENING_RULES,
    # Markup that could close or fake the <memory> block the model reads (escaped on
    # rendering too; refusing it keeps MEMORY.md readable as plain text).
    TransientRule.of("markup", r"<\s*/?\s*[a-z][\w:-]*(?:\s[^<>]*)?/?\s*>|<!--"),
    TransientRule.of(
        "override_instructions",
        r"\b(?:ignore|disregard|forget|override)\b[^.;]{0,40}?"
        r"\b(?:instructions?|system prompt|rules|guidelines|previous|prior)\b",
    ),
)
"""The weakening guard's rules (``harness_ros.memory.guard``), then markup and prompt override."""


def first_match(rules: Iterable[TextRule], text: str) -> TextRule | None:
    """The first rule matching ``text`` as written or as read (``guard.fold``: invisible
    characters removed, look-alike letters folded), or None."""
    rules = tuple(rules)
    for candidate in dict.fromkeys((text, fold(text))):
        for rule in rules:
            if rule.matches(candidate):
                return rule
    return None


def screen(text: str, rules: Iterable[TextRule] = DEFAULT_POISONING_RULES) -> GuardVerdict:
    """The memory guard over any model-written text bound for a later prompt (a ledger
    summary, an earlier task's report): ``refuse`` with the poisoning rule that fired,
    ``hold`` with the reason the guard cannot read it (``guard.hold_reason``), or ``accept``."""
    rule = first_match(rules, text)
    if rule is not None:
        return GuardVerdict("refuse", rule.name)
    reason = hold_reason(text)
    return GuardVerdict("hold", reason) if reason is not None else GuardVerdict("accept")


def is_refusal(step: TrajectoryStep) -> bool:
    """Whether the step is a call refused before it ran (never failure evidence)."""
    return step.refused


def refusals_of(steps: Sequence[TrajectoryStep], tool: str | None = None) -> list[TrajectoryStep]:
    """The refused calls (of ``tool``, or of every tool) in the trajectory."""
    return [step for step in steps if step.refused and (tool is None or step.tool == tool)]


def has_confirmed_success(steps: Sequence[TrajectoryStep], tool: str) -> bool:
    """An evaluator verdict ``success`` for ``tool`` somewhere in the trajectory."""
    return any(step.tool == tool and step.confirmed for step in steps)


def has_failure_then_confirmed_success(steps: Sequence[TrajectoryStep], tool: str) -> bool:
    """An executed failure of ``tool`` (or a failure verdict) later followed by an
    evaluator-confirmed success of the same tool; refusals do not count
    (``TrajectoryStep.failed``)."""
    failed = False
    for step in steps:
        if step.tool != tool:
            continue
        if failed and step.confirmed:
            return True
        if step.failed:
            failed = True
    return False
