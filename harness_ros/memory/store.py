"""The memory folder's files: paths, reads, the lock, the journal, the audit and held entries.

Every write goes through ``storage``'s atomic primitives; a write that spans files
(accepted entries, held entries, their audit records) is journaled first, so a process
killed half-way leaves an intent the next writer completes. Accepted entries are only
ever inserted, never rewritten, and everything else in a file (the operator's text) is
kept byte for byte (``SectionedDocument``). No decision is made here: what to write
comes from ``consolidation``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness_ros.errors import MemoryStoreError
from harness_ros.memory.consolidation import LABELS, OUTCOME_SECTIONS, dedup_key
from harness_ros.memory.contracts import SECTIONS, LedgerLesson, LedgerProblem
from harness_ros.memory.document import Bullet, SectionedDocument, with_data, without_data
from harness_ros.memory.lessons import LessonDataError, RecoveryLesson
from harness_ros.memory.storage import (
    append_bytes,
    atomic_write_bytes,
    memory_lock,
    read_text,
    remove_stale_temp_files,
)
from harness_ros.validators import TOOL_NAME_PATTERN, valid_tool_name

__all__ = ["DEFAULT_AUDIT_KEEP", "DEFAULT_AUDIT_MAX_BYTES", "MemoryStore"]

logger = logging.getLogger(__name__)

DEFAULT_AUDIT_MAX_BYTES = 5 * 1024 * 1024
DEFAULT_AUDIT_KEEP = 3

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


def _lesson_of(bullet: Bullet, tool: str) -> RecoveryLesson | None:
    """The lesson of a ledger line's data part (None without one); ``LessonDataError``
    names what is wrong with one that is not a lesson of ``tool``."""
    if bullet.data is None:
        return None
    if not bullet.data.endswith("-->"):
        raise LessonDataError("comment", "the data part's comment is not closed with -->")
    try:
        raw = json.loads(bullet.data[: -len("-->")])
    except ValueError as err:
        raise LessonDataError("json", f"not JSON: {err}") from None
    lesson = RecoveryLesson.from_json(raw)
    if lesson.tool != tool:
        raise LessonDataError("tool", f"a lesson about {lesson.tool!r} in the {tool!r} ledger")
    return lesson


def _with_lesson(entry: Mapping[str, Any]) -> str:
    """An accepted ledger entry's line: its text, and its lesson's data part when it has one
    (a held entry's lesson comes back from a file: read as strictly as the ledger's)."""
    text = without_data(str(entry["text"]))
    if text != str(entry["text"]):
        logger.warning("A data part in the words of %r is not written: only the harness writes one", text)
    raw = entry.get("lesson")
    if raw is None:
        return text
    try:
        lesson = RecoveryLesson.from_json(raw)
    except LessonDataError as err:
        logger.warning("The lesson data of %r is not written (%s): the entry is kept as words", text, err)
        return text
    return with_data(text, lesson.to_json())


class MemoryStore:
    """The files of one memory folder (shared by processes through ``lock``)."""

    def __init__(
        self,
        root: Path,
        *,
        lock_timeout_s: float,
        audit_max_bytes: int | None,
        audit_keep: int,
    ) -> None:
        if audit_keep < 0 or (audit_max_bytes is not None and audit_max_bytes < 1):
            raise MemoryStoreError("audit_keep must be >= 0 and audit_max_bytes >= 1 (or None: no rotation)")
        self.root = root
        self.lock_timeout_s = lock_timeout_s
        self.audit_max_bytes = audit_max_bytes
        self.audit_keep = audit_keep

    def open(self) -> None:
        """Create the folder; remove temp files left by writers killed mid-write."""
        try:
            (self.root / LEDGER_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise MemoryStoreError(
                f"Cannot create memory folder {str(self.root)!r}: {err.strerror}"
            ) from None
        for folder in (self.root, self.root / LEDGER_DIR, self.root / PENDING_DIR):
            remove_stale_temp_files(folder)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The inter-process lock over the folder; an interrupted write is finished first."""
        with memory_lock(self.root, timeout_s=self.lock_timeout_s):
            self.recover_journal()
            yield

    @contextlib.contextmanager
    def lock_only(self) -> Iterator[None]:
        """The inter-process lock, for a file outside the journal (the summary cache)."""
        with memory_lock(self.root, timeout_s=self.lock_timeout_s):
            yield

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

    @property
    def held_dir(self) -> Path:
        return self.root / HELD_DIR

    @property
    def summary_cache_path(self) -> Path:
        return self.root / SUMMARY_CACHE_FILE

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

    def memory_text(self) -> str:
        return read_text(self.memory_path) or ""

    def memory_entries(self) -> dict[str, list[str]]:
        """Entry texts of the three controlled sections (labels removed)."""
        document = SectionedDocument(self.memory_text())
        labels = tuple(LABELS.values())
        return {section: document.entries(section, labels=labels) for section in SECTIONS}

    def ledger_entries(self, tool: str) -> dict[str, list[str]]:
        document = SectionedDocument(read_text(self.ledger_path(tool)) or "")
        return {outcome: document.entries(section) for outcome, section in OUTCOME_SECTIONS.items()}

    def ledger_lessons(
        self, tool: str, outcome: str = "failure"
    ) -> tuple[list[LedgerLesson], list[LedgerProblem]]:
        """The ``outcome`` entries of ``tool``'s ledger, each with the lesson its data part
        holds, and a problem for each data part that is not a lesson of this tool (its
        entry is kept, as words without data). Never raises for what the file holds."""
        path = self.ledger_path(tool)
        document = SectionedDocument(read_text(path) or "")
        lessons: list[LedgerLesson] = []
        problems: list[LedgerProblem] = []
        for bullet in document.bullets(OUTCOME_SECTIONS[outcome]):
            try:
                lesson = _lesson_of(bullet, tool)
            except LessonDataError as err:
                problems.append(LedgerProblem(str(path), bullet.line, err.field, err.message))
                lesson = None
            lessons.append(LedgerLesson(bullet.text, lesson))
        return lessons, problems

    # ------------------------------------------------------------------ task notes file

    def write_notes(self, text: str) -> None:
        atomic_write_bytes(self.notes_path, text.encode("utf-8"))

    def remove_notes(self) -> None:
        try:
            self.notes_path.unlink(missing_ok=True)
        except OSError as err:
            logger.warning("Cannot remove %s: %s", self.notes_path, err.strerror)

    # ------------------------------------------------------------------ journaled writes

    def apply_journaled(
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
        self.write_accepted(accepted)
        self.write_held(held or [])
        self.audit(audit)
        journal.unlink(missing_ok=True)

    def recover_journal(self) -> None:
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
        self.write_accepted(accepted)
        self.write_held(held)
        self.audit([{**record, "recovered": True} for record in audit])
        journal.unlink(missing_ok=True)

    def write_accepted(self, accepted: Sequence[Mapping[str, Any]]) -> None:
        """Insert accepted entries not already present (caller holds the lock)."""
        by_ledger: dict[tuple[str, str], list[tuple[str, str]]] = {}
        by_section: dict[str, list[str]] = {}
        for entry in accepted:
            if entry["kind"] == "memory":
                by_section.setdefault(entry["section"], []).append(entry["text"])
            else:
                line = _with_lesson(entry)
                by_ledger.setdefault((entry["tool"], entry["outcome"]), []).append((entry["text"], line))
        for tool in sorted({tool for tool, _ in by_ledger}):
            path = self.ledger_path(tool)
            document = SectionedDocument(read_text(path) or _LEDGER_TEMPLATE.format(tool=tool))
            present = {
                dedup_key(text) for section in OUTCOME_SECTIONS.values() for text in document.entries(section)
            }
            changed = False
            for outcome, section in OUTCOME_SECTIONS.items():
                new = [
                    line
                    for text, line in by_ledger.get((tool, outcome), [])
                    if dedup_key(text) not in present
                ]
                document.add_entries(section, new, order=("Success", "Failure"))
                changed = changed or bool(new)
            if changed:
                atomic_write_bytes(path, document.text().encode("utf-8"))
        if by_section:
            document = SectionedDocument(read_text(self.memory_path) or _MEMORY_TEMPLATE)
            labels = tuple(LABELS.values())
            present = {
                dedup_key(text) for section in SECTIONS for text in document.entries(section, labels=labels)
            }
            changed = False
            for section in SECTIONS:
                new = [
                    f"[{LABELS[section]}] {text}"
                    for text in by_section.get(section, [])
                    if dedup_key(text) not in present
                ]
                document.add_entries(section, new, order=SECTIONS)
                changed = changed or bool(new)
            if changed:
                atomic_write_bytes(self.memory_path, document.text().encode("utf-8"))

    # ------------------------------------------------------------------ held for review

    @staticmethod
    def held_id(entry: Mapping[str, Any]) -> str:
        """The same entry (kind, place, text) held twice is one review item."""
        place = [entry.get("kind"), entry.get("section"), entry.get("tool"), entry.get("outcome")]
        key = json.dumps([*place, dedup_key(str(entry.get("text", "")))], ensure_ascii=False)
        return hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]

    def write_held(self, held: list[dict[str, Any]]) -> None:
        """Keep held entries for review, one file each (caller holds the lock; idempotent)."""
        if not held:
            return
        self.held_dir.mkdir(parents=True, exist_ok=True)
        for entry in held:
            path = self.held_dir / f"{self.held_id(entry)}.json"
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
        with self.lock():
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
                self.write_accepted([record])
            fields = {
                key: record.get(key) for key in ("task_id", "kind", "section", "tool", "outcome", "text")
            }
            decision = "accepted" if accept else "rejected"
            self.audit(
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

    # ------------------------------------------------------------------ audit

    def audit(self, records: list[dict[str, Any]]) -> None:
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
