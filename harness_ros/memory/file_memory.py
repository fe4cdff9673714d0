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

``FileMemory`` is the facade the harness, replay and the CLI use; each job is a part:

- ``store``: the files (paths, reads, lock, journal, audit and its rotation, held entries);
- ``consolidation``: the pure decision (validation, then accept / hold / reject per entry);
- ``pending``: failed consolidations kept for a retry;
- ``summaries``: ledger summaries for tool descriptions, and their cache;
- ``resident``: the Resident-context projection of MEMORY.md within its budget;
- ``task_notes``: the running task's notes.

Consolidation is the only path to durable memory, and it is conservative: the decision
(``consolidation``) is made under the inter-process lock against the documents as they
are then, and accepted entries are inserted (never rewritten) with atomic file replacement.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_ros.errors import MemoryStoreError
from harness_ros.memory.consolidation import (
    LABELS,
    MAX_ENTRY_CHARS,
    ConsolidationDecision,
    DecisionPolicy,
    check_trajectory,
    decide_consolidation,
    refusal_records,
    tally,
)
from harness_ros.memory.contracts import (
    LedgerLesson,
    LedgerProblem,
    MemoryConsolidation,
    MemoryConsolidatorProtocol,
    TaskNotesSnapshot,
    ToolExperienceSummarizerProtocol,
)
from harness_ros.memory.evidence import with_recovery_lessons
from harness_ros.memory.model_policies import ModelMemoryConsolidator, ModelToolExperienceSummarizer
from harness_ros.memory.pending import PendingRetries
from harness_ros.memory.provenance import operator_texts
from harness_ros.memory.resident import escape_entry, render_resident
from harness_ros.memory.rules import (
    DEFAULT_POISONING_RULES,
    DEFAULT_TRANSIENT_RULES,
    TextRule,
    TransientRule,
    screen,
)
from harness_ros.memory.store import DEFAULT_AUDIT_KEEP, DEFAULT_AUDIT_MAX_BYTES, MemoryStore
from harness_ros.memory.summaries import LedgerSummaries
from harness_ros.memory.task_notes import TaskNotes
from harness_ros.memory.world import (
    WORLD_FILE,
    WorldDocument,
    changes_json,
    fold_steps,
    recall,
    render_brief,
)
from harness_ros.memory.world_contracts import RECALL_OBJECT, WorldChange
from harness_ros.trajectory import StepVerdict, Trajectory, TrajectoryStep
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
    "escape_entry",
]

logger = logging.getLogger(__name__)

TASK_STATUSES = frozenset({"completed", "aborted", "failed", "cancelled"})
TASK_OUTCOMES = frozenset({"succeeded", "failed", "unverified"})


def _typed(trajectory: Trajectory, where: str) -> Trajectory:
    """``trajectory``, refused with a clear error when it is not the typed one: a dict is
    read once, where it comes from a file (``Trajectory.from_json``, ``load_trajectory``)."""
    if not isinstance(trajectory, Trajectory):
        msg = (  # type: ignore[unreachable]  # untyped callers can pass anything
            f"FileMemory.{where} takes a typed Trajectory, got {type(trajectory).__name__}: "
            "read a trajectory file with harness_ros.trajectory.load_trajectory "
            "(or Trajectory.from_json) first"
        )
        raise TypeError(msg)
    return trajectory


def _read(path: Path) -> str | None:
    from harness_ros.memory.storage import read_text

    return read_text(path)


def _conservative_tokens(text: str) -> int:
    """Tokens of ``text``, over-counted (characters / 3): ids split into many tokens."""
    return -(-len(text) // 3)


def _check_threshold(value: Any) -> float:
    problem = confidence_problem(value)
    if problem is not None:
        raise MemoryStoreError(f"min_confidence {problem}")
    return float(value)


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
        recovery_lessons: bool = True,
        world: bool = True,
        world_brief_tokens: int = 120,
    ) -> None:
        self.root = Path(root)
        self.world = world
        """Whether WORLD.md is kept and briefed (``memory.world``; off: the eval's other arm)."""
        self.world_brief_tokens = world_brief_tokens
        self.count_tokens: Callable[[str], int] = _conservative_tokens
        """Counts the world brief's tokens (set the local model's tokenizer where it runs)."""
        self._world_base: WorldDocument | None = None
        self._world_told = 0
        self._world_briefed = False
        self.world_time: float | None = None
        """When the last task's evidence was folded (an operator's world entry is stamped so)."""
        self.recovery_lessons = recovery_lessons
        """Whether a recovery the trajectory proves becomes a failure lesson when the
        consolidator proposes none for that tool (``memory.evidence``)."""
        self.min_confidence = _check_threshold(min_confidence)
        self.store = MemoryStore(
            self.root, lock_timeout_s=lock_timeout_s, audit_max_bytes=audit_max_bytes, audit_keep=audit_keep
        )
        self.pending = PendingRetries(self.store, limit=pending_limit, max_attempts=max_pending_attempts)
        if resident_budget_chars is not None and resident_budget_chars < 1:
            raise MemoryStoreError("resident_budget_chars must be >= 1 (or None: no budget)")
        self.store.open()
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
        self.resident_budget_chars = resident_budget_chars
        self.notices: list[dict[str, Any]] = []
        """What the operator must hear at task start (``memory_notice`` events): a ledger
        summary fallback, a ledger left out, the Resident memory budget exceeded."""
        self.summaries = LedgerSummaries(self.store, notify=self._notify)
        self._notes: TaskNotes | None = None
        self._shown: Trajectory | None = None
        """The notes as of the last snapshot the model was shown (None: show them whole)."""
        self._notes_lock = threading.Lock()

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
            recovery_lessons=config.recovery_lessons,
            world=config.world,
        )

    # ------------------------------------------------------------------ settings, paths, reads

    @property
    def pending_limit(self) -> int:
        return self.pending.limit

    @property
    def max_pending_attempts(self) -> int:
        return self.pending.max_attempts

    @property
    def lock_timeout_s(self) -> float:
        return self.store.lock_timeout_s

    @property
    def audit_max_bytes(self) -> int | None:
        return self.store.audit_max_bytes

    @property
    def audit_keep(self) -> int:
        return self.store.audit_keep

    @property
    def policy(self) -> DecisionPolicy:
        """What the consolidation decision depends on, as set now."""
        return DecisionPolicy(self.min_confidence, self.transient_rules, self.poisoning_rules)

    @property
    def memory_path(self) -> Path:
        return self.store.memory_path

    @property
    def notes_path(self) -> Path:
        return self.store.notes_path

    @property
    def audit_path(self) -> Path:
        return self.store.audit_path

    @property
    def pending_dir(self) -> Path:
        return self.store.pending_dir

    @property
    def held_dir(self) -> Path:
        return self.store.held_dir

    def ledger_path(self, tool: str) -> Path:
        return self.store.ledger_path(tool)

    def ledger_tools(self) -> list[str]:
        """Tools that have a ledger file."""
        return self.store.ledger_tools()

    def memory_entries(self) -> dict[str, list[str]]:
        """Entry texts of the three controlled sections (labels removed)."""
        return self.store.memory_entries()

    def ledger_entries(self, tool: str) -> dict[str, list[str]]:
        return self.store.ledger_entries(tool)

    def failure_lessons(self, tool: str) -> list[LedgerLesson]:
        """The Failure lines of ``tool``'s ledger that pass the memory guard now (a ledger
        can be edited by hand; these go into a prompt as they are, not as a summary), each
        with the recovery lesson stored with it (None: words only). A lesson's rendered
        words pass the guard too: the note bound to a failed call is made from them."""
        lessons, _ = self.store.ledger_lessons(tool)
        return [
            found
            for found in lessons
            if screen(found.text, self.poisoning_rules).accepted
            and (
                found.lesson is None
                or found.lesson.text == found.text  # as written: screened just now
                or screen(found.lesson.text, self.poisoning_rules).accepted
            )
        ]

    def ledger_problems(self, tool_names: Iterable[str]) -> list[LedgerProblem]:
        """The ledger lines of these tools whose data part is not a lesson, each reported (a
        warning and a ``ledger_line_malformed`` notice naming the file, the line and what is
        wrong); the entries are kept as words."""
        problems: list[LedgerProblem] = []
        for tool in tool_names:
            if not valid_tool_name(tool) or not self.store.ledger_path(tool).is_file():
                continue
            for outcome in ("success", "failure"):
                problems += self.store.ledger_lessons(tool, outcome)[1]
        for problem in problems:
            logger.warning("%s", problem.describe())
            self._notify({"notice": "ledger_line_malformed", "message": problem.describe()})
        return problems

    def resident_memory(self) -> str:
        """The Resident-context projection (``resident.render_resident``); over
        ``resident_budget_chars`` a ``resident_budget_exceeded`` notice is queued."""
        text, notice = render_resident(self.store.memory_text(), self.resident_budget_chars)
        if notice is not None:
            logger.warning("%s", notice["message"])
            self.notices.append(notice)
        return text

    # ------------------------------------------------------------------ task notes

    def start_task(self, goal: str, *, task_id: str | None = None) -> str:
        """Reset Task Notes for a new task; returns its task id."""
        self.notices = []  # a new task hears only about its own start
        with self._notes_lock:
            self._notes = TaskNotes(goal, task_id=task_id)
            self._shown = None
            self._world_base = self.world_document() if self.world else None
            self._world_told = 0
            self._world_briefed = False
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
        """Append one compact event; ``verdict`` is a ``StepVerdict``, a dict or has
        ``to_dict()`` (or None); ``refusal`` names why a call did not run (it is then no
        failure evidence)."""
        typed = StepVerdict.of(verdict)  # a bad verdict raises before the notes change
        with self._notes_lock:
            notes = self._require_notes()
            notes.record(tool, arguments, result, typed, refusal=refusal)
            self._write_notes(notes)

    def record_step(self, step: TrajectoryStep) -> None:
        """Append the live fold's step to the notes, the typed object itself."""
        with self._notes_lock:
            notes = self._require_notes()
            notes.record_step(step)
            self._write_notes(notes)

    def task_notes_snapshot_if_changed(self) -> TaskNotesSnapshot | None:
        """The model's snapshot of the notes when they changed since the last one it was
        shown, else None; None too while they hold nothing but the goal (the model has it).
        After the first, a snapshot holds only the changes (``update``): the model keeps the
        earlier ones in its history. It is whole again when the bounded timeline dropped a
        step or after ``show_whole_task_notes`` (compaction summarised the earlier ones)."""
        with self._notes_lock:
            world = self._world_news()
            snapshot = self._notes_snapshot()
        if not world:
            return snapshot
        if snapshot is None:
            return TaskNotesSnapshot(world, update=self._shown is not None)
        return TaskNotesSnapshot(f"{snapshot.text}\n{world}", update=snapshot.update)

    def _notes_snapshot(self) -> TaskNotesSnapshot | None:
        if self._notes is None or not self._notes.has_news:
            return None
        current, shown = self._notes.trajectory, self._shown
        if current is shown:
            return None
        self._shown = current
        if shown is None or not current.extends(shown):
            return TaskNotesSnapshot(current.render_for_model(), update=False)
        changes = current.render_changes_for_model(shown)
        return TaskNotesSnapshot(changes, update=True) if changes else None

    def _world_news(self) -> str:
        """Before the first decision, the world brief; later, each entry this task's
        evidence marked stale (the model is told once). Empty when there is none."""
        if self._notes is None or self._world_base is None:
            return ""
        now = time.time()
        doc, changes = self._world_now(now)
        lines: list[str] = []
        if not self._world_briefed:
            self._world_briefed = True
            brief = render_brief(
                doc, self._notes.goal, now, max_tokens=self.world_brief_tokens, count=self.count_tokens
            )
            if brief:
                lines.append(brief)
        stale = [change for change in changes[self._world_told :] if change.change == "stale"]
        self._world_told = len(changes)
        lines.extend(
            f"World memory: {change.name} was not where memory said ({change.where}): marked STALE; "
            "search for it or recall_object."
            for change in stale
        )
        return "\n".join(lines)

    # ------------------------------------------------------------------ world memory

    @property
    def world_path(self) -> Path:
        return self.root / WORLD_FILE

    def world_document(self) -> WorldDocument:
        """WORLD.md as it is now; each malformed line is reported (a warning and a
        ``world_line_malformed`` notice naming the file, the line and the field) and kept."""
        from harness_ros.memory.storage import read_text

        doc = WorldDocument.parse(read_text(self.world_path), str(self.world_path))
        for problem in doc.problems:
            logger.warning("%s", problem.describe())
            self._notify({"kind": "world_line_malformed", "message": problem.describe()})
        return doc

    def _world_now(self, now: float) -> tuple[WorldDocument, list[WorldChange]]:
        """The world as the task sees it: WORLD.md at task start with this task's evidence."""
        assert self._world_base is not None and self._notes is not None
        doc = self._world_base.copy()
        changes = fold_steps(doc, self._notes.trajectory.steps, now)
        return doc, changes

    def recall_object(self, query: str) -> dict[str, Any]:
        """``recall_object``'s answer (``world.recall``), from this task's view when one runs."""
        now = time.time()
        with self._notes_lock:
            if self._notes is not None and self._world_base is not None:
                doc, _ = self._world_now(now)
            else:
                doc = self.world_document()
        return recall(doc, query, now)

    def has_world(self) -> bool:
        """Whether WORLD.md holds any entry (``recall_object`` is offered only then)."""
        if not self.world:
            return False
        with self._notes_lock:
            base = self._world_base
        doc = base if base is not None else WorldDocument.parse(_read(self.world_path))
        return bool(doc.entries)

    def commit_world(self, trajectory: Trajectory, at: float) -> dict[str, Any]:
        """Fold a task's evidence into WORLD.md, under the lock, written atomically (only
        when it changed); every fact of the task is stamped ``at``. What changed."""
        from harness_ros.memory.storage import atomic_write_bytes

        steps = _typed(trajectory, "commit_world").steps
        # A task whose evidence changes nothing (a failed task, a chat) leaves the memory
        # folder untouched: not even the lock file is created.
        probe = WorldDocument.parse(_read(self.world_path), str(self.world_path))
        if not fold_steps(probe, steps, at):
            self.world_time = at
            return {"time": at, "changes": []}
        with self.store.lock():
            doc = WorldDocument.parse(_read(self.world_path), str(self.world_path))
            before = doc.text()
            changes = fold_steps(doc, steps, at)
            if doc.text() != before:
                atomic_write_bytes(self.world_path, doc.text().encode("utf-8"))
        self.world_time = at
        return {"time": at, "changes": changes_json(changes)}

    def show_whole_task_notes(self) -> None:
        """Make the next snapshot whole: the earlier ones left the model's context."""
        with self._notes_lock:
            self._shown = None

    def trajectory(self) -> Trajectory:
        """The running task's trajectory, as its notes hold it (``to_json`` for a file)."""
        with self._notes_lock:
            return self._require_notes().trajectory

    def _require_notes(self) -> TaskNotes:
        if self._notes is None:
            raise MemoryStoreError(f"No task is running in memory folder {str(self.root)!r}: call start_task")
        return self._notes

    def _write_notes(self, notes: TaskNotes) -> None:
        self.store.write_notes(notes.render())

    def _expire_notes(self) -> None:
        with self._notes_lock:
            self._notes = None
            self._shown = None
        self.store.remove_notes()

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
        allowed = [tool for tool in allowed_tools if tool != RECALL_OBJECT]  # a memory read: no ledger
        with self._notes_lock:
            notes = self._notes
            if notes is not None:
                notes.status = status
                notes.phase = "finishing"
                if outcome is not None:
                    notes.outcome = outcome
            trajectory = notes.trajectory if notes is not None else None
        result = self._empty_result(trajectory.task_id if trajectory is not None else None)
        result["status"] = status
        result["trajectory"] = trajectory  # typed: a caller writing it to a file takes to_json()
        if trajectory is not None and self.world:
            try:  # evidence is evidence whatever the task's status
                result["world"] = self.commit_world(trajectory, time.time())
            except Exception as err:  # noqa: BLE001 - never crash the task's end
                logger.warning("World memory of task %s not written: %s", trajectory.task_id, err)
                result["world"] = {"error": f"{type(err).__name__}: {err}"}
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
        self, trajectory: Trajectory, allowed: list[str], result: dict[str, Any]
    ) -> None:
        try:
            result.update(self._consolidate(trajectory, allowed, dry_run=False))
        except Exception as err:  # noqa: BLE001 - a consolidation failure must never crash the task
            result["error"] = f"{type(err).__name__}: {err}"
            logger.warning("Consolidation of task %s failed: %s", trajectory.task_id, result["error"])
            try:
                self.store.audit(
                    [
                        {
                            "event": "consolidation_failed",
                            "task_id": trajectory.task_id,
                            "error": result["error"],
                        }
                    ]
                )
                self.pending.save(trajectory, allowed, result["error"])
            except Exception as save_err:  # noqa: BLE001 - still never raise out of finish_task
                result["error"] += f"; the trajectory could not be kept for retry: {save_err}"
            result["pending"] = self.pending.count()
            return
        retried, pending = self.pending.retry(self._retry_one)
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
        self,
        trajectory: Trajectory,
        *,
        allowed_tools: Iterable[str],
        dry_run: bool = False,
        world_time: float | None = None,
    ) -> dict[str, Any]:
        """Consolidate a saved completed trajectory (offline, replay). Raises on failure.
        The caller read it from its file (``load_trajectory``, ``Trajectory.from_json``
        naming the file in its errors). With ``world_time`` (replay: the time the recorded
        run folded it) the task's evidence is folded into WORLD.md too, stamped with it."""
        trajectory = _typed(trajectory, "consolidate_trajectory")
        result = self._empty_result(trajectory.task_id or None)
        if world_time is not None and self.world and not dry_run:
            result["world"] = self.commit_world(trajectory, world_time)
        if self.consolidator is None:
            result.update(skipped=True, reason="no consolidator configured: durable writes are a no-op")
            return result
        allowed = [tool for tool in allowed_tools if tool != RECALL_OBJECT]
        result.update(self._consolidate(trajectory, allowed, dry_run=dry_run))
        result["dry_run"] = dry_run
        return result

    def _retry_one(self, trajectory: Trajectory, allowed: list[str]) -> None:
        # pending/ read the kept trajectory from its file and typed it there.
        self._consolidate(trajectory, allowed, dry_run=False)

    def _consolidate(self, trajectory: Trajectory, allowed: list[str], *, dry_run: bool) -> dict[str, Any]:
        """Ask the consolidator, decide under the lock against the documents as they are,
        then apply the accepted and held entries with their audit records (journaled)."""
        assert self.consolidator is not None
        steps = check_trajectory(trajectory)
        bad_tools = [tool for tool in allowed if not valid_tool_name(tool)]
        if bad_tools:
            raise MemoryStoreError(f"Invalid allowed tool names {bad_tools!r}")
        existing = {
            "memory": self.memory_entries(),
            "tool_experience": {tool: self.ledger_entries(tool) for tool in allowed},
        }
        # The typed trajectory: a model consolidator writes its JSON into the prompt itself.
        proposal = self.consolidator.consolidate(trajectory, allowed_tools=list(allowed), existing=existing)
        if self.recovery_lessons and isinstance(proposal, MemoryConsolidation):
            proposal = with_recovery_lessons(proposal, steps, allowed)
        task_id = trajectory.task_id
        operator = operator_texts(trajectory)
        task_outcome = trajectory.outcome
        if dry_run:
            decisions = self._decide(proposal, trajectory, operator, allowed)
        else:
            with self.store.lock():
                decisions = self._decide(proposal, trajectory, operator, allowed)
                audit = [
                    {"event": "proposal", "task_id": task_id, "task_outcome": task_outcome, **d.to_dict()}
                    for d in decisions
                ]
                audit += refusal_records(task_id, task_outcome, steps)
                held = [{"task_id": task_id, "time": time.time(), **d.to_dict()} for d in decisions if d.held]
                self.store.apply_journaled([d.to_dict() for d in decisions if d.accepted], audit, held)
        from harness_ros.memory.world_operator import consolidate_world

        world = consolidate_world(self, proposal, steps, operator, dry_run=dry_run)
        return {**tally(decisions), **world}

    def _stored_for_dedup(self, tool: str) -> dict[str, list[str]]:
        """``tool``'s entries as de-duplication compares them: as the file words them, and
        each stored lesson also as the harness words it, so the same recovery is a duplicate
        after an operator reworded its sentence."""
        entries = self.ledger_entries(tool)
        for outcome in entries:
            lessons, _ = self.store.ledger_lessons(tool, outcome)
            entries[outcome] += [found.lesson.text for found in lessons if found.lesson is not None]
        return entries

    def _decide(
        self, proposal: Any, trajectory: Trajectory, operator: list[str], allowed: list[str]
    ) -> list[ConsolidationDecision]:
        """The pure decision (``consolidation.decide_consolidation``) against the stored
        entries as they are now (the caller holds the lock when it will write)."""
        # Only the ledgers proposed for: read by comparison (a bad entry's tool may not be hashable).
        entries = getattr(proposal, "tool_experience_entries", ())
        tools = [tool for tool in allowed if any(getattr(entry, "tool", None) == tool for entry in entries)]
        return decide_consolidation(
            proposal,
            trajectory,
            operator,
            allowed=allowed,
            policy=self.policy,
            memory=self.memory_entries(),
            ledgers={tool: self._stored_for_dedup(tool) for tool in tools},
        )

    # ------------------------------------------------------------------ held, audit, pending

    def held_entries(self) -> list[dict[str, Any]]:
        """Entries waiting for the operator's review, oldest first, each with its ``id``."""
        return self.store.held_entries()

    def review_held(self, entry_id: str, *, accept: bool) -> dict[str, Any]:
        """The operator's decision on a held entry (``MemoryStore.review_held``)."""
        return self.store.review_held(entry_id, accept=accept)

    def _audit(self, records: list[dict[str, Any]]) -> None:
        self.store.audit(records)

    def audit_files(self) -> list[Path]:
        """The audit log and its rotated generations, oldest first."""
        return self.store.audit_files()

    def audit_records(self) -> list[dict[str, Any]]:
        """The audit log (rotated generations first); a line torn by a crash is skipped."""
        return self.store.audit_records()

    def pending_files(self) -> list[Path]:
        return self.pending.files()

    # ------------------------------------------------------------------ ledger summaries

    def _notify(self, notice: dict[str, Any]) -> None:
        # Looked up at each call: start_task and take_notices replace the list.
        self.notices.append(notice)

    @property
    def summary_errors(self) -> dict[str, str]:
        """Why a tool's ledger has no fresh summary."""
        return self.summaries.errors

    def cached_summary(self, tool: str) -> str | None:
        """The cached summary of an unchanged ledger, without any model call."""
        return self.summaries.cached(tool, self.poisoning_rules)

    def take_notices(self) -> list[dict[str, Any]]:
        """Notices gathered since the last call (ledger fallbacks, budget), oldest first."""
        taken, self.notices = self.notices, []
        return taken

    def tool_experience_summaries(self, tool_names: Iterable[str]) -> dict[str, str]:
        """Summary per tool that has a non-empty ledger; a changed ledger is re-summarised once."""
        names = list(tool_names)
        self.ledger_problems(names)
        return self.summaries.summaries(
            names, summarizer=self.summarizer, poisoning_rules=self.poisoning_rules
        )
