"""The consolidation decision: which proposed entries are accepted, held or rejected, and why.

Pure: no file, lock, clock or model. Given a proposal, the typed trajectory and the
operator's words, and the entries already stored, it returns one ``ConsolidationDecision``
per proposed entry. ``FileMemory`` reads the current documents under the memory lock,
calls it, and applies the accepted entries; replay and the property tests call it the same
way, so a decision depends on nothing but its inputs.

Each entry is validated first (an invalid one, such as an unknown section, is dropped with
its reason; the others are judged on their own); then each valid entry passes, in order,
the confidence threshold, the empty/transient/poisoning text rules, de-duplication against
the stored entries and the batch, the provenance rule (Preferences and Conventions) or the
trajectory evidence rules (tool experience), and the weakening guard, which *holds* an
entry it cannot read with confidence for the operator's review.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_ros.errors import MemoryStoreError
from harness_ros.memory.contracts import (
    SECTIONS,
    DurableMemoryEntry,
    MemoryConsolidation,
    ToolExperienceEntry,
)
from harness_ros.memory.guard import hold_reason
from harness_ros.memory.provenance import PROVENANCE_SECTIONS, provenance_rule
from harness_ros.memory.rules import (
    DEFAULT_POISONING_RULES,
    DEFAULT_TRANSIENT_RULES,
    TextRule,
    TransientRule,
    first_match,
    has_confirmed_success,
    has_failure_then_confirmed_success,
    refusals_of,
)
from harness_ros.trajectory import Trajectory, TrajectoryStep
from harness_ros.validators import confidence_problem, valid_tool_name

__all__ = [
    "LABELS",
    "MAX_ENTRY_CHARS",
    "MAX_SOURCE_CHARS",
    "OUTCOME_SECTIONS",
    "ConsolidationDecision",
    "DecisionPolicy",
    "check_trajectory",
    "decide",
    "decide_consolidation",
    "dedup_key",
    "refusal_records",
    "tally",
    "validate_proposal",
]

logger = logging.getLogger(__name__)

LABELS: dict[str, str] = {
    "Preferences": "user-preference",
    "Conventions": "convention",
    "General Lessons": "general-lesson",
}
"""The label each MEMORY.md section's model-written bullets carry (``- [convention] ...``)."""
OUTCOME_SECTIONS: dict[str, str] = {"success": "Success", "failure": "Failure"}
"""A tool-experience outcome and its ledger section."""
MAX_ENTRY_CHARS = 500
MAX_SOURCE_CHARS = 2000

_PLACEHOLDER = re.compile(r"\s*<[^<>]*>\s*")
"""A text that is only ``<...>``: the consolidation prompt's example, copied."""
_LEADING_BULLET = re.compile(r"^(?:[-*+]\s+)?(?:\[(?:user-preference|convention|general-lesson)\]\s*)?")


@dataclass(frozen=True)
class ConsolidationDecision:
    """What happened to one proposed entry, and which rule decided."""

    kind: str
    """``memory`` or ``tool_experience``."""
    text: str
    confidence: float
    accepted: bool
    rule: str
    section: str | None = None
    tool: str | None = None
    outcome: str | None = None
    source: str | None = None
    """For Preferences and Conventions: the operator's words the consolidator quoted."""
    held: bool = False
    """Not accepted yet: kept in ``held/`` for the operator's review (rule ``held:<reason>``)."""
    reason: str | None = None
    """Why an invalid entry (rule ``invalid_entry``) was dropped."""
    lesson: dict[str, Any] | None = None
    """A harness-written tool lesson's data (``RecoveryLesson.to_json``), written with its text."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        if self.kind == "memory":
            data["section"] = self.section
            if self.source is not None:
                data["source"] = self.source
        else:
            data["tool"] = self.tool
            data["outcome"] = self.outcome
        data.update(text=self.text, confidence=self.confidence, accepted=self.accepted, rule=self.rule)
        if self.held:
            data["held"] = True
        if self.reason is not None:
            data["reason"] = self.reason
        if self.lesson is not None:
            data["lesson"] = self.lesson
        return data


@dataclass(frozen=True)
class DecisionPolicy:
    """The settings a decision depends on (``memory.min_confidence`` and the text rules)."""

    min_confidence: float = 0.75
    transient_rules: tuple[TransientRule, ...] = DEFAULT_TRANSIENT_RULES
    poisoning_rules: tuple[TextRule, ...] = DEFAULT_POISONING_RULES


def dedup_key(text: str) -> str:
    """Two entries are the same entry when this is equal (case and spacing ignored)."""
    return " ".join(text.split()).casefold().rstrip(" .!")


def clean_text(text: str) -> str:
    """One line: format characters (zero-width, soft hyphen, BOM, bidi controls) removed,
    whitespace collapsed (no heading can be injected), stray bullet/label removed."""
    flat = " ".join("".join(ch for ch in text if unicodedata.category(ch) != "Cf").split())
    return _LEADING_BULLET.sub("", flat, count=1).strip()


def check_trajectory(trajectory: Trajectory) -> tuple[TrajectoryStep, ...]:
    """The steps of a completed trajectory; ``MemoryStoreError`` for any other."""
    if trajectory.status != "completed":
        msg = (
            f"Trajectory {trajectory.task_id!r} has status {trajectory.status!r}: "
            "only completed tasks are consolidated"
        )
        raise MemoryStoreError(msg)
    return trajectory.steps


def refusal_records(task_id: str, task_outcome: Any, steps: Sequence[TrajectoryStep]) -> list[dict[str, Any]]:
    """Audit records of the calls refused before they ran (recorded, never failure evidence)."""
    return [
        {
            "event": "refusal",
            "task_id": task_id,
            "task_outcome": task_outcome,
            "tool": step.tool,
            "kind": step.refusal or ("blocked" if step.result.data.get("blocked_by") else "refused"),
            "reason": step.result.reason
            if step.result.reason is not None
            else step.result.data.get("reason"),
        }
        for step in refusals_of(steps)
    ]


def _common_problems(text: Any, confidence: Any) -> list[str]:
    problems: list[str] = []
    if not isinstance(text, str):
        problems.append(f"text must be a string, got {type(text).__name__}")
    elif len(text) > MAX_ENTRY_CHARS:
        problems.append(f"text is {len(text)} characters (limit {MAX_ENTRY_CHARS})")
    elif _PLACEHOLDER.fullmatch(text):
        problems.append(f"text {text!r} is a placeholder copied from the prompt's example")
    confidence_wrong = confidence_problem(confidence)
    if confidence_wrong is not None:
        problems.append(f"confidence {confidence_wrong}")
    return problems


def _invalid(kind: str, where: str, entry: Any, problems: list[str], **fields: Any) -> ConsolidationDecision:
    reason = f"{where}: " + "; ".join(problems)
    logger.warning("Consolidation entry dropped: %s", reason)
    text = " ".join(str(entry.text).split())
    confidence = float(entry.confidence) if confidence_problem(entry.confidence) is None else 0.0
    extra: dict[str, Any] = {key: str(value)[:200] for key, value in fields.items()}
    return ConsolidationDecision(
        kind,
        text if len(text) <= MAX_ENTRY_CHARS else text[:MAX_ENTRY_CHARS] + "...",
        confidence,
        False,
        "invalid_entry",
        reason=reason,
        **extra,
    )


def validate_proposal(
    proposal: Any, allowed: Sequence[str]
) -> tuple[MemoryConsolidation, list[ConsolidationDecision]]:
    """The valid entries, and a rejected ``invalid_entry`` decision (with its reason) for
    each invalid one: one bad entry never discards the others. Only a result that is
    not a ``MemoryConsolidation`` at all fails the whole consolidation."""
    if not isinstance(proposal, MemoryConsolidation):
        raise MemoryStoreError(f"Consolidator returned {type(proposal).__name__}, not MemoryConsolidation")
    invalid: list[ConsolidationDecision] = []
    memory_entries: list[DurableMemoryEntry] = []
    for position, entry in enumerate(proposal.memory_entries):
        problems = []
        source = getattr(entry, "source", None)
        if source is not None and (not isinstance(source, str) or len(source) > MAX_SOURCE_CHARS):
            problems.append(f"source must be a string of at most {MAX_SOURCE_CHARS} characters")
        if entry.section not in SECTIONS:
            problems.append(f"unknown section {entry.section!r} (expected exactly one of {list(SECTIONS)})")
        problems += _common_problems(entry.text, entry.confidence)
        if problems:
            where = f"memory_entries[{position}]"
            invalid.append(_invalid("memory", where, entry, problems, section=entry.section))
        else:
            memory_entries.append(entry)
    experience_entries: list[ToolExperienceEntry] = []
    for position, experience in enumerate(proposal.tool_experience_entries):
        problems = []
        if experience.tool not in allowed or not valid_tool_name(experience.tool):
            problems.append(f"unknown tool {experience.tool!r} (allowed: {sorted(allowed)})")
        if experience.outcome not in OUTCOME_SECTIONS:
            problems.append(f"unknown outcome {experience.outcome!r} (expected success or failure)")
        problems += _common_problems(experience.text, experience.confidence)
        if problems:
            where = f"tool_experience_entries[{position}]"
            fields = {"tool": experience.tool, "outcome": experience.outcome}
            invalid.append(_invalid("tool_experience", where, experience, problems, **fields))
        else:
            experience_entries.append(experience)
    for reason in proposal.unreadable_entries:
        logger.warning("Consolidation entry dropped: %s", reason)
        invalid.append(ConsolidationDecision("memory", "", 0.0, False, "invalid_entry", reason=str(reason)))
    valid = MemoryConsolidation(
        memory_entries=tuple(memory_entries), tool_experience_entries=tuple(experience_entries)
    )
    return valid, invalid


def _text_rule(text: str, confidence: float, policy: DecisionPolicy) -> str | None:
    """The rule rejecting an entry's text, or None."""
    if confidence < policy.min_confidence:
        return "below_confidence"
    if not text:
        return "empty_text"
    transient = first_match(policy.transient_rules, text)
    if transient is not None:
        return f"transient:{transient.name}"
    poisoning = first_match(policy.poisoning_rules, text)
    if poisoning is not None:
        return f"poisoning:{poisoning.name}"
    return None


def decide(
    proposal: MemoryConsolidation,
    steps: Sequence[TrajectoryStep],
    operator: list[str],
    *,
    policy: DecisionPolicy,
    memory: Mapping[str, Sequence[str]],
    ledgers: Mapping[str, Mapping[str, Sequence[str]]],
) -> list[ConsolidationDecision]:
    """One decision per entry of a validated proposal, in order.

    ``memory``: the stored entry texts per MEMORY.md section; ``ledgers``: per tool, the
    stored texts per outcome (a tool absent here has an empty ledger)."""
    decisions: list[ConsolidationDecision] = []
    seen_memory = {dedup_key(text) for texts in memory.values() for text in texts}
    batch_memory: set[str] = set()
    for entry in proposal.memory_entries:
        text = clean_text(entry.text)
        confidence = float(entry.confidence)
        rule = _text_rule(text, confidence, policy)
        key = dedup_key(text)
        if rule is None and key in seen_memory:
            rule = "duplicate_existing"
        if rule is None and key in batch_memory:
            rule = "duplicate_in_batch"
        source = getattr(entry, "source", None)
        if rule is None and entry.section in PROVENANCE_SECTIONS:
            rule = provenance_rule(text, source, operator)
        held = rule is None and (reason := hold_reason(text)) is not None
        if held:
            rule = f"held:{reason}"
        if rule is None or held:
            batch_memory.add(key)
        decision = ConsolidationDecision(
            "memory", text, confidence, rule is None, rule or "accepted", section=entry.section, held=held
        )
        if entry.section in PROVENANCE_SECTIONS:
            decision = dataclasses.replace(decision, source=" ".join(str(source or "").split()) or None)
        decisions.append(decision)
    ledger_keys: dict[str, set[str]] = {}
    batch_ledger: set[tuple[str, str]] = set()
    for experience in proposal.tool_experience_entries:
        text = clean_text(experience.text)
        confidence = float(experience.confidence)
        tool = experience.tool
        rule = _text_rule(text, confidence, policy)
        if rule is None and experience.outcome == "success" and not has_confirmed_success(steps, tool):
            rule = "no_confirmed_success"
        if (
            rule is None
            and experience.outcome == "failure"
            and not has_failure_then_confirmed_success(steps, tool)
        ):
            # A refused call never ran: say so, rather than "no failure".
            refused = bool(refusals_of(steps, tool))
            rule = "refusal_is_not_failure" if refused else "no_failure_then_confirmed_success"
        if tool not in ledger_keys:
            stored = ledgers.get(tool, {})
            ledger_keys[tool] = {dedup_key(text) for texts in stored.values() for text in texts}
        key = dedup_key(text)
        if rule is None and key in ledger_keys[tool]:
            rule = "duplicate_existing"
        if rule is None and (tool, key) in batch_ledger:
            rule = "duplicate_in_batch"
        held = rule is None and (reason := hold_reason(text)) is not None
        if held:
            rule = f"held:{reason}"
        if rule is None or held:
            batch_ledger.add((tool, key))
        lesson = getattr(experience, "lesson", None)
        decisions.append(
            ConsolidationDecision(
                "tool_experience",
                text,
                confidence,
                rule is None,
                rule or "accepted",
                tool=tool,
                outcome=experience.outcome,
                held=held,
                lesson=lesson.to_json() if lesson is not None else None,
            )
        )
    return decisions


def decide_consolidation(
    proposal: Any,
    trajectory: Trajectory,
    operator: list[str],
    *,
    allowed: Sequence[str],
    policy: DecisionPolicy,
    memory: Mapping[str, Sequence[str]],
    ledgers: Mapping[str, Mapping[str, Sequence[str]]],
) -> list[ConsolidationDecision]:
    """Validate, then decide: the valid entries' decisions, then the invalid ones'."""
    steps = check_trajectory(trajectory)
    valid, invalid = validate_proposal(proposal, allowed)
    return decide(valid, steps, operator, policy=policy, memory=memory, ledgers=ledgers) + invalid


def tally(decisions: Sequence[ConsolidationDecision]) -> dict[str, Any]:
    """The counts of a consolidation result, and its decisions as dicts."""
    accepted = [decision for decision in decisions if decision.accepted]
    held = sum(1 for decision in decisions if decision.held)
    return {
        "memory_written": sum(1 for decision in accepted if decision.kind == "memory"),
        "tool_experience_written": sum(1 for decision in accepted if decision.kind == "tool_experience"),
        "held": held,
        "rejected": len(decisions) - len(accepted) - held,
        "decisions": [decision.to_dict() for decision in decisions],
    }
