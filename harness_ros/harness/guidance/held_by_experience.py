"""``before_call``: a robot tool's first call in a task is held for the step its ledger gives."""

from __future__ import annotations

from dataclasses import dataclass

from harness_ros.harness.guidance.common import call_of
from harness_ros.harness.guidance.contracts import GuidancePoint, Hold, TaskView

__all__ = ["HeldByExperience"]


@dataclass(frozen=True)
class HeldByExperience:
    """The step the tool's ledger says to take before its first call in a task, bound to the
    call's values, when the robot calls just before it were not that step.

    Each call is held once: made again as it was, it runs (the lesson may not fit this
    task). In run H the 1.5B had "Before a pick_object, first navigate_to with target = the
    object_id you will give pick_object" as its last words, drove to the surface, and picked
    from there; out of reach, in 5 of the 6 tasks it succeeded (BENCHMARKS.md section 9). At
    the call, the values are known: "target = "red_cup"", as in the failure note it follows."""

    name: str = "held_by_experience"
    point: GuidancePoint = GuidancePoint.BEFORE_CALL
    small_models_only: bool = True

    def run(self, view: TaskView) -> Hold | None:
        call = view.call
        if view.ledger is None or call is None or call.arguments is None or not view.physical(call.name):
            return None
        if view.check(call) is not None:
            return None  # a malformed call gets its own answer
        physical = view.robot_steps()
        if any(step.tool == call.name for step in physical):
            return None  # not its first call: after a failure the failure note takes over
        if view.was_held(call.name, call.arguments):
            return None
        steps = view.steps_ahead(call.name)
        bound = [found for found in steps if found.bound(call.arguments)]
        if not bound or any(found.taken(physical, call.arguments) for found in bound):
            return None
        calls = bound[0].calls_for(call.arguments)
        answer = (
            f"not run (the robot did nothing): your experience with {call.name} says to call "
            f"{', then '.join(calls)} first, then {call_of(call.name, call.arguments)} again; "
            "made again as it is, the call runs"
        )
        return Hold(
            self.name, answer, call.name, dict(call.arguments), step=bound[0], steps_before=len(view.steps)
        )
