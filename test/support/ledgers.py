"""Tool ledgers written the way the harness writes them: a recovery lesson as its words and
its data (``memory.lessons.RecoveryLesson``), a string as a model's or an operator's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_ros.memory import FileMemory
from harness_ros.memory.lessons import LessonArgument, LessonCall, RecoveryLesson

__all__ = ["drive_first", "write_ledger"]


def drive_first(
    tool: str = "grasp",
    failure: str = "object out of reach",
    *,
    reuses: str = "object_id",
    drive: str = "drive",
    **values: Any,
) -> RecoveryLesson:
    """``tool`` failed with ``failure``; a drive to the failed call's ``reuses`` value (and
    ``values`` of its own, ``standoff_m=0``) fixed it: the step to take first next time."""
    own = [LessonArgument(name, value=value) for name, value in values.items()]
    arguments = (LessonArgument("target", reuses=reuses), *own)
    return RecoveryLesson(failure, tool, (LessonCall(drive, arguments),), ahead=True)


def write_ledger(root: Path, tool: str, *failures: RecoveryLesson | str) -> FileMemory:
    """The memory folder at ``root`` with these Failure lessons in ``tool``'s ledger, through
    the writer consolidation uses (``MemoryStore.write_accepted``)."""
    memory = FileMemory(root)
    entries: list[dict[str, Any]] = []
    for failure in failures:
        entry: dict[str, Any] = {"kind": "tool_experience", "tool": tool, "outcome": "failure"}
        if isinstance(failure, RecoveryLesson):
            entry.update(text=failure.text, lesson=failure.to_json())
        else:
            entry["text"] = failure
        entries.append(entry)
    with memory.store.lock():
        memory.store.write_accepted(entries)
    return memory
