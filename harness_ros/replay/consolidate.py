"""Replay recorded tasks through FileMemory consolidation.

Consolidators for a replay:
- a model (``build_model``: the configured one, ``--model``);
- recorded model replies (``--model-replies FILE.jsonl``): only the ``consolidate``
  requests of the recording are served, in order, so a whole-session recording
  (decisions, summaries, evaluations) can be passed as is;
- the recording itself (``--from-recording``): the entries the original run's model
  proposed (from the ``memory_consolidation`` events) are proposed again, so the
  current FileMemory rules re-decide them with no model at all.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from harness_ros.errors import ConfigError, HarnessError, LLMError
from harness_ros.memory.contracts import DurableMemoryEntry, MemoryConsolidation, ToolExperienceEntry
from harness_ros.memory.lessons import LessonDataError, RecoveryLesson
from harness_ros.replay.contracts import ConsolidationTarget, RecordedTask, TaskOutcome
from harness_ros.trajectory import Trajectory

__all__ = [
    "RecordedProposalsConsolidator",
    "consolidation_replies",
    "replay_consolidation",
    "trajectory_for_replay",
]

logger = logging.getLogger(__name__)


def trajectory_for_replay(task: RecordedTask) -> Trajectory:
    """The trajectory to consolidate: the rebuilt one, unless the original run recorded
    the exact trajectory it consolidated and the rebuild differs (then that one, read from
    the recording here, with a warning: the rebuild has drifted from the harness)."""
    recorded = (task.recorded_consolidation or {}).get("trajectory")
    if isinstance(recorded, dict) and recorded.get("events") is not None:
        recorded = {**recorded, "status": task.trajectory.status}
        if recorded != task.trajectory.to_json():  # compared as recorded: every byte counts
            logger.warning(
                "task %s: the trajectory rebuilt from events differs from the one the run "
                "consolidated; using the recorded one",
                task.task_id,
            )
            return Trajectory.from_json(recorded, source=f"trajectory {task.task_id!r}")
    return task.trajectory


def replay_consolidation(
    tasks: Sequence[RecordedTask],
    memory: ConsolidationTarget,
    *,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[TaskOutcome]:
    """Consolidate every completed task in recording order; others are listed as skipped."""
    outcomes: list[TaskOutcome] = []
    for task in tasks:
        commit_world = getattr(memory, "commit_world", None)
        ended = task.status and task.world_time is not None and not dry_run
        if not task.completed and ended and callable(commit_world):
            # Evidence is evidence whatever the task's status, as on the robot.
            commit_world(trajectory_for_replay(task), task.world_time)
        if not task.completed:
            why = f"task {task.status}" if task.status else "the recording ends before the task did"
            outcomes.append(
                TaskOutcome(
                    task.task_id, task.status, skipped=f"{why}: only completed tasks are consolidated"
                )
            )
        else:
            try:
                result = memory.consolidate_trajectory(
                    trajectory_for_replay(task),
                    allowed_tools=list(task.allowed_tools),
                    dry_run=dry_run,
                    world_time=task.world_time,
                )
            except HarnessError as err:
                raise type(err)(f"task {task.task_id}: consolidation failed: {err}") from None
            if result.get("skipped"):
                outcomes.append(
                    TaskOutcome(task.task_id, task.status, skipped=str(result.get("reason") or "skipped"))
                )
            else:
                decisions = tuple(d for d in result.get("decisions") or [] if isinstance(d, dict))
                counts = {k: v for k, v in result.items() if k not in {"decisions", "trajectory"}}
                outcomes.append(TaskOutcome(task.task_id, task.status, decisions=decisions, counts=counts))
        if progress is not None:
            progress(1)
    return outcomes


def consolidation_replies(path: str | Path, folder: Path) -> Path:
    """Write the ``consolidate`` entries of a model recording to ``folder``; returns the file.

    A recording of a whole session holds decide/summarize/evaluate replies too; only the
    consolidation ones answer a consolidation replay.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise LLMError(f"cannot read model replies {str(path)!r}: {err.strerror}") from None
    kept: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as err:
            raise LLMError(f"model replies {str(path)!r} line {number}: not JSON ({err.msg})") from None
        purpose = (entry.get("request") or {}).get("purpose") if isinstance(entry, dict) else None
        if purpose in {"consolidate", None, ""}:
            kept.append(line)
    if not kept:
        raise LLMError(f"model replies {str(path)!r}: no recorded 'consolidate' reply")
    out = folder / "consolidate_replies.jsonl"
    out.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return out


class RecordedProposalsConsolidator:
    """Proposes again what the original run's consolidator proposed (from recorded decisions).

    Keyed by the trajectory's task id; a task without recorded decisions proposes nothing.
    """

    def __init__(self, decisions_by_task: dict[str, Iterable[dict[str, Any]]]) -> None:
        self._decisions = {task_id: list(items) for task_id, items in decisions_by_task.items()}

    @classmethod
    def from_tasks(cls, tasks: Sequence[RecordedTask]) -> RecordedProposalsConsolidator:
        table: dict[str, Iterable[dict[str, Any]]] = {}
        for task in tasks:
            recorded = task.recorded_consolidation or {}
            decisions = recorded.get("decisions")
            if isinstance(decisions, list):
                table[task.task_id] = decisions
                recorded_id = (recorded.get("trajectory") or {}).get("task_id")
                if recorded_id:
                    table[str(recorded_id)] = decisions
        if not table:
            msg = (
                "the recording has no consolidation decisions (memory_consolidation events "
                "with 'decisions'): use --model or --model-replies instead of --from-recording"
            )
            raise ConfigError(msg)
        return cls(table)

    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        decisions = self._decisions.get(task_notes.task_id, [])
        memory = tuple(
            DurableMemoryEntry(
                str(d.get("section") or ""), str(d.get("text") or ""), d.get("confidence"), d.get("source")
            )
            for d in decisions
            if d.get("kind") == "memory"
        )
        experience = tuple(
            ToolExperienceEntry(
                str(d.get("tool") or ""),
                str(d.get("outcome") or ""),
                str(d.get("text") or ""),
                d.get("confidence"),
                _recorded_lesson(d.get("lesson")),
            )
            for d in decisions
            if d.get("kind") == "tool_experience"
        )
        return MemoryConsolidation(memory_entries=memory, tool_experience_entries=experience)


def _recorded_lesson(raw: Any) -> RecoveryLesson | None:
    """A recorded decision's recovery lesson (its data, so the replayed ledger holds it as
    the run's did); None without one, or when it is not a lesson (audited runs before
    lessons were data)."""
    if raw is None:
        return None
    try:
        return RecoveryLesson.from_json(raw)
    except LessonDataError as err:
        logger.warning("A recorded lesson's data is not used: %s", err)
        return None
