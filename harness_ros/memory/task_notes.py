"""Task Notes: the running task's trajectory, as memory keeps and shows it.

The notes hold one ``harness_ros.trajectory.Trajectory`` (the typed steps, revisions and
ending) and render it: they keep no records of their own, and no JSON form: memory
hands the typed ``trajectory`` on (world memory, consolidation), and only the files
(``trajectory.json``, ``pending/``) write its JSON (``Trajectory.to_json``). In a task the notes take the
live fold's own steps (``record_step``: the typed objects, built bounded once by
``Trajectory.with_step``, the constructor replay's fold uses too), so the notes,
``trajectory.json`` and a replayed trajectory agree byte for byte.

An event of a call refused before it ran (argument validation, a safety block or a
denied approval, a missing server) carries ``refusal`` with its kind: it is a refusal,
not evidence of what the tool does on the robot.

The phase follows the task (``PHASES``): ``started`` at the reset, ``acting`` once the
model calls its first tool, ``evaluating`` while the harness checks the goal at the
end, ``finishing`` when the task has ended and is being consolidated.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import Any

from harness_ros.trajectory import PHASES, Trajectory, TrajectoryStep
from harness_ros.trajectory.bounds import MAX_REVISIONS, MAX_STEPS, MAX_STRING_CHARS, cap, compact_value

__all__ = [
    "MAX_EVENTS",
    "MAX_REVISIONS",
    "MAX_STRING_CHARS",
    "PHASES",
    "TaskNotes",
    "compact_value",
]

MAX_EVENTS = MAX_STEPS


def new_task_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


class TaskNotes:
    """The notes of the running task (not thread-safe: one task at a time)."""

    def __init__(self, goal: str, *, task_id: str | None = None, phase: str = "started") -> None:
        self.trajectory = Trajectory.start(goal, task_id=task_id or new_task_id(), phase=phase)

    @property
    def task_id(self) -> str:
        return self.trajectory.task_id

    @property
    def goal(self) -> str:
        return self.trajectory.goal

    @property
    def phase(self) -> str:
        return self.trajectory.phase

    @phase.setter
    def phase(self, phase: str) -> None:
        self.trajectory = replace(self.trajectory, phase=cap(str(phase)))

    @property
    def status(self) -> str:
        return self.trajectory.status

    @status.setter
    def status(self, status: str) -> None:
        self.trajectory = replace(self.trajectory, status=str(status))

    @property
    def outcome(self) -> str | None:
        return self.trajectory.outcome

    @outcome.setter
    def outcome(self, outcome: Any) -> None:
        value = getattr(outcome, "value", outcome)
        self.trajectory = replace(self.trajectory, outcome=None if value is None else str(value))

    def add_revision(self, text: str) -> None:
        """An operator's instruction revision: from now on the goal is judged against it."""
        self.trajectory = self.trajectory.with_revision(text)

    def record(
        self,
        tool: str,
        arguments: Any,
        result: Any,
        verdict: Any,
        refusal: str | None = None,
    ) -> TrajectoryStep:
        """One more step (``Trajectory.with_step``: ``verdict`` a ``StepVerdict``, a mapping
        or anything with ``to_dict()``); returns it."""
        self.trajectory = self.trajectory.with_step(tool, arguments, result, verdict, refusal=refusal)
        step = self.trajectory.last_step
        assert step is not None
        return step

    def record_step(self, step: TrajectoryStep) -> None:
        """The live fold's step, the typed object itself (no JSON in between)."""
        self.trajectory = self.trajectory.with_built_step(step)

    def render(self) -> str:
        """The Markdown text of TASK_NOTES.md."""
        return self.trajectory.render()

    def render_for_model(self) -> str:
        """The snapshot the model sees (``Trajectory.render_for_model``)."""
        return self.trajectory.render_for_model()

    @property
    def has_news(self) -> bool:
        """Whether a snapshot would tell the model anything: a step or a revision."""
        return self.trajectory.has_news
