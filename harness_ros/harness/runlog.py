"""The run folder of one task: what happened, what the model saw, how it ended.

``<runs_dir>/<task_id>/``:
- ``events.jsonl``: one harness event per line, flushed as it happens (a crash
  leaves every earlier event readable);
- ``turn_<n>_<view>.jpg``: the images sent to the model at turn n;
- ``report.md``: final status, outcome (and what it rests on), reason and report;
- ``trajectory.json``: the task's trajectory (``harness-ros memory consolidate
  --trajectory`` reads it);
- ``.harness_ros_run``: the marker that lets retention (``harness.runs_keep``) prune it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from harness_ros.errors import TaskRejectedError
from harness_ros.events import HarnessEvent
from harness_ros.retention import mark_run_folder
from harness_ros.trajectory import Trajectory

__all__ = ["RunLog"]

logger = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _outcome_basis(claim: str | None, goal_verdict: dict[str, Any] | None) -> str:
    said = f"the model claimed {claim}" if claim else "the model made no claim"
    if not goal_verdict:
        return f"{said}; no evaluator judged the goal"
    checked = f"the evaluator judged the goal: {goal_verdict.get('status')}"
    why = goal_verdict.get("failure_reason") or goal_verdict.get("evidence")
    return f"{said}; {checked}" + (f" ({why})" if why else "")


class RunLog:
    """Writes one task's run folder. Write errors are logged, never raised: a full
    disk must not stop a robot task halfway."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        try:
            folder.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            msg = f"run folder {str(folder)!r} already exists: use a new task id"
            raise TaskRejectedError(msg) from None
        mark_run_folder(folder)  # retention prunes only folders that carry this marker
        self._events: TextIO | None = (folder / "events.jsonl").open("a", encoding="utf-8")

    def write_event(self, event: HarnessEvent) -> None:
        if self._events is None:
            return
        try:
            self._events.write(event.to_json() + "\n")
            self._events.flush()
        except (OSError, TypeError, ValueError) as err:
            logger.error("cannot write event to %s: %s", self.folder, err)

    def write_image(self, turn: int, name: str, jpeg: bytes) -> str | None:
        """Save one image sent at ``turn``; returns the file name."""
        filename = f"turn_{turn}_{_UNSAFE.sub('_', name) or 'view'}.jpg"
        try:
            (self.folder / filename).write_bytes(jpeg)
        except OSError as err:
            logger.error("cannot write image %s: %s", filename, err)
            return None
        return filename

    def write_report(
        self,
        *,
        task_id: str,
        instruction: str,
        status: str,
        reason: str,
        report: str,
        outcome: str | None = None,
        claim: str | None = None,
        goal_verdict: dict[str, Any] | None = None,
        revisions: Sequence[str] = (),
    ) -> None:
        lines = [f"# Task {task_id}: {status}", ""]
        if outcome is not None:
            lines += ["## Outcome", "", f"{outcome} ({_outcome_basis(claim, goal_verdict)})", ""]
        lines += ["## Instruction", "", instruction.strip(), ""]
        for number, text in enumerate(revisions, start=1):
            lines += [f"Revision {number}: {text.strip()}", ""]
        if reason:
            lines += ["## Reason", "", reason.strip(), ""]
        lines += ["## Report", "", report.strip() or "(no report)", ""]
        try:
            _atomic_write(self.folder / "report.md", "\n".join(lines))
        except OSError as err:
            logger.error("cannot write report in %s: %s", self.folder, err)

    def write_trajectory(self, trajectory: Trajectory) -> None:
        """``trajectory.json``: the typed trajectory's JSON, written here (the file's edge)."""
        try:
            text = json.dumps(trajectory.to_json(), ensure_ascii=False, indent=2, sort_keys=True, default=str)
            _atomic_write(self.folder / "trajectory.json", text + "\n")
        except (OSError, TypeError, ValueError) as err:
            logger.error("cannot write trajectory in %s: %s", self.folder, err)

    def close(self) -> None:
        if self._events is not None:
            try:
                self._events.close()
            finally:
                self._events = None
