"""``on_note``: a note to act says how the last robot call failed, for every model."""

from __future__ import annotations

from dataclasses import dataclass

from harness_ros.harness.guidance.common import failure_clause
from harness_ros.harness.guidance.contracts import GuidancePoint, Note, TaskView

__all__ = ["LastFailureNote"]


@dataclass(frozen=True)
class LastFailureNote:
    """A note to act (a reminder after a plain-text reply, the answer to an empty one), with
    the last robot call's failure when it failed. Calls that only read (loading a skill,
    asking the operator) do not hide it.

    A small model that lost its way after a failed pick (the 1.5B, a grasp out of reach)
    answered the generic note with prose or nothing; the failure, named, is the thing to
    decide on (test_reminders: a skill load after a failed pick does not hide the failure).
    Not only for small models: any model is told what its last robot call did."""

    name: str = "last_failure_note"
    point: GuidancePoint = GuidancePoint.ON_NOTE
    small_models_only: bool = False

    def run(self, view: TaskView) -> Note | None:
        if view.note is None:
            return None
        step = next((s for s in reversed(view.steps) if view.physical(s.tool)), None)
        if step is None or not step.failed:
            return None
        why = failure_clause(step)
        return Note(self.name, f"{view.note} Your last call, {step.tool}, {why}. Decide what to do about it.")
