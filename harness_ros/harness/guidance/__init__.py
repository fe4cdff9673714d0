"""Small-model guidance as named parts, run at declared points in a declared order.

``GUIDANCE`` is the one place that says which parts run and in which order; at each point
the first part that answers decides (the later ones are not asked):

- ``before_call`` (a robot call about to run): ``HeldByExperience``, then ``HeldRepeat``;
- ``before_finish`` (a valid ``finish_task``): ``HeldFinish``;
- ``before_decision`` (the last words of the request): ``HeldFocus``, ``RefusedFocus``,
  ``FailureFocus``, ``AheadFocus``;
- ``on_note`` (a reminder or the answer to an empty reply): ``LastFailureNote``.

A part marked ``small_models_only`` runs only for a guided profile (``model.profile``
small, ``ModelProfile.guided``). ``TaskGuidance`` runs them for one task and keeps its holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness_ros.harness.guidance.ahead_focus import AheadFocus
from harness_ros.harness.guidance.contracts import (
    Advice,
    Focus,
    GuidancePart,
    GuidancePoint,
    Hold,
    Note,
    TaskView,
)
from harness_ros.harness.guidance.failure_focus import FailureFocus
from harness_ros.harness.guidance.held_by_experience import HeldByExperience
from harness_ros.harness.guidance.held_finish import HeldFinish
from harness_ros.harness.guidance.held_focus import HeldFocus
from harness_ros.harness.guidance.held_repeat import HeldRepeat
from harness_ros.harness.guidance.last_failure import LastFailureNote
from harness_ros.harness.guidance.refused_focus import RefusedFocus
from harness_ros.model.contracts import ToolCall

__all__ = [
    "GUIDANCE",
    "Advice",
    "AheadFocus",
    "FailureFocus",
    "Focus",
    "GuidancePart",
    "GuidancePoint",
    "HeldByExperience",
    "HeldFinish",
    "HeldFocus",
    "HeldRepeat",
    "Hold",
    "LastFailureNote",
    "Note",
    "RefusedFocus",
    "TaskGuidance",
    "TaskView",
]

GUIDANCE: tuple[GuidancePart, ...] = (
    # before_call: a first call held for its ledger's step wins over a repeat held while one waits.
    HeldByExperience(),
    HeldRepeat(),
    # before_finish
    HeldFinish(),
    # before_decision: the held call's note first (its step is the plan), then a refused
    # call's, then the open failure's, then a ledger's step ahead of a tool's first call.
    HeldFocus(),
    RefusedFocus(),
    FailureFocus(),
    AheadFocus(),
    # on_note
    LastFailureNote(),
)

_ANSWERS: dict[GuidancePoint, type[Focus] | type[Hold] | type[Note]] = {
    GuidancePoint.BEFORE_DECISION: Focus,
    GuidancePoint.BEFORE_CALL: Hold,
    GuidancePoint.BEFORE_FINISH: Hold,
    GuidancePoint.ON_NOTE: Note,
}


class TaskGuidance:
    """The guidance of one task: runs ``parts`` at each point and keeps the task's holds."""

    def __init__(self, parts: Sequence[GuidancePart] = GUIDANCE) -> None:
        self._parts = tuple(parts)
        self.holds: list[Hold] = []
        """The calls held in this task, oldest first (each part sees them)."""

    def _first(self, point: GuidancePoint, view: TaskView) -> Advice | None:
        seen = dataclasses.replace(view, holds=tuple(self.holds))
        for part in self._parts:
            if part.point is not point or (part.small_models_only and not view.profile.guided):
                continue
            advice = part.run(seen)
            if advice is None:
                continue
            if not isinstance(advice, _ANSWERS[point]):
                raise TypeError(
                    f"guidance part {part.name!r} returned {type(advice).__name__} at {point.value}"
                )
            return advice
        return None

    def before_decision(self, view: TaskView) -> Focus | None:
        """The request's last message, or None."""
        focus = self._first(GuidancePoint.BEFORE_DECISION, view)
        return focus if isinstance(focus, Focus) else None

    def before_call(self, view: TaskView, call: ToolCall) -> Hold | None:
        """A hold for ``call`` (recorded), or None: the call runs."""
        return self._hold(GuidancePoint.BEFORE_CALL, dataclasses.replace(view, call=call))

    def before_finish(self, view: TaskView, call: ToolCall) -> Hold | None:
        """A hold for a valid ``finish_task`` (recorded), or None: the task ends."""
        return self._hold(GuidancePoint.BEFORE_FINISH, dataclasses.replace(view, call=call))

    def on_note(self, view: TaskView, note: str) -> str:
        """The note to answer a reply with: ``note``, or what a part makes of it."""
        advice = self._first(GuidancePoint.ON_NOTE, dataclasses.replace(view, note=note))
        return advice.text if isinstance(advice, Note) else note

    def _hold(self, point: GuidancePoint, view: TaskView) -> Hold | None:
        hold = self._first(point, view)
        if not isinstance(hold, Hold):
            return None
        self.holds.append(hold)
        return hold
