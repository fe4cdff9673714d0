"""FileMemory: Task Notes, durable memory and tool-experience ledgers in one folder.

    <root>/MEMORY.md                  Preferences, Conventions, General Lessons (+ operator text)
    <root>/TASK_NOTES.md              the running task's notes; removed at task end
    <root>/tool_experience/<tool>.md  Success / Failure lessons per tool
    <root>/audit.jsonl                every proposed entry, accepted or not, and why
    <root>/audit.jsonl.<n>            older audit generations (rotated by size)
    <root>/pending/*.json             completed trajectories whose consolidation failed
    <root>/held/*.json                entries held for the operator's review (memory pending)
    <root>/.summary_cache.json        ledger summaries keyed by ledger content hash
    <root>/.journal.json              intent of a consolidation being applied (crash recovery)

Consolidation is the only path to durable memory, and it is conservative: each
proposed entry is validated first (an invalid one, such as an unknown section, is
dropped with its reason in the audit; the others are judged on their own), then each
valid entry passes, in order, the confidence threshold, the empty/transient/poisoning text rules,
the trajectory evidence rules and case-folded de-duplication. An entry that passes
them all but that the weakening guard cannot read with confidence (another language,
mixed scripts, an unclassifiable sentence about a safeguard) is *held* in ``held/``
until the operator accepts or rejects it (``harness-ros memory pending``). Accepted
entries are inserted (never rewritten) under an inter-process lock with atomic file
replacement.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import re
import threading
import time
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_ros.errors import MemoryStoreError
from harness_ros.memory.contracts import (
    SECTIONS,
    DurableMemoryEntry,
    MemoryConsolidation,
    MemoryConsolidatorProtocol,
    ToolExperienceEntry,
    ToolExperienceSummarizerProtocol,
)
from harness_ros.memory.document import SectionedDocument
from harness_ros.memory.guard import hold_reason
from harness_ros.memory.model_policies import (
    SUMMARY_MAX_CHARS,
    ModelMemoryConsolidator,
    ModelToolExperienceSummarizer,
)
from harness_ros.memory.provenance import PROVENANCE_SECTIONS, operator_texts, provenance_rule
from harness_ros.memory.rules import (
    DEFAULT_POISONING_RULES,
    DEFAULT_TRANSIENT_RULES,
    TextRule,
    TransientRule,
    first_match,
    has_confirmed_success,
    has_failure_then_confirmed_success,
    refusals_of,
    screen,
)
from harness_ros.memory.storage import (
    append_bytes,
    atomic_write_bytes,
    memory_lock,
    read_text,
    remove_stale_temp_files,
)
from harness_ros.memory.task_notes import TaskNotes, normalize_verdict
from harness_ros.validators import TOOL_NAME_PATTERN, confidence_problem, valid_tool_name

if TYPE_CHECKING:
    from harness_ros.config import MemoryConfig
    from harness_ros.model.contracts import ChatModel

__all__ = [
    "LABELS",
    "MAX_ENTRY_CHARS",
    "TOOL_NAME_PATTERN",
    "ConsolidationDecision",
    "FileMemory",
]

logger = logging.getLogger(__name__)

LABELS: dict[str, str] = {
    "Preferences": "user-preference",
    "Conventions": "convention",
    "General Lessons": "general-lesson",
}
OUTCOME_SECTIONS: dict[str, str] = {"success": "Success", "failure": "Failure"}
_PLACEHOLDER = re.compile(r"\s*<[^<>]*>\s*")
"""A text that is only ``<...>``: the consolidation prompt's example, copied."""
MAX_ENTRY_CHARS = 500
MAX_SOURCE_CHARS = 2000
DEFAULT_AUDIT_MAX_BYTES = 5 * 1024 * 1024
DEFAULT_AUDIT_KEEP = 3
TASK_STATUSES = frozenset({"completed", "aborted", "failed", "cancelled"})
TASK_OUTCOMES = frozenset({"succeeded", "failed", "unverified"})

MEMORY_FILE = "MEMORY.md"
NOTES_FILE = "TASK_NOTES.md"
LEDGER_DIR = "tool_experience"
PENDING_DIR = "pending"
HELD_DIR = "held"
AUDIT_FILE = "audit.jsonl"
SUMMARY_CACHE_FILE = ".summary_cache.json"
JOURNAL_FILE = ".journal.json"

_MEMORY_TEMPLATE = "# Memory\n\n## Preferences\n## Conventions\n## General Lessons\n"
_LEDGER_TEMPLATE = "# Tool Experience: {tool}\n\n## Success\n## Failure\n"
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
        return data


def _check_threshold(value: Any) -> float:
    problem = confidence_problem(value)
    if problem is not None:
        raise MemoryStoreError(f"min_confidence {problem}")
    return float(value)


def _clean_text(text: str) -> str:
    """One line: format characters (zero-width, soft hyphen, BOM, bidi controls) removed,
    whitespace collapsed (no heading can be injected), stray bullet/label removed."""
    flat = " ".join("".join(ch for ch in text if unicodedata.category(ch) != "Cf").split())
    return _LEADING_BULLET.sub("", flat, count=1).strip()


_HEADING_MARK = re.compile(r"(^|\s)(#{1,6})(?=\s|$)")


def escape_entry(text: str) -> str:
    """An entry as it may appear inside the model's <memory> block: one line, no markup.

    ``<``/``>`` become ``&lt;``/``&gt;`` (no tag can close or open the block) and a
    Markdown heading marker becomes ``\\#`` (no fake section), whoever wrote the entry.
    """
    flat = " ".join(text.split())
    flat = flat.replace("<", "&lt;").replace(">", "&gt;")
    return _HEADING_MARK.sub(lambda m: m.group(1) + "\\#" * len(m.group(2)), flat)


def _dedup_key(text: str) -> str:
    return " ".join(text.split()).casefold().rstrip(" .!")


def _refusal_records(task_id: str, task_outcome: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Audit records of the calls refused before they ran (recorded, never failure evidence)."""
    records = []
    for event in refusals_of(events):
        result = event.get("result") if isinstance(event.get("result"), Mapping) else {}
        records.append(
            {
                "event": "refusal",
                "task_id": task_id,
                "task_outcome": task_outcome,
                "tool": event.get("tool"),
                "kind": event.get("refusal") or ("blocked" if result.get("blocked_by") else "refused"),
                "reason": result.get("reason"),
            }
        )
    return records


def _finite_confidence(value: Any) -> bool:
    return confidence_problem(value) is None


class FileMemory:
    """Durable memory of one robot (or several sharing the folder through the lock)."""

    def __init__(
        self,
        root: str | Path,
        *,
        consolidator: MemoryConsolidatorProtocol | None = None,
        tool_experience_summarizer: ToolExperienceSummarizerProtocol | None = None,
        min_confidence: float = 0.75,
        transient_rules: Sequence[TransientRule] = DEFAULT_TRANSIENT_RULES,
        poisoning_rules: Sequence[TextRule] = DEFAULT_POISONING_RULES,
        pending_limit: int = 20,
        max_pending_attempts: int = 5,
        lock_timeout_s: float = 30.0,
        resident_budget_chars: int | None = None,
        audit_max_bytes: int | None = DEFAULT_AUDIT_MAX_BYTES,
        audit_keep: int = DEFAULT_AUDIT_KEEP,
    ) -> None:
        self.root = Path(root)
        self.min_confidence = _check_threshold(min_confidence)
        if pending_limit < 1 or max_pending_attempts < 1:
            raise MemoryStoreError("pending_limit and max_pending_attempts must be at least 1")
        if audit_keep < 0 or (audit_max_bytes is not None and audit_max_bytes < 1):
            raise MemoryStoreError("audit_keep must be >= 0 and audit_max_bytes >= 1 (or None: no rotation)")
        if resident_budget_chars is not None and resident_budget_chars < 1:
            raise MemoryStoreError("resident_budget_chars must be >= 1 (or None: no budget)")
        try:
            (self.root / LEDGER_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise MemoryStoreError(
                f"Cannot create memory folder {str(self.root)!r}: {err.strerror}"
            ) from None
        self.consolidator = consolidator
        if tool_experience_summarizer is None and isinstance(consolidator, ModelMemoryConsolidator):
            # The reference pairing: the consolidating model also summarises the ledgers.
            tool_experience_summarizer = ModelToolExperienceSummarizer(consolidator.model)
        if (
            consolidator is not None
            and tool_experience_summarizer is None
            and not isinstance(consolidator, ModelMemoryConsolidator)
            and self.ledger_tools()
        ):
            msg = (
                f"Memory folder {str(self.root)!r} has tool-experience ledgers and a custom consolidator "
                f"({type(consolidator).__name__}) but no tool_experience_summarizer: pass one explicitly "
                "(ledger lines are never concatenated in place of a summary)"
            )
            raise MemoryStoreError(msg)
        self.summarizer = tool_experience_summarizer
        self.transient_rules = tuple(transient_rules)
        self.poisoning_rules = tuple(poisoning_rules)
        self.pending_limit = pending_limit
        self.max_pending_attempts = max_pending_attempts
        self.lock_timeout_s = lock_timeout_s
        self.summary_errors: dict[str, str] = {}
        self.notices: list[dict[str, Any]] = []
        """What the operator must hear at task start (``memory_notice`` events): a ledger
        summary fallback, a ledger left out, the Resident memory budget exceeded."""
        self.resident_budget_chars = resident_budget_chars
        self.audit_max_bytes = audit_max_bytes
        self.audit_keep = audit_keep
        self._notes: TaskNotes | None = None
        self._last_snapshot: str | None = None
        self._notes_lock = threading.Lock()
        for folder in (self.root, self.root / LEDGER_DIR, self.root / PENDING_DIR):
            remove_stale_temp_files(folder)

    @classmethod
    def from_config(
        cls,
        config: MemoryConfig,
        *,
        root: str | Path | None = None,
        model: ChatModel | None = None,
        consolidator: MemoryConsolidatorProtocol | None = None,
        tool_experience_summarizer: ToolExperienceSummarizerProtocol | None = None,
    ) -> FileMemory:
        """The memory folder as the node runs it, from the config's ``memory:`` section.

        Every place that opens a memory folder (the node's harness, replay, the demo, the
        CLI) builds it here, so an entry is judged and stored by the same threshold, audit
        rotation, retry and budget settings wherever it is consolidated: a replay that
        passes is a decision the robot would make.

        ``root`` replaces ``config.dir`` (a replay's temporary folder, ``--memory``).
        ``consolidator`` is used as given; without one, ``model`` consolidates when
        ``config.consolidator`` is ``model`` (and summarises the ledgers); with neither,
        durable writes are a no-op (read-only uses).
        """
        if consolidator is None and model is not None and config.consolidator == "model":
            consolidator = ModelMemoryConsolidator(model, min_confidence=config.min_confidence)
        return cls(
            config.dir if root is None else root,
            consolidator=consolidator,
            tool_experience_summarizer=tool_experience_summarizer,
            min_confidence=config.min_confidence,
            pending_limit=config.pending_limit,
            resident_budget_chars=config.resident_budget_chars,
            audit_max_bytes=config.audit_max_bytes,
            audit_keep=config.audit_keep,
        )

    # ------------------------------------------------------------------ paths and reads

    @property
    def memory_path(self) -> Path:
        return self.root / MEMORY_FILE

    @property
    def notes_path(self) -> Path:
        return self.root / NOTES_FILE

    @property
    def audit_path(self) -> Path:
        return self.root / AUDIT_FILE

    @property
    def pending_dir(self) -> Path:
        return self.root / PENDING_DIR

    def ledger_path(self, tool: str) -> Path:
        if not valid_tool_name(tool):
            raise MemoryStoreError(f"Invalid tool name {tool!r}: must match {TOOL_NAME_PATTERN.pattern}")
        return self.root / LEDGER_DIR / f"{tool}.md"

    def ledger_tools(self) -> list[str]:
        """Tools that have a ledger file."""
        folder = self.root / LEDGER_DIR
        if not folder.is_dir():
            return []
        return sorted(path.stem for path in folder.glob("*.md") if valid_tool_name(path.stem))

    def memory_entries(self) -> dict[str, list[str]]:
        """Entry texts of the three controlled sections (labels removed)."""
        document = SectionedDocument(read_text(self.memory_path) or "")
        labels = tuple(LABELS.values())
        return {section: document.entries(section, labels=labels) for section in SECTIONS}

    def ledger_entries(self, tool: str) -> dict[str, list[str]]:
        document = SectionedDocument(read_text(self.ledger_path(tool)) or "")
        return {outcome: document.entries(section) for outcome, section in OUTCOME_SECTIONS.items()}

    def resident_memory(self) -> str:
        """The Resident-context projection: the three sections only, in fixed order.

        Over ``resident_budget_chars``, the oldest model-written General Lessons (bullets
        carrying the ``[general-lesson]`` label, oldest first in the file) are left out of
        the projection, never out of MEMORY.md. Preferences, Conventions and unlabelled
        bullets (the operator's own text) are always projected, even over budget. Either
        way a ``resident_budget_exceeded`` notice is queued for the operator.
        """
        document = SectionedDocument(read_text(self.memory_path) or "")
        labels = tuple(LABELS.values())
        entries = {section: document.entries(section, labels=labels) for section in SECTIONS}
        raw_lessons = document.entries("General Lessons")
        trimmable = [
            index for index, raw in enumerate(raw_lessons) if raw.startswith(f"[{LABELS['General Lessons']}]")
        ]
        left_out: set[int] = set()
        text = self._render_resident(entries, left_out)
        budget = self.resident_budget_chars
        if budget is None or len(text) <= budget:
            return text
        full = len(text)
        for index in trimmable:
            left_out.add(index)
            text = self._render_resident(entries, left_out)
            if len(text) <= budget:
                break
        over = len(text) > budget
        message = (
            f"Resident memory is {full} characters, over its budget of {budget} "
            f"(memory.resident_budget_chars): {len(left_out)} oldest model-written general lesson(s) "
            "left out of the prompt (kept in MEMORY.md)"
        )
        if over:
            message += f"; the operator's own entries alone take {len(text)} characters and are all kept"
        logger.warning("%s", message)
        self.notices.append(
            {
                "notice": "resident_budget_exceeded",
                "budget_chars": budget,
                "chars": full,
                "projected_chars": len(text),
                "left_out": len(left_out),
                "message": message,
            }
        )
        return text

    @staticmethod
    def _render_resident(entries: dict[str, list[str]], left_out: set[int]) -> str:
        lines = ["# Memory"]
        for section, texts in entries.items():
            lines.append("")
            lines.append(f"## {section}")
            shown = (
                texts
                if section != "General Lessons"
                else [text for index, text in enumerate(texts) if index not in left_out]
            )
            lines.extend(f"- [{LABELS[section]}] {escape_entry(text)}" for text in shown)
            if section == "General Lessons" and left_out:
                lines.append(f"({len(left_out)} older general lesson(s) not shown: memory budget)")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ task notes

    def start_task(self, goal: str, *, task_id: str | None = None) -> str:
        """Reset Task Notes for a new task; returns its task id."""
        self.notices = []  # a new task hears only about its own start
        with self._notes_lock:
            self._notes = TaskNotes(goal, task_id=task_id)
            self._last_snapshot = None
            self._write_notes(self._notes)
            return self._notes.task_id

    def set_phase(self, phase: str) -> None:
        with self._notes_lock:
            notes = self._require_notes()
            notes.phase = " ".join(str(phase).split())[:MAX_ENTRY_CHARS]
            self._write_notes(notes)

    def add_revision(self, text: str) -> None:
        """Record an operator's instruction revision in the notes (the goal consolidation
        judges against is the newest one)."""
        with self._notes_lock:
            notes = self._require_notes()
            notes.add_revision(text)
            self._write_notes(notes)

    def record_tool_result(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        result: Mapping[str, Any],
        verdict: Any = None,
        *,
        refusal: str | None = None,
    ) -> None:
        """Append one compact event; ``verdict`` is a dict or has ``to_dict()`` (or None);
        ``refusal`` names why a call did not run (it is then no failure evidence)."""
        normalized = normalize_verdict(verdict)
        with self._notes_lock:
            notes = self._require_notes()
            notes.record(tool, arguments, result, normalized, refusal=refusal)
            self._write_notes(notes)

    def task_notes_snapshot_if_changed(self) -> str | None:
        """The notes text when it changed since the last call, else None."""
        with self._notes_lock:
            if self._notes is None:
                return None
            text = self._notes.render()
            if text == self._last_snapshot:
                return None
            self._last_snapshot = text
            return text

    def trajectory(self) -> dict[str, Any]:
        """The running task's notes in the shared trajectory format."""
        with self._notes_lock:
            return self._require_notes().to_dict()

    def _require_notes(self) -> TaskNotes:
        if self._notes is None:
            raise MemoryStoreError(f"No task is running in memory folder {str(self.root)!r}: call start_task")
        return self._notes

    def _write_notes(self, notes: TaskNotes) -> None:
        atomic_write_bytes(self.notes_path, notes.render().encode("utf-8"))

    def _expire_notes(self) -> None:
        with self._notes_lock:
            self._notes = None
            self._last_snapshot = None
        try:
            self.notes_path.unlink(missing_ok=True)
        except OSError as err:
            logger.warning("Cannot remove %s: %s", self.notes_path, err.strerror)

    # ------------------------------------------------------------------ task end

    def finish_task(
        self, status: Any, *, allowed_tools: Iterable[str], outcome: Any = None
    ) -> dict[str, Any]:
        """End the task: consolidate if completed, always expire the notes. Never raises
        for a consolidation failure: the result carries ``error`` and the trajectory is
        kept in ``pending/`` for a retry at the next completed task.

        A completed task is consolidated whatever its ``outcome`` (succeeded, failed,
        unverified): it ended normally and its evidence counts; the outcome goes into the
        trajectory and every audit record, so each lesson says which outcome it came from."""
        status = str(getattr(status, "value", status))
        if status not in TASK_STATUSES:
            raise ValueError(f"status must be one of {sorted(TASK_STATUSES)}, got {status!r}")
        outcome = None if outcome is None else str(getattr(outcome, "value", outcome))
        if outcome is not None and outcome not in TASK_OUTCOMES:
            raise ValueError(f"outcome must be one of {sorted(TASK_OUTCOMES)}, got {outcome!r}")
        allowed = list(allowed_tools)
        with self._notes_lock:
            notes = self._notes
            if notes is not None:
                notes.status = status
                notes.phase = "finishing"
                if outcome is not None:
                    notes.outcome = outcome
            trajectory = notes.to_dict() if notes is not None else None
        result = self._empty_result(trajectory["task_id"] if trajectory else None)
        result["status"] = status
        result["trajectory"] = trajectory
        try:
            if trajectory is None:
                result.update(skipped=True, reason="no task was started")
            elif status != "completed":
                result.update(skipped=True, reason=f"task {status}: only completed tasks are consolidated")
            elif self.consolidator is None:
                result.update(skipped=True, reason="no consolidator configured: durable writes are a no-op")
            else:
                self._consolidate_completed(trajectory, allowed, result)
        finally:
            self._expire_notes()
        return result

    def _consolidate_completed(
        self, trajectory: dict[str, Any], allowed: list[str], result: dict[str, Any]
    ) -> None:
        try:
            result.update(self._consolidate(trajectory, allowed, dry_run=False))
        except Exception as err:  # noqa: BLE001 - a consolidation failure must never crash the task
            result["error"] = f"{type(err).__name__}: {err}"
            logger.warning("Consolidation of task %s failed: %s", trajectory["task_id"], result["error"])
            try:
                self._audit(
                    [
                        {
                            "event": "consolidation_failed",
                            "task_id": trajectory["task_id"],
                            "error": result["error"],
                        }
                    ]
                )
                self._save_pending(trajectory, allowed, result["error"])
            except Exception as save_err:  # noqa: BLE001 - still never raise out of finish_task
                result["error"] += f"; the trajectory could not be kept for retry: {save_err}"
            result["pending"] = self._pending_count()
            return
        retried, pending = self._retry_pending()
        result["pending_retried"] = retried
        result["pending"] = pending

    @staticmethod
    def _empty_result(task_id: str | None) -> dict[str, Any]:
        return {
            "task_id": task_id,
            "skipped": False,
            "reason": None,
            "error": None,
            "memory_written": 0,
            "tool_experience_written": 0,
            "rejected": 0,
            "held": 0,
            "decisions": [],
            "pending_retried": 0,
            "pending": 0,
        }

    def consolidate_trajectory(
        self, trajectory: Mapping[str, Any], *, allowed_tools: Iterable[str], dry_run: bool = False
    ) -> dict[str, Any]:
        """Consolidate a saved completed trajectory (offline, replay). Raises on failure."""
        data = dict(trajectory)
        result = self._empty_result(str(data.get("task_id") or "") or None)
        if self.consolidator is None:
            result.update(skipped=True, reason="no consolidator configured: durable writes are a no-op")
            return result
        result.update(self._consolidate(data, list(allowed_tools), dry_run=dry_run))
        result["dry_run"] = dry_run
        return result

    # ------------------------------------------------------------------ consolidation core

    def _existing(self, allowed: list[str]) -> dict[str, Any]:
        return {
            "memory": self.memory_entries(),
            "tool_experience": {tool: self.ledger_entries(tool) for tool in allowed},
        }

    @staticmethod
    def _check_trajectory(trajectory: Mapping[str, Any]) -> list[dict[str, Any]]:
        task_id = trajectory.get("task_id")
        if trajectory.get("status") != "completed":
            msg = (
                f"Trajectory {task_id!r} has status {trajectory.get('status')!r}: "
                "only completed tasks are consolidated"
            )
            raise MemoryStoreError(msg)
        events = trajectory.get("events")
        if not isinstance(events, list) or not all(isinstance(event, dict) for event in events):
            raise MemoryStoreError(f"Trajectory {task_id!r}: 'events' must be a list of objects")
        return events

    def _consolidate(
        self, trajectory: dict[str, Any], allowed: list[str], *, dry_run: bool
    ) -> dict[str, Any]:
        assert self.consolidator is not None
        events = self._check_trajectory(trajectory)
        bad_tools = [tool for tool in allowed if not valid_tool_name(tool)]
        if bad_tools:
            raise MemoryStoreError(f"Invalid allowed tool names {bad_tools!r}")
        proposal = self.consolidator.consolidate(
            json.loads(json.dumps(trajectory, default=str)),
            allowed_tools=list(allowed),
            existing=self._existing(allowed),
        )
        proposal, invalid = self._validate(proposal, allowed)
        task_id = str(trajectory.get("task_id") or "")
        operator = operator_texts(trajectory)
        task_outcome = trajectory.get("outcome")
        if dry_run:
            decisions = self._decide(proposal, events, operator) + invalid
        else:
            with memory_lock(self.root, timeout_s=self.lock_timeout_s):
                self._recover_journal()
                decisions = self._decide(proposal, events, operator) + invalid
                audit = [
                    {
                        "event": "proposal",
                        "task_id": task_id,
                        "task_outcome": task_outcome,
                        **decision.to_dict(),
                    }
                    for decision in decisions
                ]
                audit += _refusal_records(task_id, task_outcome, events)
                held = [
                    {"task_id": task_id, "time": time.time(), **decision.to_dict()}
                    for decision in decisions
                    if decision.held
                ]
                self._apply_journaled([d.to_dict() for d in decisions if d.accepted], audit, held)
        accepted = [decision for decision in decisions if decision.accepted]
        held_count = sum(1 for decision in decisions if decision.held)
        return {
            "memory_written": sum(1 for decision in accepted if decision.kind == "memory"),
            "tool_experience_written": sum(1 for decision in accepted if decision.kind == "tool_experience"),
            "held": held_count,
            "rejected": len(decisions) - len(accepted) - held_count,
            "decisions": [decision.to_dict() for decision in decisions],
        }

    def _validate(
        self, proposal: Any, allowed: list[str]
    ) -> tuple[MemoryConsolidation, list[ConsolidationDecision]]:
        """The valid entries, and a rejected ``invalid_entry`` decision (with its reason) for
        each invalid one: one bad entry never discards the others. Only a result that is
        not a ``MemoryConsolidation`` at all fails the whole consolidation."""
        if not isinstance(proposal, MemoryConsolidation):
            raise MemoryStoreError(
                f"Consolidator returned {type(proposal).__name__}, not MemoryConsolidation"
            )

        def common_problems(text: Any, confidence: Any) -> list[str]:
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

        invalid: list[ConsolidationDecision] = []

        def reject(kind: str, where: str, entry: Any, problems: list[str], **fields: Any) -> None:
            reason = f"{where}: " + "; ".join(problems)
            logger.warning("Consolidation entry dropped: %s", reason)
            text = " ".join(str(entry.text).split())
            confidence = float(entry.confidence) if _finite_confidence(entry.confidence) else 0.0
            invalid.append(
                ConsolidationDecision(
                    kind,
                    text if len(text) <= MAX_ENTRY_CHARS else text[:MAX_ENTRY_CHARS] + "...",
                    confidence,
                    False,
                    "invalid_entry",
                    reason=reason,
                    **{key: str(value)[:200] for key, value in fields.items()},
                )
            )

        memory_entries: list[DurableMemoryEntry] = []
        for position, entry in enumerate(proposal.memory_entries):
            problems = []
            source = getattr(entry, "source", None)
            if source is not None and (not isinstance(source, str) or len(source) > MAX_SOURCE_CHARS):
                problems.append(f"source must be a string of at most {MAX_SOURCE_CHARS} characters")
            if entry.section not in SECTIONS:
                problems.append(
                    f"unknown section {entry.section!r} (expected exactly one of {list(SECTIONS)})"
                )
            problems += common_problems(entry.text, entry.confidence)
            if problems:
                reject("memory", f"memory_entries[{position}]", entry, problems, section=entry.section)
            else:
                memory_entries.append(entry)
        experience_entries: list[ToolExperienceEntry] = []
        for position, experience in enumerate(proposal.tool_experience_entries):
            problems = []
            if experience.tool not in allowed or not valid_tool_name(experience.tool):
                problems.append(f"unknown tool {experience.tool!r} (allowed: {sorted(allowed)})")
            if experience.outcome not in OUTCOME_SECTIONS:
                problems.append(f"unknown outcome {experience.outcome!r} (expected success or failure)")
            problems += common_problems(experience.text, experience.confidence)
            if problems:
                where = f"tool_experience_entries[{position}]"
                fields = {"tool": experience.tool, "outcome": experience.outcome}
                reject("tool_experience", where, experience, problems, **fields)
            else:
                experience_entries.append(experience)
        for reason in proposal.unreadable_entries:
            logger.warning("Consolidation entry dropped: %s", reason)
            invalid.append(
                ConsolidationDecision("memory", "", 0.0, False, "invalid_entry", reason=str(reason))
            )
        valid = MemoryConsolidation(
            memory_entries=tuple(memory_entries), tool_experience_entries=tuple(experience_entries)
        )
        return valid, invalid

    def _text_rule(self, text: str, confidence: float) -> str | None:
        """The rule rejecting an entry's text, or None."""
        if confidence < self.min_confidence:
            return "below_confidence"
        if not text:
            return "empty_text"
        transient = first_match(self.transient_rules, text)
        if transient is not None:
            return f"transient:{transient.name}"
        poisoning = first_match(self.poisoning_rules, text)
        if poisoning is not None:
            return f"poisoning:{poisoning.name}"
        return None

    def _decide(
        self, proposal: MemoryConsolidation, events: list[dict[str, Any]], operator: list[str]
    ) -> list[ConsolidationDecision]:
        decisions: list[ConsolidationDecision] = []
        seen_memory = {_dedup_key(text) for texts in self.memory_entries().values() for text in texts}
        batch_memory: set[str] = set()
        for entry in proposal.memory_entries:
            text = _clean_text(entry.text)
            confidence = float(entry.confidence)
            rule = self._text_rule(text, confidence)
            key = _dedup_key(text)
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
            text = _clean_text(experience.text)
            confidence = float(experience.confidence)
            tool = experience.tool
            rule = self._text_rule(text, confidence)
            if rule is None and experience.outcome == "success" and not has_confirmed_success(events, tool):
                rule = "no_confirmed_success"
            if (
                rule is None
                and experience.outcome == "failure"
                and not has_failure_then_confirmed_success(events, tool)
            ):
                # A refused call never ran: say so, rather than "no failure".
                refused = bool(refusals_of(events, tool))
                rule = "refusal_is_not_failure" if refused else "no_failure_then_confirmed_success"
            if tool not in ledger_keys:
                existing = self.ledger_entries(tool)
                ledger_keys[tool] = {_dedup_key(text) for texts in existing.values() for text in texts}
            key = _dedup_key(text)
            if rule is None and key in ledger_keys[tool]:
                rule = "duplicate_existing"
            if rule is None and (tool, key) in batch_ledger:
                rule = "duplicate_in_batch"
            held = rule is None and (reason := hold_reason(text)) is not None
            if held:
                rule = f"held:{reason}"
            if rule is None or held:
                batch_ledger.add((tool, key))
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
                )
            )
        return decisions

    def _apply_journaled(
        self,
        accepted: list[dict[str, Any]],
        audit: list[dict[str, Any]],
        held: list[dict[str, Any]] | None = None,
    ) -> None:
        """Apply accepted entries across files all-or-nothing (caller holds the lock).

        The intent is written first; a process killed half-way leaves it behind and the
        next writer re-applies it. Re-applying is idempotent: entries already present
        are skipped by the same case-folded comparison as de-duplication.
        """
        journal = self.root / JOURNAL_FILE
        intent = {"accepted": accepted, "audit": audit, "held": held or []}
        atomic_write_bytes(journal, json.dumps(intent, ensure_ascii=False).encode("utf-8"))
        self._write_accepted(accepted)
        self._write_held(held or [])
        self._audit(audit)
        journal.unlink(missing_ok=True)

    def _recover_journal(self) -> None:
        """Finish a consolidation interrupted by a crash (caller holds the lock)."""
        journal = self.root / JOURNAL_FILE
        text = read_text(journal)
        if text is None:
            return
        try:
            intent = json.loads(text)
            accepted, audit = list(intent["accepted"]), list(intent["audit"])
            held = list(intent.get("held") or [])
        except (ValueError, KeyError, TypeError) as err:
            # Journals are replaced atomically, so this is outside interference; keep a copy.
            logger.warning("Unreadable memory journal %s (%s); moved aside", journal, err)
            journal.replace(journal.with_suffix(".corrupt"))
            return
        logger.warning("Recovering an interrupted consolidation in %s", self.root)
        self._write_accepted(accepted)
        self._write_held(held)
        self._audit([{**record, "recovered": True} for record in audit])
        journal.unlink(missing_ok=True)

    def _write_accepted(self, accepted: list[dict[str, Any]]) -> None:
        """Insert accepted entries not already present (caller holds the lock)."""
        by_ledger: dict[tuple[str, str], list[str]] = {}
        by_section: dict[str, list[str]] = {}
        for entry in accepted:
            if entry["kind"] == "memory":
                by_section.setdefault(entry["section"], []).append(entry["text"])
            else:
                by_ledger.setdefault((entry["tool"], entry["outcome"]), []).append(entry["text"])
        for tool in sorted({tool for tool, _ in by_ledger}):
            path = self.ledger_path(tool)
            document = SectionedDocument(read_text(path) or _LEDGER_TEMPLATE.format(tool=tool))
            present = {
                _dedup_key(text)
                for section in OUTCOME_SECTIONS.values()
                for text in document.entries(section)
            }
            changed = False
            for outcome, section in OUTCOME_SECTIONS.items():
                new = [text for text in by_ledger.get((tool, outcome), []) if _dedup_key(text) not in present]
                document.add_entries(section, new, order=("Success", "Failure"))
                changed = changed or bool(new)
            if changed:
                atomic_write_bytes(path, document.text().encode("utf-8"))
        if by_section:
            document = SectionedDocument(read_text(self.memory_path) or _MEMORY_TEMPLATE)
            labels = tuple(LABELS.values())
            present = {
                _dedup_key(text) for section in SECTIONS for text in document.entries(section, labels=labels)
            }
            changed = False
            for section in SECTIONS:
                new = [
                    f"[{LABELS[section]}] {text}"
                    for text in by_section.get(section, [])
                    if _dedup_key(text) not in present
                ]
                document.add_entries(section, new, order=SECTIONS)
                changed = changed or bool(new)
            if changed:
                atomic_write_bytes(self.memory_path, document.text().encode("utf-8"))

    # ------------------------------------------------------------------ held for review

    @property
    def held_dir(self) -> Path:
        return self.root / HELD_DIR

    @staticmethod
    def _held_id(entry: Mapping[str, Any]) -> str:
        """The same entry (kind, place, text) held twice is one review item."""
        place = [entry.get("kind"), entry.get("section"), entry.get("tool"), entry.get("outcome")]
        key = json.dumps([*place, _dedup_key(str(entry.get("text", "")))], ensure_ascii=False)
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]

    def _write_held(self, held: list[dict[str, Any]]) -> None:
        """Keep held entries for review, one file each (caller holds the lock; idempotent)."""
        if not held:
            return
        self.held_dir.mkdir(parents=True, exist_ok=True)
        for entry in held:
            path = self.held_dir / f"{self._held_id(entry)}.json"
            if not path.exists():
                atomic_write_bytes(path, json.dumps(entry, ensure_ascii=False, indent=1).encode("utf-8"))

    def held_entries(self) -> list[dict[str, Any]]:
        """Entries waiting for the operator's review, oldest first, each with its ``id``."""
        if not self.held_dir.is_dir():
            return []
        records = []
        for path in self.held_dir.glob("*.json"):
            try:
                record = json.loads(read_text(path) or "")
            except (ValueError, MemoryStoreError) as err:
                logger.warning("Ignoring unreadable held entry %s: %s", path, err)
                continue
            if isinstance(record, dict) and isinstance(record.get("text"), str):
                records.append({**record, "id": path.stem})
        return sorted(records, key=lambda record: (float(record.get("time") or 0.0), record["id"]))

    def review_held(self, entry_id: str, *, accept: bool) -> dict[str, Any]:
        """The operator's decision on a held entry: accepted entries are written like any
        accepted entry (insert only, de-duplicated); either way the entry leaves ``held/``
        and the audit records the review."""
        if not re.fullmatch(r"[0-9a-f]{12}", entry_id):
            raise MemoryStoreError(
                f"Held entry id {entry_id!r} must be 12 hex digits (harness-ros memory pending)"
            )
        path = self.held_dir / f"{entry_id}.json"
        with memory_lock(self.root, timeout_s=self.lock_timeout_s):
            self._recover_journal()
            try:
                record = json.loads(read_text(path) or "null")
            except ValueError as err:
                raise MemoryStoreError(f"Held entry {str(path)!r} is not JSON: {err}") from None
            if not isinstance(record, dict) or record.get("kind") not in {"memory", "tool_experience"}:
                raise MemoryStoreError(
                    f"No held entry {entry_id!r} in {str(self.held_dir)!r} "
                    "(list them: harness-ros memory pending)"
                )
            if accept:
                if record["kind"] == "memory" and record.get("section") not in SECTIONS:
                    raise MemoryStoreError(
                        f"Held entry {str(path)!r}: unknown section {record.get('section')!r}"
                    )
                if record["kind"] == "tool_experience" and (
                    not valid_tool_name(record.get("tool")) or record.get("outcome") not in OUTCOME_SECTIONS
                ):
                    raise MemoryStoreError(f"Held entry {str(path)!r}: invalid tool or outcome")
                self._write_accepted([record])
            fields = {
                key: record.get(key) for key in ("task_id", "kind", "section", "tool", "outcome", "text")
            }
            decision = "accepted" if accept else "rejected"
            self._audit(
                [
                    {
                        "event": "review",
                        "id": entry_id,
                        "decision": decision,
                        "rule": record.get("rule"),
                        **fields,
                    }
                ]
            )
            path.unlink(missing_ok=True)
        return {**record, "id": entry_id, "decision": decision}

    def _audit(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        now = time.time()
        payload = "".join(
            json.dumps({"time": now, **record}, ensure_ascii=False, sort_keys=True, default=str) + "\n"
            for record in records
        ).encode("utf-8")
        self._rotate_audit(len(payload))
        append_bytes(self.audit_path, payload)

    def audit_files(self) -> list[Path]:
        """The audit log and its rotated generations, oldest first."""
        rotated = [self.root / f"{AUDIT_FILE}.{n}" for n in range(self.audit_keep, 0, -1)]
        return [path for path in [*rotated, self.audit_path] if path.is_file()]

    def _rotate_audit(self, incoming: int) -> None:
        """Rotate by size: audit.jsonl -> .1 -> .2 ... ; the oldest beyond ``audit_keep`` goes.

        Renames are atomic, so a reader sees whole files; a concurrent writer at worst
        appends a line to the generation just renamed (kept, not lost)."""
        limit = self.audit_max_bytes
        if limit is None:
            return
        try:
            size = self.audit_path.stat().st_size
        except FileNotFoundError:
            return
        except OSError as err:
            logger.warning("Cannot check the size of %s: %s", self.audit_path, err.strerror)
            return
        if size == 0 or size + incoming <= limit:
            return
        try:
            if self.audit_keep == 0:
                self.audit_path.unlink()
                return
            for n in range(self.audit_keep - 1, 0, -1):
                older = self.root / f"{AUDIT_FILE}.{n}"
                if older.exists():
                    older.replace(self.root / f"{AUDIT_FILE}.{n + 1}")
            self.audit_path.replace(self.root / f"{AUDIT_FILE}.1")
        except OSError as err:  # another process rotated it meanwhile, or a full disk
            logger.warning("Cannot rotate %s: %s", self.audit_path, err.strerror)

    def audit_records(self) -> list[dict[str, Any]]:
        """The audit log (rotated generations first); a line torn by a crash is skipped."""
        text = "".join((read_text(path) or "") + "\n" for path in self.audit_files())
        records = []
        for line in text.splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                record = json.loads(line)
                if isinstance(record, dict):
                    records.append(record)
        return records

    # ------------------------------------------------------------------ pending retries

    def pending_files(self) -> list[Path]:
        return sorted(self.pending_dir.glob("*.json")) if self.pending_dir.is_dir() else []

    def _pending_count(self) -> int:
        return len(self.pending_files())

    def _save_pending(self, trajectory: dict[str, Any], allowed: list[str], error: str) -> None:
        self.pending_dir.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns():020d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', str(trajectory['task_id']))}.json"
        record = {"trajectory": trajectory, "allowed_tools": allowed, "attempts": 1, "last_error": error}
        atomic_write_bytes(self.pending_dir / name, json.dumps(record, ensure_ascii=False).encode("utf-8"))
        files = self.pending_files()
        for oldest in files[: max(0, len(files) - self.pending_limit)]:
            self._drop_pending(oldest, f"more than {self.pending_limit} pending consolidations")

    def _drop_pending(self, path: Path, why: str) -> None:
        logger.warning("Dropping pending consolidation %s: %s", path.name, why)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        self._audit([{"event": "pending_dropped", "file": path.name, "reason": why}])

    def _retry_pending(self) -> tuple[int, int]:
        """Retry kept trajectories, oldest first, stopping at the first failure."""
        retried = 0
        for path in self.pending_files():
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                trajectory = record["trajectory"]
                allowed = list(record.get("allowed_tools") or [])
            except (OSError, ValueError, KeyError, TypeError) as err:
                if not path.exists():
                    continue  # another process retried it meanwhile
                self._drop_pending(path, f"unreadable: {err}")
                continue
            try:
                self._consolidate(trajectory, allowed, dry_run=False)
            except Exception as err:  # noqa: BLE001 - a retry failure is reported, never raised
                attempts = int(record.get("attempts", 1)) + 1
                if attempts >= self.max_pending_attempts:
                    self._drop_pending(path, f"failed {attempts} times, last: {err}")
                else:
                    record.update(attempts=attempts, last_error=f"{type(err).__name__}: {err}")
                    with contextlib.suppress(MemoryStoreError):
                        atomic_write_bytes(path, json.dumps(record, ensure_ascii=False).encode("utf-8"))
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            retried += 1
        return retried, self._pending_count()

    # ------------------------------------------------------------------ ledger summaries

    def _read_summary_cache(self) -> dict[str, Any]:
        try:
            raw = json.loads(read_text(self.root / SUMMARY_CACHE_FILE) or "{}")
        except (ValueError, MemoryStoreError) as err:
            logger.warning("Ignoring unreadable summary cache in %s: %s", self.root, err)
            return {}
        return raw if isinstance(raw, dict) else {}

    def _ledger_digest(self, tool: str) -> tuple[str, dict[str, list[str]]] | None:
        text = read_text(self.ledger_path(tool))
        if text is None:
            return None
        entries = SectionedDocument(text)
        ledger = {outcome: entries.entries(section) for outcome, section in OUTCOME_SECTIONS.items()}
        if not ledger["success"] and not ledger["failure"]:
            return None
        return hashlib.sha256(text.encode("utf-8")).hexdigest(), ledger

    def cached_summary(self, tool: str) -> str | None:
        """The cached summary of an unchanged ledger, without any model call."""
        digest = self._ledger_digest(tool)
        if digest is None:
            return None
        cached = self._read_summary_cache().get(tool)
        if (
            isinstance(cached, dict)
            and cached.get("sha256") == digest[0]
            and isinstance(cached.get("summary"), str)
        ):
            summary = str(cached["summary"])[:SUMMARY_MAX_CHARS]
            return summary if self._summary_refusal(summary) is None else None
        return None

    def _summary_refusal(self, summary: str) -> str | None:
        """Why the guard does not let a ledger summary into a tool description, or None.

        A summary is model-written text entering every later prompt, so it passes the same
        guard as a memory entry: refused or held, it is not used."""
        verdict = screen(summary, self.poisoning_rules)
        return None if verdict.accepted else f"{verdict.outcome}: {verdict.rule}"

    def _refused_summary_notice(self, tool: str, why: str) -> None:
        logger.warning("Summary of the %r ledger not used: the memory guard says %s", tool, why)
        self.notices.append(
            {
                "notice": "ledger_summary_refused",
                "tool": tool,
                "reason": why,
                "message": f"the summary of the {tool} ledger did not pass the memory guard ({why}): "
                "it is not in the tool description",
            }
        )

    def _summary_fallback(self, tool: str, cached: Any, summaries: dict[str, str]) -> None:
        """A changed ledger that cannot be summarised now: the last cached summary (of an
        earlier ledger) stands in, and a notice says so; without one the ledger is left
        out of the tool definition, and the notice says that. Never silent."""
        reason = self.summary_errors[tool]
        if (
            isinstance(cached, dict)
            and isinstance(cached.get("summary"), str)
            and cached["summary"].strip()
            and self._summary_refusal(cached["summary"]) is None
        ):
            summaries[tool] = " ".join(cached["summary"].split())[:SUMMARY_MAX_CHARS]
            logger.warning("Ledger of %r not summarised (%s): using its last cached summary", tool, reason)
            self.notices.append(
                {
                    "notice": "ledger_summary_fallback",
                    "tool": tool,
                    "reason": reason,
                    "message": f"ledger of {tool} changed and could not be summarised ({reason}): "
                    "the tool description carries its last cached summary",
                }
            )
            return
        logger.warning("Ledger of %r not summarised (%s) and no cached summary: left out", tool, reason)
        self.notices.append(
            {
                "notice": "ledger_omitted",
                "tool": tool,
                "reason": reason,
                "message": f"ledger of {tool} could not be summarised ({reason}) and has no cached "
                "summary: its experience is not in the tool description",
            }
        )

    def take_notices(self) -> list[dict[str, Any]]:
        """Notices gathered since the last call (ledger fallbacks, budget), oldest first."""
        taken, self.notices = self.notices, []
        return taken

    def tool_experience_summaries(self, tool_names: Iterable[str]) -> dict[str, str]:
        """Summary per tool that has a non-empty ledger; a changed ledger is re-summarised once."""
        summaries: dict[str, str] = {}
        fresh: dict[str, dict[str, str]] = {}
        cache = self._read_summary_cache()
        for tool in tool_names:
            if not valid_tool_name(tool):
                continue
            digest = self._ledger_digest(tool)
            if digest is None:
                continue
            sha, ledger = digest
            cached = cache.get(tool)
            if (
                isinstance(cached, dict)
                and cached.get("sha256") == sha
                and isinstance(cached.get("summary"), str)
            ):
                summary = str(cached["summary"])[:SUMMARY_MAX_CHARS]
                refusal = self._summary_refusal(summary)
                if refusal is None:
                    summaries[tool] = summary
                else:  # a cache written by hand or by an older version: the guard still applies
                    self._refused_summary_notice(tool, refusal)
                continue
            if self.summarizer is None:
                self.summary_errors[tool] = "no tool_experience_summarizer configured"
                self._summary_fallback(tool, cached, summaries)
                continue
            try:
                summary = self.summarizer.summarize(
                    tool, success=ledger["success"], failure=ledger["failure"]
                )
            except Exception as err:  # noqa: BLE001 - a summary failure must not stop a task from starting
                self.summary_errors[tool] = f"{type(err).__name__}: {err}"
                self._summary_fallback(tool, cached, summaries)
                continue
            summary = " ".join(str(summary).split())[:SUMMARY_MAX_CHARS]
            refusal = self._summary_refusal(summary) if summary else None
            if refusal is not None:
                # Not cached: the next task start asks again; meanwhile the last good summary
                # (of an earlier ledger) stands in, or the ledger is left out, with a notice.
                self._refused_summary_notice(tool, refusal)
                self.summary_errors[tool] = f"its new summary did not pass the memory guard ({refusal})"
                self._summary_fallback(tool, cached, summaries)
                continue
            if summary:
                summaries[tool] = summary
                fresh[tool] = {"sha256": sha, "summary": summary}
                self.summary_errors.pop(tool, None)
        if fresh:
            with memory_lock(self.root, timeout_s=self.lock_timeout_s):
                merged = self._read_summary_cache()
                merged.update(fresh)
                payload = json.dumps(merged, ensure_ascii=False, indent=1, sort_keys=True)
                atomic_write_bytes(self.root / SUMMARY_CACHE_FILE, payload.encode("utf-8"))
        return summaries
