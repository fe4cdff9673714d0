"""``before_finish``: a ``finish_task`` that gives up right after a robot call is held once."""

from __future__ import annotations

from dataclasses import dataclass

from harness_ros.harness.guidance.common import call_text
from harness_ros.harness.guidance.contracts import GuidancePoint, Hold, TaskView
from harness_ros.tools.finish_task import FINISH_TASK
from harness_ros.trajectory.contracts import note_outcome

__all__ = ["HeldFinish"]


@dataclass(frozen=True)
class HeldFinish:
    """The answer to a ``finish_task`` that gives up right after a robot call was refused for
    its arguments or succeeded, once a task. Called again, ``finish_task`` ends the task.

    Eval run M (the 1.5B, both arms, episode 0): after the pick it called place_object
    with the pick's ``held_object_id``, was answered with the call without it, and ended
    the task as failed ("The object was too far away"): the robot had done nothing, and
    the task was one place away from done. Run N, the same episode: after that refusal
    it drove to the kitchen table, then ended the task as failed with the cup in the
    gripper there, giving the pick's earlier "object out of reach" as the reason.

    A success claimed right after a robot call refused for its arguments is held too:
    eval run R, episode 1, the 1.5B made the same place with the pick's
    ``held_object_id`` twice, then ended the task as succeeded with the cup still in the
    gripper (the harness's goal check said failed; the robot had never placed it)."""

    name: str = "held_finish"
    point: GuidancePoint = GuidancePoint.BEFORE_FINISH
    small_models_only: bool = True

    def run(self, view: TaskView) -> Hold | None:
        call = view.call
        if call is None or call.arguments is None or view.finish_was_held():
            return None
        last = view.steps[-1] if view.steps else None
        claim = call.arguments.get("outcome")
        if claim not in ("failed", "succeeded") or last is None or not view.physical(last.tool):
            return None
        if last.refusal == "invalid_arguments":
            why = last.result.reason or "no reason given"
            did = "nothing failed" if claim == "failed" else f"{last.tool} was not done"
            answer = (
                f"your last call, {last.tool}, was refused for its arguments before it ran, so the "
                f"robot did nothing and {did} ({why}). Make the call with valid arguments"
            )
        elif claim == "failed" and not last.refused and not last.failed:
            answer = (
                f"your last call, {call_text(last)}, {note_outcome(last.result)}, so nothing "
                "failed just now. If the task is not done, make its next call"
            )
        else:
            return None
        text = f"not ended: {answer}; call {FINISH_TASK} again to end the task anyway"
        arguments = dict(call.arguments)
        return Hold(
            self.name, text, call.name, arguments, refusal="held_finish", steps_before=len(view.steps)
        )
