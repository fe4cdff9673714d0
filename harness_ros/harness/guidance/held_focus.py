"""``before_decision``: after a held call, the step to take and the call to make again."""

from __future__ import annotations

from dataclasses import dataclass

from harness_ros.harness.guidance.common import FOCUS_MAX_SINCE, call_of, call_text
from harness_ros.harness.guidance.contracts import Focus, GuidancePoint, TaskView

__all__ = ["HeldFocus"]


@dataclass(frozen=True)
class HeldFocus:
    """After a held call, the step to take and the call to make again, as the last words
    before a decision, until the held tool runs (or a robot call since fails: the failure
    note is about that one).

    With only the held answer (run J, 1.5B), the next call went to the instruction's
    destination in 4 of 5 tasks, the pick taken as done (a place with an empty gripper
    followed); the failure note, which the 1.5B follows, stands at the end."""

    name: str = "held_focus"
    point: GuidancePoint = GuidancePoint.BEFORE_DECISION
    small_models_only: bool = True

    def run(self, view: TaskView) -> Focus | None:
        hold = view.last_hold
        if hold is None or hold.step is None:
            return None
        later = [s for s in view.steps[hold.steps_before + 1 :] if not s.refused]
        since = [s for s in later if view.physical(s.tool)]
        if any(s.tool == hold.tool for s in later) or len(since) > FOCUS_MAX_SINCE:
            return None
        if since and since[-1].failed:
            return None
        physical = view.robot_steps()
        again = call_of(hold.tool, hold.arguments)
        if hold.step.taken(physical, hold.arguments):
            return Focus(self.name, f"The step your experience gives is taken: now call {again}.")
        lines = [
            f"Your last {hold.tool} call, {again}, did not run (the robot did nothing).",
            f"Your experience with {hold.tool} says to call "
            f"{', then '.join(hold.step.calls_for(hold.arguments))} first, then {again}.",
        ]
        if since:
            lines.insert(1, "Since then: " + "; ".join(f"{call_text(s)} succeeded" for s in since) + ".")
        return Focus(self.name, "\n".join(lines))
