"""World entries from the operator's own words ("the keys are in the hall drawer").

The consolidator may propose ``world_entries``: an object, where it is, and ``source``,
the operator's words quoted exactly. Each is judged here, purely (no file, no clock):

1. valid: a name and a where that WORLD.md can hold, a source, a confidence in [0, 1]
   (else ``invalid_entry`` with the reason);
2. ``below_confidence`` under the memory's threshold;
3. the provenance rule of Preferences and Conventions (``provenance.provenance_rule``):
   the source occurs word for word in one text the operator wrote for the task (the
   instruction, a revision, an answer to ``ask_operator``), and every word of the entry's
   name and place is in that text. The acting model's text, tool results and text the
   cameras read are never operator text, so a model that says "the operator told me the
   keys are in the drawer" proves nothing (``provenance:source_not_operator_text``);
4. ``world:robot_evidence`` when this task's own evidence (a confirmed pick or place)
   already says where the object is: what the robot confirmed wins;
5. ``duplicate_existing`` when WORLD.md already says the same place.

An accepted entry is written ``unverified`` (``evidence: operator's words: "..."``)
until the robot confirms it: a confirmed pick or place makes it ``confirmed``, a pick
that fails there marks it ``stale`` (``world.fold_step``).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness_ros.memory.provenance import provenance_rule
from harness_ros.memory.world import WorldDocument, default_kind, fold_steps
from harness_ros.memory.world_contracts import GRIPPER, ROBOT, WorldChange, WorldEntry, WorldFactEntry
from harness_ros.trajectory import TrajectoryStep

__all__ = [
    "OPERATOR_EVIDENCE",
    "WorldDecision",
    "apply_world_decisions",
    "consolidate_world",
    "decide_world_entries",
]

logger = logging.getLogger(__name__)

OPERATOR_EVIDENCE = "operator's words"
MAX_SOURCE_CHARS = 2000
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$")


@dataclass(frozen=True)
class WorldDecision:
    """What happened to one proposed world entry, and which rule decided."""

    name: str
    where: str
    kind: str
    source: str
    confidence: float
    accepted: bool
    rule: str
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": "world",
            "name": self.name,
            "where": self.where,
            "object_kind": self.kind,
            "source": self.source,
            "confidence": self.confidence,
            "accepted": self.accepted,
            "rule": self.rule,
        }
        if self.reason is not None:
            data["reason"] = self.reason
        return data


def _id(value: Any) -> str:
    """An id as WORLD.md and the tools write it: ``hall drawer`` -> ``hall_drawer``."""
    return "_".join(value.split()) if isinstance(value, str) else ""


def _problems(entry: WorldFactEntry) -> list[str]:
    problems = []
    for field_name in ("name", "where"):
        value = _id(getattr(entry, field_name))
        if not _ID.match(value):
            problems.append(f"{field_name} {getattr(entry, field_name)!r} is no object or place name")
    if _id(entry.where) in (GRIPPER, ROBOT) or _id(entry.name) == ROBOT:
        problems.append("the gripper and the robot's place come from the robot's evidence only")
    if entry.kind is not None and (not isinstance(entry.kind, str) or not _ID.match(_id(entry.kind))):
        problems.append(f"kind {entry.kind!r} is no kind name")
    if not isinstance(entry.source, str) or not entry.source.strip() or len(entry.source) > MAX_SOURCE_CHARS:
        problems.append(f"source must be the operator's words, at most {MAX_SOURCE_CHARS} characters")
    confidence = entry.confidence
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not math.isfinite(confidence)
    ):
        problems.append(f"confidence {confidence!r} is not a number")
    elif not 0.0 <= float(confidence) <= 1.0:
        problems.append(f"confidence {confidence!r} is not in [0, 1]")
    return problems


def decide_world_entries(
    entries: Sequence[WorldFactEntry],
    operator: list[str],
    doc: WorldDocument,
    *,
    min_confidence: float,
    robot_changed: Sequence[WorldChange] = (),
) -> list[WorldDecision]:
    """One decision per proposed entry, in order. ``doc``: WORLD.md as it is (with this
    task's evidence folded in); ``robot_changed``: what that evidence changed."""
    touched = {change.name for change in robot_changed}
    decisions: list[WorldDecision] = []
    batch: set[str] = set()
    for position, entry in enumerate(entries):
        name, where = _id(entry.name), _id(entry.where)
        kind = _id(entry.kind) if isinstance(entry.kind, str) and entry.kind.strip() else default_kind(name)
        source = " ".join(entry.source.split()) if isinstance(entry.source, str) else ""
        problems = _problems(entry)
        if problems:
            reason = f"world_entries[{position}]: " + "; ".join(problems)
            decisions.append(
                WorldDecision(name, where, kind, source[:200], 0.0, False, "invalid_entry", reason)
            )
            continue
        confidence = float(entry.confidence)
        rule: str | None = None
        if confidence < min_confidence:
            rule = "below_confidence"
        if rule is None:
            # The entry's words: its name and place, as the operator would say them.
            rule = provenance_rule(f"{name} {where}".replace("_", " "), source, operator)
        if rule is None and name in touched:
            rule = "world:robot_evidence"
        old = doc.get("object", name)
        if rule is None and (
            name in batch or (old is not None and old.where == where and old.state != "stale")
        ):
            rule = "duplicate_existing"
        if rule is None:
            batch.add(name)
        decisions.append(
            WorldDecision(name, where, kind, source, confidence, rule is None, rule or "accepted")
        )
    return decisions


def apply_world_decisions(
    doc: WorldDocument, decisions: Sequence[WorldDecision], at: float
) -> list[WorldChange]:
    """Write the accepted entries into ``doc``: ``unverified``, the operator's words as evidence."""
    changes: list[WorldChange] = []
    for decision in decisions:
        if not decision.accepted:
            continue
        evidence = f'{OPERATOR_EVIDENCE}: "{decision.source[:200]}"'
        old = doc.get("object", decision.name)
        entry = old or WorldEntry("object", decision.name, decision.kind)
        entry = entry.with_(
            where=decision.where, pose=None, state="unverified", confirmed=at, evidence=evidence
        )
        doc.put(entry)
        changes.append(
            WorldChange(
                decision.name, "added" if old is None else "moved", decision.where, "unverified", evidence
            )
        )
    return changes


def consolidate_world(
    memory: Any, proposal: Any, steps: Sequence[TrajectoryStep], operator: list[str], *, dry_run: bool
) -> dict[str, Any]:
    """Judge a proposal's ``world_entries`` and write the accepted ones into ``memory``'s
    WORLD.md under its lock (atomically, audited); ``world_decisions`` and ``world_written``
    for the consolidation result. Nothing when world memory is off or none was proposed."""
    entries = tuple(getattr(proposal, "world_entries", ()) or ())
    if not memory.world or not entries:
        return {}
    from harness_ros.memory.storage import atomic_write_bytes, read_text

    touched = fold_steps(WorldDocument.parse(""), steps, 0.0)
    at = memory.world_time if memory.world_time is not None else time.time()
    with memory.store.lock():
        doc = WorldDocument.parse(read_text(memory.world_path), str(memory.world_path))
        decisions = decide_world_entries(
            entries, operator, doc, min_confidence=memory.min_confidence, robot_changed=touched
        )
        if not dry_run:
            before = doc.text()
            changes = apply_world_decisions(doc, decisions, at)
            if doc.text() != before:
                atomic_write_bytes(memory.world_path, doc.text().encode("utf-8"))
            memory.store.audit([{"event": "world_proposal", **d.to_dict()} for d in decisions])
            for change in changes:
                logger.info(
                    "World memory: %s %s at %s (%s)",
                    change.name,
                    change.change,
                    change.where,
                    change.evidence,
                )
    return {
        "world_decisions": [d.to_dict() for d in decisions],
        "world_written": sum(1 for d in decisions if d.accepted) if not dry_run else 0,
    }
