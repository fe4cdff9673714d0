"""``before_call``: a repeat of the last robot call, while a held call waits for its step."""

from __future__ import annotations

from dataclasses import dataclass

from harness_ros.harness.guidance.common import call_of
from harness_ros.harness.guidance.contracts import GuidancePoint, Hold, TaskView

__all__ = ["HeldRepeat"]


@dataclass(frozen=True)
class HeldRepeat:
    """The answer to a robot call that repeats the last one that ran, made while a held call
    waits for the step its ledger gives, once per call.

    Eval run M, episode 1 (memory on): the pick was held with `navigate_to {"target":
    "red_cup", "standoff_m": 0} first`; the 1.5B drove to kitchen_counter again, where the
    robot already was, and the pick from there failed (not visible). Made again as it is,
    the call runs."""

    name: str = "held_repeat"
    point: GuidancePoint = GuidancePoint.BEFORE_CALL
    small_models_only: bool = True

    def run(self, view: TaskView) -> Hold | None:
        hold, call = view.last_hold, view.call
        if hold is None or hold.step is None or call is None or call.arguments is None:
            return None
        if not view.physical(call.name):
            return None
        if any(s.tool == hold.tool and not s.refused for s in view.steps[hold.steps_before + 1 :]):
            return None  # the held tool ran: the hold is over
        physical = view.robot_steps()
        last = physical[-1] if physical else None
        if last is None or last.failed or hold.step.taken(physical, hold.arguments):
            return None
        if (last.tool, dict(last.arguments)) != (call.name, dict(call.arguments)):
            return None
        if view.was_held(call.name, call.arguments):
            return None
        answer = (
            f"not run (the robot did nothing): {call_of(call.name, call.arguments)} is the call that "
            f"ran last, and it succeeded; your experience with {hold.tool} says to call "
            f"{', then '.join(hold.step.calls_for(hold.arguments))} first, then "
            f"{call_of(hold.tool, hold.arguments)}; made again as it is, the call runs"
        )
        return Hold(self.name, answer, call.name, dict(call.arguments), steps_before=len(view.steps))
